"""``TurnSpec``: the constraint for one assistant turn of an agent — which shapes of answer are legal.

OpenAI's ``tool_choice`` and ``parallel_tool_calls`` decide the shapes; the spec's language is exactly
those shapes, so a tool name that is not offered, a missing required argument or an extra one cannot be
written at all (valid by construction; the arguments are still validated after generation).

The canonical text the model writes (a JSON Schema ``anyOf``, so the automaton engine holds it: exact and
order-free, which a Lark grammar on the grammar engine would not be):

=================================  =========================================================================
shape                              text
=================================  =========================================================================
one call                           ``{"name": "get_weather", "arguments": {"city": "Oslo"}}`` — exactly
                                   ``ToolCallSpec``'s output, which the embedded model is trained on
several calls (parallel)           ``[{"name": ..., "arguments": {...}}, {"name": ..., ...}]`` — two or more;
                                   a single call is always written in the one-call form, so every set of
                                   calls has one shape
plain text (``auto``, ``none``)    ``{"content": "Hello!"}`` — a JSON string, so the whole turn stays one
                                   regular language, and a reply can never be mistaken for a call (the first
                                   key decides) nor smuggle one (a call inside is only string content)
=================================  =========================================================================

``tool_choice``: ``"auto"`` (calls or text), ``"required"`` (calls only), ``"none"`` (text only), or a named
function ``{"type": "function", "function": {"name": ...}}`` (calls of that tool only). With no tools,
``"auto"`` and ``"none"`` mean text only. ``parse(text)`` returns ``(calls, content)``, validated;
``split(text)`` only reads the shape (the commit boundary validates each call on its own).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import GenerationError, SpecError
from ..prompting import TOOLS_SYSTEM, _as_messages, _bad_prompt, _with_system, tools_block
from ..spec import JsonSchema
from .tools import Tool, ToolCall, as_tools, call_schema

__all__ = ["TurnSpec", "normalize_tool_choice", "normalize_messages", "CONTENT_SCHEMA"]

CONTENT_SCHEMA = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"],
                  "additionalProperties": False}
CONTENT_SYSTEM = 'Answer with JSON {"content": "<your reply>"}.'
CONTENT_HINT = 'When no tool fits, answer with JSON {"content": "<your reply>"} instead.'
PARALLEL_HINT = 'For several calls, answer with a JSON array of calls [{"name": ..., "arguments": {...}}, ...].'
CHOICES = ("auto", "required", "none")


def normalize_tool_choice(tool_choice: Any, names: list[str]) -> str | dict:
    """``"auto"``, ``"required"``, ``"none"`` or ``{"name": <tool>}`` from what OpenAI clients send;
    ``SpecError`` naming the accepted forms otherwise."""
    if tool_choice is None:
        return "auto"
    if isinstance(tool_choice, str):
        if tool_choice in CHOICES:
            return tool_choice
        raise SpecError(f"tool_choice {tool_choice!r} is not valid; use 'auto', 'required', 'none' or "
                        "{'type': 'function', 'function': {'name': ...}}")
    if isinstance(tool_choice, dict) and tool_choice.get("type", "function") == "function":
        fn = tool_choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else tool_choice.get("name")
        if isinstance(name, str):
            if name not in names:
                raise SpecError(f"tool_choice names the function {name!r}, which is not among the tools "
                                f"({', '.join(names) or 'none given'}); pass it in tools or choose another")
            return {"name": name}
    raise SpecError("tool_choice must be 'auto', 'required', 'none' or {'type': 'function', 'function': "
                    f"{{'name': ...}}}}, got {tool_choice!r:.120}")


class TurnSpec(JsonSchema):
    """The legal answers of one turn (see the module docstring).

    ``TurnSpec(tools, tool_choice="auto", parallel_tool_calls=False)``; ``tools`` may be empty or None for
    a text-only turn. Attributes: ``tools`` (the tools offered), ``callable_tools`` (those a call may name),
    ``tool_choice`` (normalised), ``parallel_tool_calls``, ``allows_calls``, ``allows_content``."""

    #: what ``ground=True`` leaves free: the text reply is the model's own words (``structgen.grounding``)
    ground_exempt = (CONTENT_SCHEMA,)

    def __init__(self, tools: Any = None, tool_choice: Any = "auto", parallel_tool_calls: bool = False, *,
                 max_calls: int | None = None, in_prompt: bool = True):
        offered: tuple[Tool, ...] = as_tools(tools) if _has_tools(tools) else ()
        choice = normalize_tool_choice(tool_choice, [t.name for t in offered])
        if choice == "required" and not offered:
            raise SpecError("tool_choice 'required' needs at least one tool; pass tools or use 'auto'")
        if max_calls is not None and (not isinstance(max_calls, int) or max_calls < 1):
            raise SpecError(f"max_calls must be a positive integer or None, got {max_calls!r}")
        if isinstance(choice, dict):
            callable_tools = tuple(t for t in offered if t.name == choice["name"])
        else:
            callable_tools = offered if choice != "none" else ()
        allows_content = choice in ("auto", "none")
        parallel = bool(parallel_tool_calls) and bool(callable_tools) and max_calls != 1
        alternatives: list[dict] = []
        defs: dict = {}
        if callable_tools:
            one = call_schema(callable_tools)
            defs = one.pop("$defs", {})
            alternatives += one["anyOf"]
            if parallel:
                many: dict = {"type": "array", "items": {"anyOf": one["anyOf"]}, "minItems": 2}
                if max_calls is not None:
                    many["maxItems"] = max_calls
                alternatives.append(many)
        if allows_content:
            alternatives.append(CONTENT_SCHEMA)
        schema: dict = {"anyOf": alternatives}
        if defs:
            schema["$defs"] = defs
        JsonSchema.__init__(self, schema, in_prompt=in_prompt)
        set_ = object.__setattr__
        set_(self, "tools", offered)
        set_(self, "callable_tools", callable_tools)
        set_(self, "tool_choice", choice)
        set_(self, "parallel_tool_calls", parallel)
        set_(self, "allows_calls", bool(callable_tools))
        set_(self, "allows_content", allows_content)
        set_(self, "max_calls", max_calls)
        set_(self, "_block", tools_block(callable_tools) if callable_tools else "")

    def __setattr__(self, name, value):
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}: specs are immutable")

    def __structgen_tools__(self) -> tuple[Tool, ...]:
        if not self.tools:
            raise SpecError("this turn offers no tools")
        return self.tools

    # -- prompt ------------------------------------------------------------------------------------------
    def render_prompt(self, prompt):
        """The prompt with the callable tools listed (the trained ``### Tools`` format) and, for shapes
        other than one call, a line saying how to write them; a text-only turn asks for ``{"content"}``."""
        if not self.in_prompt:
            return prompt
        hints = [h for h, on in ((PARALLEL_HINT, self.parallel_tool_calls), (CONTENT_HINT, self.allows_content))
                 if on]
        if isinstance(prompt, str):
            if not self.allows_calls:
                return f"{CONTENT_SYSTEM}\n### Request\n{prompt.strip()}\n### Reply\n"
            head = "".join(h + "\n" for h in hints)
            return f"{head}{self._block}\n### Request\n{prompt.strip()}\n### Call\n"
        messages = _as_messages(prompt)
        if messages is None:
            raise _bad_prompt(prompt)
        messages = normalize_messages(messages)
        if not self.allows_calls:
            return _with_system(messages, CONTENT_SYSTEM)
        system = " ".join([TOOLS_SYSTEM, *hints])
        return _with_system(messages, f"{system}\n\n{self._block}")

    # -- reading the output ------------------------------------------------------------------------------
    def split(self, text: str) -> tuple[list[dict], str | None]:
        """The shape of ``text``: ``([{"name", "arguments"}, ...], None)`` for calls, ``([], content)`` for
        text. Only the envelope is checked (``GenerationError`` when it is not one of this turn's shapes);
        the arguments are not validated here."""
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise GenerationError(f"the turn is not complete JSON: {e.msg} at character {e.pos}", text=text,
                                  errors=[e.msg]) from None
        if isinstance(obj, dict) and set(obj) == {"content"} and isinstance(obj["content"], str):
            if not self.allows_content:
                raise GenerationError(f"this turn (tool_choice={self.tool_choice!r}) must call a tool, "
                                      "not answer with text", text=text, errors=["text not allowed"])
            return [], obj["content"]
        if isinstance(obj, dict):
            raw = [obj]
        elif isinstance(obj, list) and self.parallel_tool_calls and len(obj) >= 2:
            raw = obj
        else:
            raise GenerationError("the turn is neither a call, a list of calls nor {\"content\": ...}", text=text,
                                  errors=["not a turn shape"])
        if not self.allows_calls:
            raise GenerationError("this turn (tool_choice='none') must answer with text", text=text,
                                  errors=["calls not allowed"])
        if self.max_calls is not None and len(raw) > self.max_calls:
            raise GenerationError(f"{len(raw)} calls, more than max_calls={self.max_calls}", text=text,
                                  errors=["too many calls"])
        for c in raw:
            if not isinstance(c, dict) or set(c) != {"name", "arguments"}:
                raise GenerationError('a tool call is {"name": <tool name>, "arguments": {...}} and nothing '
                                      "else", text=text, errors=["not a call object"])
        return raw, None

    def parse(self, text: str, result: Any = None) -> tuple[list[ToolCall], str | None]:
        """``(calls, content)`` of ``text``, every call validated against its tool (``GenerationError``
        naming the problems otherwise)."""
        raw, content = self.split(text)
        return [ToolCall.parse(c, self.callable_tools, result) for c in raw], content

    def __repr__(self) -> str:
        return (f"TurnSpec({[t.name for t in self.callable_tools]!r}, tool_choice={self.tool_choice!r}, "
                f"parallel_tool_calls={self.parallel_tool_calls})")


def _has_tools(tools: Any) -> bool:
    if tools is None:
        return False
    if isinstance(tools, (list, tuple)):
        return len(tools) > 0
    if hasattr(tools, "__len__") and hasattr(tools, "__structgen_tools__"):
        return len(tools) > 0
    return True


def normalize_messages(messages: list[dict]) -> list[dict]:
    """OpenAI chat messages as the ``{"role", "content"}`` text messages the model reads: an assistant turn
    that called tools shows its calls in the canonical text, ``tool`` results their content, ``developer``
    is a system message. Content parts are kept (the model joins the text parts)."""
    out = []
    for m in messages:
        role = m.get("role")
        content = m.get("content")
        if role == "developer":
            role = "system"
        elif role == "function":
            role = "tool"
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = tc.get("function", {}) if isinstance(tc, dict) else {}
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except json.JSONDecodeError:
                        pass
                calls.append({"name": fn.get("name"), "arguments": args})
            shown = calls[0] if len(calls) == 1 else calls
            content = json.dumps(shown, ensure_ascii=False)
        out.append({"role": role, "content": "" if content is None else content})
    return out
