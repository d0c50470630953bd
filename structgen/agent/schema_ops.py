"""JSON Schema rewrites for tool arguments: inline local ``$ref``s, drop pydantic's titles, close objects
(``additionalProperties: false``), and hoist definitions under a prefix so several tools' schemas can share
one root (``structgen.agent.tools.call_schema``). Each returns a new schema; inputs are not modified.

They walk subschemas only (``properties``, ``items``, ``anyOf``, ...), never instance data such as
``const``, ``enum`` or ``default``, so a property named ``title`` or a default containing ``$ref`` is kept.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import SpecError

# -- schema operations ----------------------------------------------------------------------------------
_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
        "unevaluatedProperties", "unevaluatedItems", "additionalItems")
_ANNOTATIONS = {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}


def _rebuild(node: Any, visit) -> Any:
    """A copy of schema ``node`` with ``visit`` applied to each direct subschema (definitions included)."""
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in _MAPS and isinstance(v, dict):
            v = {n: visit(x) for n, x in v.items()}
        elif k in _LISTS and isinstance(v, list):
            v = [visit(x) for x in v]
        elif k in _ONE:
            v = [visit(x) for x in v] if isinstance(v, list) else visit(v)
        out[k] = v
    return out


def _transform(node: Any, fn) -> Any:
    """``fn`` applied to every subschema of ``node`` (children first) and to ``node``."""
    return fn(_rebuild(node, lambda c: _transform(c, fn))) if isinstance(node, dict) else node


def inline_refs(schema: dict) -> dict:
    """``schema`` with every local ``$ref`` replaced by its target; a recursive one stays a ``$ref`` and the
    definitions are kept then (else ``$defs``/``definitions`` are dropped)."""
    from ..prompting import _resolve

    recursive: set[str] = set()

    def inline(node: Any, stack: tuple) -> Any:
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not isinstance(ref, str):
            return _rebuild(node, lambda c: inline(c, stack))
        if ref in stack:
            recursive.add(ref)
            return _rebuild(node, lambda c: inline(c, stack))
        target = _resolve(ref, schema)
        if not isinstance(target, (dict, bool)):
            raise SpecError(f"$ref {ref!r} does not resolve inside the schema; put the definition under $defs")
        t = inline(target, stack + (ref,))
        rest = _rebuild({k: v for k, v in node.items() if k != "$ref"}, lambda c: inline(c, stack))
        if not rest:
            return t
        if isinstance(t, dict) and not (set(t) & set(rest)) - _ANNOTATIONS:
            return {**t, **rest}
        return {"allOf": [t], **rest}

    out = inline({k: v for k, v in schema.items() if k not in ("$defs", "definitions")}, ())
    if recursive:
        out.update({k: schema[k] for k in ("$defs", "definitions") if k in schema})
    return out


def strip_titles(schema: dict) -> dict:
    """Every subschema's ``title`` dropped (pydantic writes one per field and model)."""
    def drop(node: dict) -> dict:
        node.pop("title", None)
        return node

    return _transform(schema, drop)


def close_objects(schema: dict, *, everywhere: bool) -> dict:
    """``additionalProperties: false`` on the root object (``everywhere``: on every object with
    ``properties``) unless it already says how extra members are treated."""
    open_keys = ("additionalProperties", "patternProperties", "unevaluatedProperties")

    def close(node: dict) -> dict:
        if isinstance(node.get("properties"), dict) and not any(k in node for k in open_keys):
            node["additionalProperties"] = False
        return node

    if not everywhere:
        return close(dict(schema))
    return _transform(schema, close)


def hoist_defs(schema: dict, prefix: str) -> tuple[dict, dict]:
    """``schema`` without its ``$defs``/``definitions``, and those definitions renamed ``prefix + name``,
    every ``#/$defs/X`` and ``#/definitions/X`` reference rewritten to ``#/$defs/<prefix>X``."""
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    if not defs:
        return schema, {}

    def rename(node: dict) -> dict:
        ref = node.get("$ref")
        if isinstance(ref, str):
            m = re.fullmatch(r"#/(?:\$defs|definitions)/([^/]+)(.*)", ref)
            if m:
                node["$ref"] = f"#/$defs/{prefix}{m.group(1)}{m.group(2)}"
        return node

    body = _transform({k: v for k, v in schema.items() if k not in ("$defs", "definitions")}, rename)
    return body, {prefix + n: _transform(d, rename) for n, d in defs.items()}

