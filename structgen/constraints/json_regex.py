"""JSON Schema → regular expression for the automaton engine (outlines-core), with a size guard.

outlines-core writes optional properties as alternatives and inlines every ``$ref``, so the regex of a
large schema can grow exponentially and exhaust memory inside Rust (which aborts the process). Before
calling it we estimate the regex size from the schema's shape and refuse schemas that would blow up;
those go to the grammar engine. Recursive schemas also go there: outlines-core cuts recursion at a fixed
depth, which would reject valid deep instances.
"""

from __future__ import annotations

import json
import re

#: what outlines-core is told to write wherever JSON allows whitespace; ``canonical_layout`` replaces it
WS_MARK = "(?#structgen-ws)"
MAX_ESTIMATE = 2_000_000  # estimated regex characters; past this outlines-core may exhaust memory
MAX_REGEX = 200_000  # actual regex characters


class AutomatonUnsupported(Exception):
    """The spec cannot (or should not) be held by the token automaton; use the grammar engine."""


def resolve_ref(ref: str, root: dict):
    """The subschema a local ``$ref`` points at (AutomatonUnsupported for remote or broken refs)."""
    if not ref.startswith("#"):
        raise AutomatonUnsupported(f"remote $ref {ref!r}")
    node = root
    for part in ref[1:].split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise AutomatonUnsupported(f"unresolvable $ref {ref!r}")
    return node


def estimate_size(schema, root: dict | None = None, stack: tuple = ()) -> float:
    """A rough upper estimate of the length of outlines-core's regex for ``schema``."""
    root = schema if root is None else root
    if not isinstance(schema, dict):
        return 10
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref in stack:
            raise AutomatonUnsupported(f"recursive $ref {ref!r}")
        return estimate_size(resolve_ref(ref, root), root, stack + (ref,)) + 10
    total = 0.0
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema and isinstance(schema[key], list):
            total += sum(estimate_size(s, root, stack) for s in schema[key]) + 10
    if "enum" in schema:
        total += len(json.dumps(schema["enum"])) * 2
    if "const" in schema:
        total += len(json.dumps(schema["const"])) * 2
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        req = set(schema.get("required", []) or [])
        n_opt = sum(1 for k in props if k not in req)
        body = sum(estimate_size(v, root, stack) + len(k) + 20 for k, v in props.items())
        # optional members are written once per position they can follow: ~quadratic, nested multiplies
        total += body * max(1, n_opt)
    ap = schema.get("additionalProperties")
    if isinstance(ap, dict):
        total += estimate_size(ap, root, stack) * 2 + 200
    for key in ("items", "prefixItems", "contains"):
        it = schema.get(key)
        if isinstance(it, dict):
            mult = 1
            lo, hi = schema.get("minItems", 0), schema.get("maxItems")
            if isinstance(hi, int):
                mult = max(1, min(hi, 50))
            elif isinstance(lo, int) and lo > 1:
                mult = min(lo, 50)
            total += estimate_size(it, root, stack) * (mult + 1)
        elif isinstance(it, list):
            total += sum(estimate_size(s, root, stack) for s in it)
    if "pattern" in schema:
        total += len(str(schema["pattern"])) * 4
    for key in ("minLength", "maxLength"):
        if isinstance(schema.get(key), int):
            total += 40
    return total + 120


_ANNOTATIONS = {"description", "title", "default", "examples", "$comment", "$schema", "$id", "deprecated",
                "readOnly", "writeOnly"}
_VALUE_KEYS = {"type", "enum", "const", "properties", "items", "prefixItems", "anyOf", "oneOf", "allOf",
               "$ref", "pattern", "format", "not", "additionalProperties", "patternProperties"}
MAX_STRING_BOUND = 512
MAX_ITEMS_BOUND = 64


