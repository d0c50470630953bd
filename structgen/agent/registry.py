"""``ToolRegistry``: a named set of tools (and the Python functions that implement them) for an agent.

    registry = ToolRegistry([get_weather_fn, SendEmail, openai_tool_dict])
    registry["get_weather"]           # the Tool
    registry.functions                # {"get_weather": get_weather_fn} — tools built from functions
    registry.openai()                 # the OpenAI ``tools`` list
    registry.with_functions({"send_email": impl})   # attach implementations to tools defined elsewhere

Everything ``as_tools`` accepts can be registered; a registry is itself accepted wherever tools are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..errors import SpecError
from .tools import Tool, as_tools

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """An ordered, name-unique collection of :class:`Tool` with optional implementations."""

    def __init__(self, tools: Any = (), functions: Mapping[str, Callable] | None = None):
        if isinstance(tools, ToolRegistry):
            functions = {**tools._functions, **(functions or {})}
        items = list(as_tools(tools)) if _non_empty(tools) else []
        self._tools: dict[str, Tool] = {t.name: t for t in items}
        self._functions: dict[str, Callable] = {t.name: t.function for t in items if t.function is not None}
        for name, fn in (functions or {}).items():
            self._attach(name, fn)

    def _attach(self, name: str, fn: Callable) -> None:
        if name not in self._tools:
            raise SpecError(f"no tool named {name!r} to attach a function to; known: {', '.join(self._tools)}")
        if not callable(fn):
            raise SpecError(f"the implementation of {name!r} must be callable, got {type(fn).__name__}")
        self._functions[name] = fn

    def add(self, tool: Any) -> Tool:
        """Register one more tool (anything ``as_tools`` accepts for a single tool); returns it."""
        (t,) = as_tools([tool])
        if t.name in self._tools:
            raise SpecError(f"a tool named {t.name!r} is already registered; tool names must be unique")
        self._tools[t.name] = t
        if t.function is not None:
            self._functions[t.name] = t.function
        return t

    def with_functions(self, functions: Mapping[str, Callable]) -> ToolRegistry:
        """A copy of this registry with ``functions`` attached to the tools of those names."""
        out = ToolRegistry(list(self._tools.values()) or (), dict(self._functions))
        for name, fn in functions.items():
            out._attach(name, fn)
        return out

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    @property
    def functions(self) -> dict[str, Callable]:
        """Implementations by tool name (only the tools that have one)."""
        return dict(self._functions)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise SpecError(f"no tool named {name!r}; known: {', '.join(self._tools) or '(none)'}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __structgen_tools__(self) -> tuple[Tool, ...]:
        if not self._tools:
            raise SpecError("the tool registry is empty; register at least one tool")
        return self.tools

    def openai(self) -> list[dict]:
        """The OpenAI ``tools`` list of the registered tools."""
        return [t.openai() for t in self._tools.values()]

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)!r})"


def _non_empty(tools: Any) -> bool:
    if isinstance(tools, ToolRegistry):
        return len(tools) > 0
    if isinstance(tools, (list, tuple)):
        return len(tools) > 0
    return tools is not None
