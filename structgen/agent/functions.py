"""Plain Python functions as tools: the signature becomes the arguments schema, the docstring the description.

    @tool(side_effects=True)
    def send_note(to: str, text: str, urgent: bool = False) -> str:
        '''Send a note to a colleague.

        Args:
            to: the colleague's user name.
            text: what the note says.
        '''

    as_tools([send_note])   # Tool("send_note", "Send a note to a colleague.", <pydantic model>, side_effects=True)

The arguments model is built with ``pydantic.create_model`` from the parameters (annotation and default
each; ``Annotated[..., Field(...)]`` constraints are kept), closed to extra members; parameter descriptions
come from a Google-style ``Args:`` section or Sphinx ``:param name:`` lines. ``*args``, ``**kwargs`` and
unannotated parameters are refused: the model could not be told what to write. The function itself is kept
on ``Tool.function`` so an :class:`~structgen.agent.executor.Executor` can run it.
"""

from __future__ import annotations

import inspect
import re
import typing
from typing import Any, Callable

from ..errors import SpecError

__all__ = ["tool", "function_tool", "docstring_parts"]

_FLAGS_ATTR = "__structgen_tool__"
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_OTHER_SECTION = re.compile(r"^\s*(Returns?|Raises|Yields?|Examples?|Notes?|See Also|Attributes)\s*:?\s*$")
_GOOGLE_ARG = re.compile(r"^\s*\*{0,2}(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_ARG = re.compile(r"^\s*:param\s+(?:[\w\[\], .|]+\s+)?(\w+)\s*:\s*(.*)$")


def tool(fn: Callable | None = None, *, name: str | None = None, description: str | None = None,
         side_effects: bool = False, destructive: bool = False):
    """Mark a function as a tool with flags (usable bare, ``@tool``, or with arguments, ``@tool(...)``).

    The function is returned unchanged apart from an attribute that :func:`function_tool` reads."""

    def mark(f: Callable) -> Callable:
        setattr(f, _FLAGS_ATTR, {"name": name, "description": description, "side_effects": side_effects,
                                 "destructive": destructive})
        return f

    return mark(fn) if fn is not None else mark


def docstring_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """``(description, {parameter: description})`` from a docstring: the text before the first section,
    and the entries of a Google-style ``Args:`` section or Sphinx ``:param x:`` lines."""
    lines = inspect.cleandoc(doc or "").splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    mode = "desc"
    arg_indent = 0  # the indentation of the entries in an Args: section
    for line in lines:
        m = _SPHINX_ARG.match(line)
        if m:
            mode, current = "sphinx", m.group(1)
            params[current] = m.group(2).strip()
            continue
        if _SECTION.match(line):
            mode, current = "args", None
            continue
        if _OTHER_SECTION.match(line) or line.strip().startswith(":"):
            mode, current = "other", None
            continue
        if mode == "desc":
            desc.append(line)
        elif mode == "args":
            m = _GOOGLE_ARG.match(line)
            indent = len(line) - len(line.lstrip())
            if m and (current is None or indent <= arg_indent):
                current, arg_indent = m.group(1), indent
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
        elif mode == "sphinx" and current and line.strip():
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(desc).strip(), {k: v for k, v in params.items() if v}


def function_tool(fn: Callable, *, name: str | None = None, description: str | None = None,
                  side_effects: bool | None = None, destructive: bool | None = None):
    """A :class:`~structgen.agent.tools.Tool` for a plain function (see the module docstring). Explicit
    keyword arguments win over ``@tool(...)`` flags, which win over the function's own name and docstring."""
    from pydantic import ConfigDict, Field, create_model

    from .tools import Tool

    if not callable(fn):
        raise SpecError(f"cannot make a tool of {type(fn).__name__}: pass a function")
    flags = dict(getattr(fn, _FLAGS_ATTR, None) or {})
    tool_name = name or flags.get("name") or getattr(fn, "__name__", None)
    if not isinstance(tool_name, str) or tool_name == "<lambda>":
        raise SpecError("a lambda or callable object has no usable name; pass function_tool(fn, name='...')")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise SpecError(f"cannot read the signature of {tool_name!r}; wrap it in a plain def") from None
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as e:  # a forward reference that cannot be resolved
        raise SpecError(f"cannot resolve the type hints of {tool_name!r}: {e}") from None
    doc_desc, doc_params = docstring_parts(inspect.getdoc(fn))
    fields: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise SpecError(f"tool {tool_name!r}: *{p.name} / **{p.name} cannot be described to the model; "
                            "list the arguments explicitly")
        if p.kind is p.POSITIONAL_ONLY:
            raise SpecError(f"tool {tool_name!r}: positional-only parameter {p.name!r}; tools are called "
                            "with keyword arguments")
        if p.name not in hints:
            raise SpecError(f"tool {tool_name!r}: parameter {p.name!r} has no type annotation; annotate it "
                            "(e.g. 'city: str') so its schema can be written")
        default = ... if p.default is p.empty else p.default
        info = Field(default, description=doc_params[p.name]) if p.name in doc_params else default
        fields[p.name] = (hints[p.name], info)
    try:
        model = create_model(_model_name(tool_name), __config__=ConfigDict(extra="forbid"), **fields)
    except Exception as e:
        raise SpecError(f"tool {tool_name!r}: cannot build an arguments model: {str(e).splitlines()[0]}") from None
    model.__doc__ = None
    desc = description if description is not None else flags.get("description")
    if desc is None:
        desc = doc_desc
    se = side_effects if side_effects is not None else bool(flags.get("side_effects"))
    de = destructive if destructive is not None else bool(flags.get("destructive"))
    return Tool(tool_name, desc, model, side_effects=se, destructive=de, function=fn)


def _model_name(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[_-]+", name) if part) + "Args"
