"""Every address the request states: the only e-mail field of a schema, a list, holds them all.

A request that writes three addresses and a schema with one place for addresses (``send_email``'s ``to``,
``create_event``'s ``attendees``) want all three there; a small model drops one as often as not. Grounding
(``structgen.grounding.ground_schema``) makes such a list the request's addresses, in the order it states
them, each once (``const``), and the property required, so the list is written, and whole; only where this
holds:

* the schema (each alternative of an ``anyOf``/``oneOf`` on its own: each tool of a tool-call schema) has
  exactly one e-mail-valued subschema (``format: email``), the ``items`` of an array property (``"to":
  {"type": "array", "items": {"type": "string", "format": "email"}}``);
* the request states at least one address that its ``pattern`` allows, and no more than its ``maxItems``.

The caveat: an address the request names for another purpose ("reply to me at ...") goes in the list too.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["address_lists", "every_address"]

_COMMENT = "structgen grounding: every address the request states, in its order"


def address_lists(schema: Any) -> list[tuple[dict, str]]:
    """(the object subschema, the property name) of each alternative of ``schema`` (each branch of an
    ``anyOf``/``oneOf``, as each tool of a tool-call schema) whose only e-mail subschema is the ``items`` of
    an array property of an object."""
    if isinstance(schema, dict) and any(isinstance(schema.get(k), list) for k in ("anyOf", "oneOf")):
        return [f for k in ("anyOf", "oneOf") for b in schema.get(k) or () for f in address_lists(b)]
    if json.dumps(schema).count('"format": "email"') != 1:
        return []

    def find(node: Any) -> list[tuple[dict, str]]:
        if isinstance(node, list):
            return [f for x in node for f in find(x)]
        if not isinstance(node, dict):
            return []
        props = node.get("properties")
        if isinstance(props, dict):
            for k, sub in props.items():
                items = sub.get("items") if isinstance(sub, dict) and sub.get("type") == "array" else None
                if isinstance(items, dict) and items.get("format") == "email":
                    return [(node, k)]
        return [f for x in node.values() for f in find(x)]

    return find(schema)


def every_address(obj: dict, key: str, source: str) -> dict:
    """``obj`` (an object subschema) with array property ``key`` the addresses ``source`` states, in order,
    and required; ``obj`` unchanged when it states none its items allow, or more than ``maxItems``."""
    from .grounding import emails_in

    sub = obj["properties"][key]
    stated = emails_in(source, sub["items"].get("pattern"))
    if not stated or len(stated) > sub.get("maxItems", len(stated)) or len(stated) < sub.get("minItems", 0):
        return obj
    keep = {k: sub[k] for k in ("description", "title") if k in sub}
    required = obj.get("required") if isinstance(obj.get("required"), list) else []
    return {**obj, "properties": {**obj["properties"], key: {**keep, "const": stated, "$comment": _COMMENT}},
            "required": [*required, key] if key not in required else required}
