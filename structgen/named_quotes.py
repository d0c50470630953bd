"""A quoted value the request names: ``put "Flight change" in the subject line`` is the ``subject``.

A request that puts two texts in double quotes and says which is which ("Let ana know "See you at noon" -
and put "Flight change" in the subject line") leaves a small model to guess which goes where, and it swaps
them. Grounding (``structgen.grounding.ground_schema``) makes a free-text property the quoted span the
request names it by (``const``) where it names exactly one:

* the property's name (``_`` read as a space) right after the closing quote, after "in", "as", "for" or
  "into" ("... in the subject line", "... as the title");
* or right before the opening quote ("subject "Flight change"", "subject: "Flight change"", "with the title
  "Q3 review"").

Only a span the property's ``minLength``/``maxLength`` allow; a property named beside no quote, or beside
two, is left as it was.
"""

from __future__ import annotations

import re

__all__ = ["named_quote", "name_quotes"]

_QUOTE = re.compile(r'"([^"\n]+)"')
_COMMENT = "structgen grounding: the quoted text the request names as this field"


def named_quote(source: str, name: str) -> str | None:
    """The one double-quoted span of ``source`` that it names as ``name``'s value; None when none or two."""
    words = r"\s+".join(map(re.escape, name.replace("_", " ").split()))
    if not words:
        return None
    after = re.compile(rf"[\s,.;:-]*(?:in|as|for|into)\s+(?:the\s+|a\s+)?{words}(?!\w)", re.IGNORECASE)
    before = re.compile(rf"(?<!\w){words}\s*:?\s*$", re.IGNORECASE)
    found = {m.group(1) for m in _QUOTE.finditer(source)
             if after.match(source[m.end():m.end() + 40].split('"')[0])
             or before.search(source[max(0, m.start() - 30):m.start()].split('"')[-1])}
    return found.pop() if len(found) == 1 else None


def name_quotes(properties: dict, source: str, free_text) -> dict:
    """``properties`` with each free-text one (``free_text(node)``) the request names a quoted span for made
    that span (``const``)."""
    out = dict(properties)
    for key, node in properties.items():
        if not isinstance(key, str) or not isinstance(node, dict) or not free_text(node):
            continue
        span = named_quote(source, key)
        if span is not None and node.get("minLength", 0) <= len(span) <= node.get("maxLength", len(span)):
            keep = {k: node[k] for k in ("description", "title") if k in node}
            out[key] = {**keep, "type": "string", "const": span, "$comment": _COMMENT}
    return out