def _free_form(s) -> bool:
    """A subschema that allows any JSON value (or any object / array): outlines-core writes a generic
    nested-value regex for it whose token automaton takes tens of seconds to build."""
    if s is True:
        return True
    if not isinstance(s, dict):
        return False
    if not (set(s) & _VALUE_KEYS):
        return True
    t = s.get("type")
    types = t if isinstance(t, list) else [t]
    if "object" in types and not s.get("properties") and s.get("additionalProperties") is not False:
        return True
    if "array" in types and "items" not in s and "prefixItems" not in s:
        return True
    return False


def check_automaton_fit(schema, root: dict | None = None) -> None:
    """Raise AutomatonUnsupported for shapes outlines-core writes wrongly or too expensively:
    ``allOf`` of several schemas (written as concatenated objects), free-form values, and length or item
    bounds so large that the automaton's states multiply."""
    root = schema if root is None else root
    seen: set[int] = set()

    def walk(node, is_schema: bool):
        if isinstance(node, list):
            for x in node:
                walk(x, is_schema)
            return
        if not isinstance(node, dict) or id(node) in seen:
            return
        seen.add(id(node))
        if not is_schema:
            for v in node.values():
                walk(v, True)
            return
        if node is not root and _free_form(node):
            raise AutomatonUnsupported("a free-form JSON value (any value, object or array)")
        if isinstance(node.get("allOf"), list) and len(node["allOf"]) > 1:
            raise AutomatonUnsupported("allOf of several schemas")
        for key, bound in (("minLength", MAX_STRING_BOUND), ("maxLength", MAX_STRING_BOUND),
                           ("minItems", MAX_ITEMS_BOUND), ("maxItems", MAX_ITEMS_BOUND)):
            v = node.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > bound:
                raise AutomatonUnsupported(f"{key}={v} (automaton states would multiply)")
        if "$ref" in node and isinstance(node["$ref"], str):
            walk(resolve_ref(node["$ref"], root), True)
        for k, v in node.items():
            if k in ("enum", "const", "default", "examples", "required"):
                continue
            walk(v, k not in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))

    if _free_form(root):
        raise AutomatonUnsupported("a free-form JSON value (any value, object or array)")
    walk(schema, True)


def canonical_layout(regex: str) -> str:
    """Put the one JSON layout into outlines-core's regex: one space after each ``,`` and ``:``, nothing
    elsewhere (what ``json.dumps`` writes with its default separators).

    outlines-core marks every place where JSON allows whitespace with ``WS_MARK``. A mark right after a
    structural ``,`` or ``:`` becomes a space; every other mark (around brackets, before a separator) becomes
    nothing. An optional property written before a required one is the group ``(...,)?`` followed by a mark
    outside it; there the space moves inside the group, after its comma, so that it is written only when
    the property is.
    """
    regex = regex.replace(WS_MARK + ",)?", ", )?")
    regex = re.sub(r"([,:])(\(*)" + re.escape(WS_MARK), r"\1 \2", regex)
    return regex.replace(WS_MARK, "")


def schema_to_regex(schema: dict) -> str:
    """The outlines-core regex for ``schema``, or AutomatonUnsupported when it should not be built."""
    from outlines_core.json_schema import build_regex_from_schema

    check_automaton_fit(schema)
    est = estimate_size(schema)
    if est > MAX_ESTIMATE:
        raise AutomatonUnsupported(f"schema too large for a token automaton (estimated regex size {est:.0f})")
    from .placeholders import put_back, substitute

    shaped, subs = substitute(schema)
    try:
        regex = put_back(canonical_layout(build_regex_from_schema(json.dumps(shaped), WS_MARK)), subs)
    except Exception as e:  # outlines-core raises ValueError/TypeError for unsupported keywords
        raise AutomatonUnsupported(str(e).strip().splitlines()[0][:300]) from None
    if len(regex) > MAX_REGEX:
        raise AutomatonUnsupported(f"regex of {len(regex)} characters is too large for a token automaton")
    return regex
