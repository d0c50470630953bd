"""structgen.agent: tools a model may call and the checked calls it produces (the commit boundary's input).

``Tool``, ``ToolCall``, ``ToolCallSpec``, ``as_tools`` and ``load_tools`` live in :mod:`.tools`;
``Generator.tool_call(prompt, tools)`` generates one validated call.
"""

from .tools import Tool, ToolCall, ToolCallSpec, as_tools, call_schema, load_tools, tool_call_spec

__all__ = ["Tool", "ToolCall", "ToolCallSpec", "as_tools", "call_schema", "load_tools", "tool_call_spec"]
