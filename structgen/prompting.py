"""How a JSON Schema and a set of tools are shown to the model in its prompt (one format, defined here).

:func:`compact_schema` renders a schema as short, readable text the model can follow, e.g.::

    {"city": string (1-40 chars), "unit": "celsius"|"fahrenheit" = "celsius", "days": integer 1-14 = 1}

Rules: objects list their properties in schema order as ``"key": TYPE``; ``= DEFAULT`` marks a property
with a default, ``"key"?:`` an optional one without a default (required ones carry no mark); enums and
consts are JSON literals joined by ``|`` (as are ``anyOf``/``oneOf`` alternatives, ``X|null`` for
``Optional``); strings with a known format are the format's name (``date``, ``date-time``, ``time``,
``email``, ``uri``, ``uuid``, ...), other strings are ``string`` with ``/pattern/`` and ``(1-40 chars)``;
numbers carry ranges (``integer 1-14``, ``number >0``, ``integer >=1``); arrays are ``[ITEM]`` with
``(<=8 items)``; maps are ``{string: VALUE}``; local ``$ref``s (pydantic's ``$defs``) are expanded, a
recursive one is shown by its definition's name. The text is cut with ``…`` past :data:`MAX_CHARS`, and
rendering stops there, so a 100 KB schema costs no more than a small one.

The prompt formats (also used to build training data, so change them only together with it). A text
prompt becomes::

    ### Schema                               ### Tools
    <compact schema>                         <one line per tool, see tools_block>
    ### Input                                ### Request
    <the prompt>                             <the prompt>
    ### JSON                                 ### Call

and the canvas continues on the next line. Chat messages get the block (with a one-line instruction,
:data:`JSON_SYSTEM` / :data:`TOOLS_SYSTEM`, and without the request) in their system message, after its
content, or in a new system message put first — as ``structgen.sql.spec.sql_prompt`` does.

A tool line is ``name(arg: TYPE = DEFAULT, opt?: TYPE, ...) — description [side effects|destructive]``, in
a terser notation than a schema: no string patterns or lengths and no array sizes (``string``, ``[email]``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .errors import SpecError

__all__ = ["compact_schema", "json_prompt", "schema_block", "tool_signature", "tools_block", "tools_prompt",
           "JSON_SYSTEM", "TOOLS_SYSTEM", "MAX_CHARS"]

MAX_CHARS = 1500  #: longest compact schema (and tool line parameters), in characters
MAX_TOOLS_CHARS = 6000  #: longest tools block
ELLIPSIS = "…"
JSON_SYSTEM = "Answer with one JSON value that matches this schema."
TOOLS_SYSTEM = ('Answer with one call of one of these tools as JSON {"name": ..., "arguments": {...}}; '
                "leave out arguments the request does not state.")

_FORMATS = {"date", "date-time", "time", "duration", "email", "idn-email", "hostname", "ipv4", "ipv6", "uri",
            "uri-reference", "iri", "uuid"}


class _Full(Exception):
    """The rendering reached its length limit."""


class _Writer:
    """Collects the rendering and stops it (``_Full``) once it is longer than ``limit``."""

    def __init__(self, root: Any, limit: int, terse: bool = False):
        self.root, self.limit, self.parts, self.n, self.terse = root, limit, [], 0, terse
        self.refs: list[str] = []

    def put(self, s: str) -> None:
        self.parts.append(s)
        self.n += len(s)
        if self.n > self.limit:
            raise _Full

    def text(self, full: bool) -> str:
        s = "".join(self.parts)
        return s[: self.limit - 1].rstrip() + ELLIPSIS if full else s


def _lit(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def _resolve(ref: str, root: Any) -> Any:
    """The target of a local ``$ref`` (``#/$defs/X``, any JSON pointer), or None when it cannot be found."""
    from .constraints.json_regex import AutomatonUnsupported, resolve_ref

    try:
        return resolve_ref(ref, root)
    except AutomatonUnsupported:
        return None


def _range(s: dict, unit: str = "") -> str:
    """``1-14``, ``>=1``, ``>0``, ``<=8``, ``<5`` from the schema's bounds, with an optional unit."""
    lo, hi = s.get("minimum"), s.get("maximum")
    xlo, xhi = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    if isinstance(xlo, bool) or isinstance(xhi, bool):  # draft 4 booleans
        xlo, lo = (lo if xlo is True else None), (None if xlo is True else lo)
        xhi, hi = (hi if xhi is True else None), (None if xhi is True else hi)
    if lo is not None and hi is not None:
        out = f"{_num(lo)}-{_num(hi)}"
    else:
        bits = [f">={_num(lo)}" if lo is not None else "", f">{_num(xlo)}" if xlo is not None else "",
                f"<={_num(hi)}" if hi is not None else "", f"<{_num(xhi)}" if xhi is not None else ""]
        out = " ".join(b for b in bits if b)
    return f"{out}{unit}" if out else ""


def _num(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _count(s: dict, lo_key: str, hi_key: str, unit: str) -> str:
    lo, hi = s.get(lo_key) or None, s.get(hi_key)
    if lo is not None and hi is not None:
        return f"({lo} {unit})" if lo == hi else f"({lo}-{hi} {unit})"
    if hi is not None:
        return f"(<={hi} {unit})"
    if lo:
        return f"(>={lo} {unit})"
    return ""


def _types(s: dict) -> list[str]:
    t = s.get("type")
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    if isinstance(t, str):
        return [t]
    if "properties" in s or "additionalProperties" in s:
        return ["object"]
    if "items" in s or "prefixItems" in s:
        return ["array"]
    return []


def _render(w: _Writer, s: Any) -> None:
    """Write the compact form of schema ``s``."""
    if s is True or s == {}:
        return w.put("any")
    if s is False:
        return w.put("never")
    if not isinstance(s, dict):
        return w.put("any")
    ref = s.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1] or "schema"
        target = _resolve(ref, w.root)
        if target is None or ref in w.refs:
            return w.put(name)
        w.refs.append(ref)
        try:
            rest = {k: v for k, v in s.items() if k not in ("$ref", "$defs", "definitions")}
            _render(w, {**target, **rest} if isinstance(target, dict) else target)
        finally:
            w.refs.pop()
        return None
    if "const" in s:
        return w.put(_lit(s["const"]))
    if isinstance(s.get("enum"), list) and s["enum"]:
        return w.put("|".join(_lit(v) for v in s["enum"]))
    for key in ("anyOf", "oneOf"):
        alts = s.get(key)
        if isinstance(alts, list) and alts:
            base = {k: v for k, v in s.items() if k not in (key, "default", "title", "description")}
            for i, alt in enumerate(alts):
                if i:
                    w.put("|")
                _render(w, {**base, **alt} if base and isinstance(alt, dict) else alt)
            return None
    all_of = s.get("allOf")
    if isinstance(all_of, list) and all_of:
        merged = {k: v for k, v in s.items() if k != "allOf"}
        if all(isinstance(p, dict) for p in all_of):
            keys = [k for p in all_of for k in p] + list(merged)
            if len(keys) == len(set(keys)):  # disjoint parts: one schema
                for p in all_of:
                    merged.update(p)
                return _render(w, merged)
        for i, part in enumerate(all_of):
            if i:
                w.put(" & ")
            _render(w, part)
        return None
    types = _types(s)
    if not types:
        return w.put("any")
    for i, t in enumerate(types):
        if i:
            w.put("|")
        _render_type(w, t, s)
    return None


def _render_type(w: _Writer, t: str, s: dict) -> None:
    if t == "string":
        fmt = s.get("format")
        if fmt in _FORMATS:
            return w.put(fmt)
        if w.terse:
            return w.put("string")
        head = f"string ({fmt})" if isinstance(fmt, str) else "string"
        pat = s.get("pattern")
        bits = [head, f"/{pat}/" if isinstance(pat, str) else "", _count(s, "minLength", "maxLength", "chars")]
        return w.put(" ".join(b for b in bits if b))
    if t in ("integer", "number"):
        bits = [t, _range(s)]
        if s.get("multipleOf") is not None:
            bits.append(f"(multiple of {_num(s['multipleOf'])})")
        return w.put(" ".join(b for b in bits if b))
    if t == "array":
        return _render_array(w, s)
    if t == "object":
        return _render_object(w, s)
    return w.put(t)  # boolean, null


def _render_array(w: _Writer, s: dict) -> None:
    prefix = s.get("prefixItems")
    w.put("[")
    if isinstance(prefix, list) and prefix:
        for i, item in enumerate(prefix):
            if i:
                w.put(", ")
            _render(w, item)
        if s.get("items") not in (None, False):
            w.put(", ")
            _render(w, s["items"])
            w.put(", ...")
    else:
        _render(w, s.get("items", True))
    w.put("]")
    if w.terse:
        return
    count = _count(s, "minItems", "maxItems", "items")
    if count:
        w.put(" " + count)
    if s.get("uniqueItems"):
        w.put(" (unique)")


def _render_object(w: _Writer, s: dict) -> None:
    props = s.get("properties")
    extra = s.get("additionalProperties")
    if not isinstance(props, dict) or not props:
        if isinstance(extra, dict):
            w.put("{string: ")
            _render(w, extra)
            return w.put("}")
        return w.put("{}" if extra is False else "object")
    w.put("{")
    _render_members(w, s, quote=True)
    if isinstance(extra, dict) and extra:
        w.put(", string: ")
        _render(w, extra)
    w.put("}")


def _render_members(w: _Writer, s: dict, *, quote: bool) -> None:
    """``"key": TYPE = DEFAULT`` (or ``key: ...`` for a tool signature) for every property."""
    required = set(s.get("required") or ())
    for i, (name, sub) in enumerate((s.get("properties") or {}).items()):
        if i:
            w.put(", ")
        key = _lit(name) if quote else name
        has_default = isinstance(sub, dict) and "default" in sub
        w.put(f"{key}{'' if name in required or has_default else '?'}: ")
        _render(w, sub)
        if has_default:
            w.put(" = " + _lit(sub["default"]))


def compact_schema(schema: Any, limit: int = MAX_CHARS) -> str:
    """A short, readable rendering of ``schema`` (a dict or bool) for a model prompt, at most ``limit``
    characters (cut with ``…``); see the module docstring for the notation."""
    w = _Writer(schema, limit)
    try:
        _render(w, schema)
    except _Full:
        return w.text(True)
    except RecursionError:  # a pathologically deep schema: show what was written
        return w.text(True)
    return w.text(False)


def _as_messages(prompt: Any) -> list[dict] | None:
    if isinstance(prompt, (list, tuple)) and all(isinstance(m, dict) for m in prompt):
        return [dict(m) for m in prompt]
    return None


def _with_system(messages: list[dict], block: str) -> list[dict]:
    """``block`` appended to the first system message, or a new system message put first."""
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        messages[0]["content"] = f"{messages[0]['content'].rstrip()}\n\n{block}"
    else:
        messages.insert(0, {"role": "system", "content": block})
    return messages


def _bad_prompt(prompt: Any) -> SpecError:
    return SpecError(f"a prompt is a string or a list of {{'role', 'content'}} messages, got {type(prompt).__name__}")


def schema_block(schema: Any) -> str:
    """The schema as the model sees it: ``### Schema`` and the compact rendering."""
    return f"### Schema\n{compact_schema(schema)}"


def json_prompt(schema: Any, prompt: Any, *, compact: str | None = None) -> Any:
    """``prompt`` (text or chat messages) with the schema added; see the module docstring.
    ``compact`` is an already computed ``compact_schema(schema)``."""
    block = f"### Schema\n{compact if compact is not None else compact_schema(schema)}"
    if isinstance(prompt, str):
        return f"{block}\n### Input\n{prompt.strip()}\n### JSON\n"
    messages = _as_messages(prompt)
    if messages is None:
        raise _bad_prompt(prompt)
    return _with_system(messages, f"{JSON_SYSTEM}\n\n{block}")


def _one_line(text: str, limit: int = 200) -> str:
    """The first paragraph of ``text`` on one line, at most ``limit`` characters."""
    para = (text or "").strip().split("\n\n", 1)[0]
    line = " ".join(para.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + ELLIPSIS


def tool_signature(name: str, schema: dict, description: str = "", *, side_effects: bool = False,
                   destructive: bool = False, limit: int = MAX_CHARS) -> str:
    """One tool line: ``name(arg: TYPE = DEFAULT, ...) — description [side effects|destructive]``, in the
    terse notation: strings and arrays without patterns or length limits (the constraint enforces those;
    in the prompt they cost many tokens and tell the model little)."""
    w = _Writer(schema, limit, terse=True)
    full = False
    try:
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            _render_members(w, schema, quote=False)
        elif schema not in ({}, True, None) and not (isinstance(schema, dict) and _types(schema) == ["object"]):
            _render(w, schema)
    except (_Full, RecursionError):
        full = True
    line = f"{name}({w.text(full)})"
    desc = _one_line(description)
    if desc:
        line += f" — {desc}"
    if destructive:
        line += " [destructive]"
    elif side_effects:
        line += " [side effects]"
    return line


def tools_block(tools: Iterable[Any]) -> str:
    """``### Tools`` and one line per tool (``Tool`` objects, or anything ``as_tools`` takes), cut with a
    count of the tools left out past :data:`MAX_TOOLS_CHARS`."""
    from .agent.tools import as_tools

    tools = as_tools(tools)
    lines: list[str] = []
    n = 0
    for i, t in enumerate(tools):
        line = t.signature()
        if lines and n + len(line) > MAX_TOOLS_CHARS:
            lines.append(f"{ELLIPSIS} ({len(tools) - i} more tools)")
            break
        lines.append(line)
        n += len(line) + 1
    return "### Tools\n" + "\n".join(lines)


def tools_prompt(tools: Iterable[Any], prompt: Any, *, block: str | None = None) -> Any:
    """``prompt`` (text or chat messages) with the tools added; see the module docstring. ``block`` is an
    already computed ``tools_block(tools)``."""
    block = block if block is not None else tools_block(tools)
    if isinstance(prompt, str):
        return f"{block}\n### Request\n{prompt.strip()}\n### Call\n"
    messages = _as_messages(prompt)
    if messages is None:
        raise _bad_prompt(prompt)
    return _with_system(messages, f"{TOOLS_SYSTEM}\n\n{block}")
