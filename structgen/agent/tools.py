"""Agent tools: their argument schemas, the spec of "one call to one of these tools", and checked calls.

- :class:`Tool` ``(name, description, parameters, *, side_effects=False, destructive=False)``: ``parameters``
  is a pydantic model class or a JSON Schema dict of the arguments object. ``Tool.schema`` is that schema
  normalised for generation: local ``$ref``s inlined (a recursive definition stays under ``$defs``), the
  root object closed with ``additionalProperties: false`` when it says nothing about extra members (for
  pydantic models every object is closed and the automatic ``title``s are dropped; pydantic ignores extra
  members anyway). Properties with a default are not required, so arguments a request does not state are
  left out and the defaults apply. ``destructive`` implies ``side_effects``.
- :class:`ToolCall` ``(name, arguments)``: a call whose arguments validated against the tool's schema
  (formats asserted) and pydantic model; ``call.parsed`` is the model instance.
- :class:`ToolCallSpec` ``(tools)``: a ``JsonSchema`` of ``{"name": <const>, "arguments": {...}}`` as an
  ``anyOf`` over the tools (keys in that order), whose prompt lists the tools (``prompting.tools_block``).
- :func:`as_tools` accepts ``Tool``s, pydantic classes (name from a ``tool_name`` class attribute or the
  snake_case class name, description from the docstring), OpenAI ``{"type": "function", "function":
  {...}}`` dicts (or the bare ``{"name", "description", "parameters"}`` inside), JSON Schemas of the
  arguments object that carry their name as ``title``, and plain Python functions (signature and docstring,
  see :mod:`.functions`; the function is kept on ``Tool.function``); :func:`load_tools` reads ``TOOLS`` from
  a Python file or a JSON list of OpenAI tools. :func:`to_openai_tools` turns any of these into the OpenAI
  ``tools`` list.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import re
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable
from typing import Any

from ..errors import GenerationError, SpecError
from ..prompting import tool_signature, tools_block, tools_prompt
from ..spec import JsonSchema, _check_schema
from .schema_ops import close_objects, hoist_defs, inline_refs, strip_titles

__all__ = ["Tool", "ToolCall", "ToolCallSpec", "as_tools", "call_schema", "load_tools", "to_openai_tools",
           "tool_call_spec"]

NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, eq=False)
class Tool:
    """A tool a model may call: its name, what it does, and the JSON Schema of its arguments object."""

    name: str
    description: str
    parameters: Any
    side_effects: bool = field(default=False, kw_only=True)
    destructive: bool = field(default=False, kw_only=True)
    function: Any = field(default=None, kw_only=True, repr=False)  # the Python callable, for function tools
    schema: dict = field(init=False, repr=False)
    model: Any = field(init=False, default=None, repr=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not NAME_RE.fullmatch(self.name):
            raise SpecError(f"tool name {self.name!r} is not valid: use 1-64 letters, digits, '_' or '-' "
                            "(e.g. 'get_weather')")
        if not isinstance(self.description, str):
            raise SpecError(f"tool {self.name!r}: description must be a string, got "
                            f"{type(self.description).__name__}")
        params, model = self.parameters, None
        if isinstance(params, type) and hasattr(params, "model_json_schema"):
            model = params
            schema = _pydantic_schema(params)
        elif params is None:
            schema = {"type": "object", "properties": {}, "additionalProperties": False}
        elif isinstance(params, dict):
            schema = _dict_schema(params, self.name)
        else:
            raise SpecError(f"tool {self.name!r}: parameters must be a pydantic model class or a JSON Schema "
                            f"dict of the arguments object, got {type(params).__name__}")
        if schema.get("type") != "object":
            raise SpecError(f"tool {self.name!r}: the arguments must be a JSON object (type 'object' with "
                            f"'properties'), got type {schema.get('type')!r}")
        _check_schema(schema)
        set_ = object.__setattr__
        set_(self, "schema", schema)
        set_(self, "model", model)
        set_(self, "side_effects", bool(self.side_effects or self.destructive))
        set_(self, "destructive", bool(self.destructive))
        from jsonschema import Draft202012Validator

        set_(self, "_validator", Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER))

    def signature(self) -> str:
        """The tool's line in a prompt: ``name(arg: TYPE = DEFAULT, ...) — description [flags]``."""
        return tool_signature(self.name, self.schema, self.description, side_effects=self.side_effects,
                              destructive=self.destructive)

    def problems(self, arguments: Any) -> list[str]:
        """What is wrong with ``arguments`` (empty when they are valid): the schema, then the model."""
        if not isinstance(arguments, dict):
            return [f"arguments of {self.name} must be a JSON object, got {type(arguments).__name__}"]
        out = []
        for e in sorted(self._validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path]):
            where = "/".join(str(p) for p in e.absolute_path)
            out.append(f"{self.name}.{where}: {e.message}" if where else f"{self.name}: {e.message}")
        if not out and self.model is not None:
            from pydantic import ValidationError

            try:
                self.model.model_validate_json(json.dumps(arguments))
            except ValidationError as e:
                for err in e.errors():
                    where = ".".join(str(p) for p in err["loc"])
                    out.append(f"{self.name}.{where}: {err['msg']}" if where else f"{self.name}: {err['msg']}")
        return out

    def openai(self) -> dict:
        """The tool as an OpenAI ``{"type": "function", "function": {...}}`` dict."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.schema}}

    @property
    def digest(self) -> str:
        """Identifies the tool's content (name, description, flags, schema)."""
        blob = json.dumps([self.name, self.description, self.side_effects, self.destructive, self.schema],
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _pydantic_schema(model: type) -> dict:
    """The arguments schema of a pydantic model: refs inlined, titles dropped, every object closed."""
    try:
        schema = model.model_json_schema()
    except Exception as e:  # pydantic cannot write a schema for some field types (callables, ...)
        first = str(e).splitlines()[0]
        raise SpecError(f"pydantic model {model.__name__} has no JSON Schema: {first}; use JSON-compatible "
                        "field types") from None
    schema = strip_titles(inline_refs(schema))
    schema = close_objects(schema, everywhere=True)
    schema.pop("description", None)  # the docstring: it is the tool's description
    return schema


def _dict_schema(params: dict, name: str) -> dict:
    schema = {k: v for k, v in params.items() if k not in ("$schema", "$id")}
    types = schema.get("type")
    if types not in (None, "object") or not isinstance(schema.get("properties", {}), dict):
        raise SpecError(f"tool {name!r}: parameters must describe a JSON object (type 'object' with "
                        f"'properties'), got type {types!r}")
    schema = inline_refs(schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return close_objects(schema, everywhere=False)


def _snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def _from_model(cls: type) -> Tool:
    name = getattr(cls, "tool_name", None)
    if not isinstance(name, str):
        name = _snake(cls.__name__)
    doc = cls.__dict__.get("__doc__")
    return Tool(name, inspect.cleandoc(doc) if isinstance(doc, str) else "", cls)


def _from_openai(d: dict) -> Tool:
    if d.get("type") == "object" and isinstance(d.get("title"), str) and "name" not in d:
        # a JSON Schema of the arguments object named by its title
        schema = {k: v for k, v in d.items() if k not in ("title", "description")}
        return Tool(d["title"], d.get("description") or "", schema,
                    side_effects=bool(d.get("x-side-effects", False)),
                    destructive=bool(d.get("x-destructive", False)))
    fn = d.get("function") if d.get("type") == "function" else d
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise SpecError('an OpenAI tool is {"type": "function", "function": {"name", "description", '
                        f'"parameters"}}}}; got keys {sorted(d)}')
    desc = fn.get("description") or ""
    return Tool(fn["name"], desc, fn.get("parameters"), side_effects=bool(fn.get("x-side-effects", False)),
                destructive=bool(fn.get("x-destructive", False)))


def as_tools(obj: Any) -> tuple[Tool, ...]:
    """Tools from a ``Tool``, a pydantic model class, an OpenAI tool dict, a titled JSON Schema dict, a plain
    function, a ``ToolCallSpec``, a ``ToolRegistry``, or a list of these; names must be unique."""
    if isinstance(obj, ToolCallSpec):
        return obj.tools
    if hasattr(obj, "__structgen_tools__"):  # a ToolRegistry or a TurnSpec
        return obj.__structgen_tools__()
    items = [obj] if isinstance(obj, (Tool, dict, type)) or inspect.isroutine(obj) else obj
    try:
        items = list(items)
    except TypeError:
        raise SpecError(f"tools must be a list of Tool, pydantic model classes or OpenAI tool dicts, got "
                        f"{type(obj).__name__}") from None
    if not items:
        raise SpecError("no tools given; pass at least one Tool, pydantic model class or OpenAI tool dict")
    out: list[Tool] = []
    for item in items:
        if isinstance(item, Tool):
            out.append(item)
        elif isinstance(item, type) and hasattr(item, "model_json_schema"):
            out.append(_from_model(item))
        elif isinstance(item, dict):
            out.append(_from_openai(item))
        elif callable(item) and not isinstance(item, type):
            from .functions import function_tool

            out.append(function_tool(item))
        else:
            raise SpecError(f"cannot use {type(item).__name__} as a tool; pass a structgen Tool, a pydantic "
                            "model class, an OpenAI {'type': 'function', 'function': {...}} dict or a "
                            "function")
    seen: set[str] = set()
    for t in out:
        if t.name in seen:
            raise SpecError(f"two tools are named {t.name!r}; tool names must be unique")
        seen.add(t.name)
    return tuple(out)


def to_openai_tools(tools: Any) -> list[dict]:
    """Any accepted tool list (``Tool``s, pydantic classes, functions, OpenAI dicts, e.g. ``examples/tools.py``'s
    ``TOOLS``) as the OpenAI ``tools`` list: ``[{"type": "function", "function": {name, description,
    parameters}}, ...]`` with the normalised argument schemas."""
    return [t.openai() for t in as_tools(tools)]


def call_schema(tools: Iterable[Any]) -> dict:
    """The JSON Schema of one call: ``anyOf`` one ``{"name": const, "arguments": schema}`` per tool.
    Recursive definitions are hoisted to the root's ``$defs`` as ``<tool>__<name>``."""
    branches, defs = [], {}
    for t in as_tools(tools):
        args, own = hoist_defs(t.schema, f"{t.name}__")
        defs.update(own)
        branches.append({"type": "object",
                         "properties": {"name": {"const": t.name}, "arguments": args},
                         "required": ["name", "arguments"], "additionalProperties": False})
    schema: dict = {"anyOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


@dataclass(frozen=True)
class ToolCall:
    """A checked call of a tool: ``name`` and its ``arguments`` (a dict, defaults left out)."""

    name: str
    arguments: dict
    tool: Tool | None = field(default=None, compare=False, repr=False)
    result: Any = field(default=None, compare=False, repr=False)  # the generation Result, when generated

    __hash__ = None  # type: ignore[assignment]  # arguments is a dict

    @property
    def parsed(self) -> Any:
        """The arguments as the tool's pydantic model instance (defaults filled in); the dict when the tool
        has no model."""
        if self.tool is None or self.tool.model is None:
            return self.arguments
        return self.tool.model.model_validate_json(json.dumps(self.arguments))

    def to_dict(self) -> dict:
        return {"name": self.name, "arguments": self.arguments}

    def to_json(self) -> str:
        """The canonical text of the call: ``{"name": ..., "arguments": {...}}`` as ``json.dumps`` writes it."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def openai(self, call_id: str = "call_0") -> dict:
        """The call as an OpenAI ``tool_calls`` entry (arguments as JSON text)."""
        return {"id": call_id, "type": "function",
                "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)}}

    @classmethod
    def parse(cls, text: str | dict, tools: Any, result: Any = None) -> ToolCall:
        """The checked call in ``text`` (JSON) or a ``{"name", "arguments"}`` dict; ``GenerationError`` naming
        every problem when it is not a valid call of one of ``tools``."""
        raw = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
        if isinstance(text, str):
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise GenerationError(f"the tool call is not JSON: {e.msg} at character {e.pos}", text=raw,
                                      errors=[e.msg]) from None
        else:
            obj = text
        if not isinstance(obj, dict) or set(obj) != {"name", "arguments"} or not isinstance(obj["name"], str):
            raise GenerationError('a tool call is {"name": <tool name>, "arguments": {...}} and nothing else',
                                  text=raw, errors=["not a call object"])
        args = obj["arguments"]
        if isinstance(args, str):  # OpenAI writes arguments as JSON text
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        spec_tools = as_tools(tools)
        tool = next((t for t in spec_tools if t.name == obj["name"]), None)
        if tool is None:
            msg = f"the call names no known tool: {obj['name']!r}; known: {', '.join(t.name for t in spec_tools)}"
            raise GenerationError(msg, text=raw, errors=[msg])
        problems = tool.problems(args)
        if problems:
            raise GenerationError(f"the arguments of {tool.name} do not validate: {'; '.join(problems)[:800]}",
                                  text=raw, errors=problems)
        return cls(tool.name, args, tool, result)


class ToolCallSpec(JsonSchema):
    """One call to one of ``tools``: ``{"name": ..., "arguments": {...}}``. Its prompt lists the tools;
    ``in_prompt=False`` passes prompts through unchanged. ``key`` is the call schema's."""

    tools: tuple[Tool, ...]

    def __init__(self, tools: Any, *, in_prompt: bool = True):
        tools = as_tools(tools)
        JsonSchema.__init__(self, call_schema(tools), in_prompt=in_prompt)
        object.__setattr__(self, "tools", tools)
        object.__setattr__(self, "_block", tools_block(tools))

    def __setattr__(self, name, value):
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}: specs are immutable")

    def render_prompt(self, prompt):
        return tools_prompt(self.tools, prompt, block=self._block) if self.in_prompt else prompt

    def tool(self, name: str) -> Tool:
        for t in self.tools:
            if t.name == name:
                return t
        raise SpecError(f"no tool named {name!r}; known: {', '.join(t.name for t in self.tools)}")

    def parse(self, text: str, result: Any = None) -> ToolCall:
        """The checked call in ``text`` (see :meth:`ToolCall.parse`)."""
        return ToolCall.parse(text, self.tools, result)

    def __repr__(self) -> str:
        return f"ToolCallSpec({[t.name for t in self.tools]!r})"


_SPECS: OrderedDict[tuple, ToolCallSpec] = OrderedDict()
_SPECS_LOCK = threading.Lock()


def tool_call_spec(tools: Any) -> ToolCallSpec:
    """The ``ToolCallSpec`` of ``tools``, built once per tool set (same content and pydantic classes)."""
    if isinstance(tools, ToolCallSpec):
        return tools
    ts = as_tools(tools)
    key = tuple((t.digest, id(t.model)) for t in ts)
    with _SPECS_LOCK:
        hit = _SPECS.get(key)
        if hit is not None:
            _SPECS.move_to_end(key)
            return hit
    spec = ToolCallSpec(ts)
    with _SPECS_LOCK:
        _SPECS[key] = spec
        while len(_SPECS) > 64:
            _SPECS.popitem(last=False)
    return spec


def load_tools(path: str | Path, name: str = "TOOLS") -> tuple[Tool, ...]:
    """Tools from a Python file (its ``TOOLS`` list, imported by path) or a JSON file (a list of OpenAI
    tool dicts), e.g. ``load_tools("examples/tools.py")``."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"tools file {p} not found; pass a .py file defining {name} or a .json list of tools")
    if p.suffix == ".json":
        try:
            return as_tools(json.loads(p.read_text()))
        except json.JSONDecodeError as e:
            raise SpecError(f"tools file {p} is not valid JSON: {e.msg} at line {e.lineno}") from None
    mod_name = "structgen_tools_" + hashlib.sha256(str(p.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(mod_name, p)
    if spec is None or spec.loader is None:
        raise SpecError(f"cannot import {p}; pass a .py file defining {name} or a .json list of tools")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod  # pydantic resolves the models' annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
    except Exception:
        sys.modules.pop(mod_name, None)
        raise
    if not hasattr(mod, name):
        raise SpecError(f"{p} defines no {name}; define {name} = [Tool(...), ...]")
    return as_tools(getattr(mod, name))
