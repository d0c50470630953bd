"""Fields that are one of the request's spans of a kind: a proper name, a title, a path, a phone or a colour.

A grounded free-text string may be any part of the request made of whole words
(``constraints.quote_automaton``). Where the field's own name says which kind of value it holds, the part is
one of that kind the request states: a proper name (``structgen.proper_names``: ``city``, ``homeTeam``,
``make``, ``patient_name``; a bare ``name`` where the request introduces one: "I'm Milo"), a work's title
(``structgen.titles``: ``course``, ``book_title``), a file path
(``structgen.stated_paths``: ``path``, ``filename``), a phone number (``structgen.stated_phones``:
``phone``, ``direct_line``) or a colour (``structgen.stated_colours``: ``colour``). ``spans_field`` turns such
a field into a stated choice: ``STATED_KEY`` in place of ``GROUND_KEY``, the spans listed under ``SPANS_KEY``
and their kind under ``KIND_KEY``; ``grounding.stated_for`` returns the spans, so the constraint writes one of
them (an alternation), the validator reports any other ("'Lisbon' is not a name the request states (it states
...)") and the repeat pass counts them. A request with no span of the kind that the field's length bounds
allow, or more than ``MAX_SPANS`` (a long document), leaves the field free text.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["SPANS_KEY", "KIND_KEY", "spans_field", "spans_of", "MAX_SPANS"]

SPANS_KEY = "x-structgen-spans"  # the spans a field may be (a list: a schema walker reads no schema in it)
KIND_KEY = "x-structgen-span-kind"  # which kind: "name", "title", "path", "phone number" or "colour"
#: a field with more candidate spans than this stays free text (the alternation would be a document)
MAX_SPANS = 300


def _kinds() -> list[tuple[str, Callable[[str, str], list[str]]]]:
    """(kind, ``(key, source) -> spans``): the spans of ``source`` a field named ``key`` may hold ([] if
    ``key`` names no value of that kind), in the order a field is tried."""
    from .proper_names import introduced_for, names_for
    from .stated_colours import colours_for
    from .stated_paths import paths_for
    from .stated_phones import phones_for
    from .titles import titles_for

    return [("name", names_for), ("name", introduced_for), ("title", titles_for), ("path", paths_for),
            ("phone number", phones_for), ("colour", colours_for)]


def spans_field(key: str, node: Any, source: str) -> dict | None:
    """The marked free-text subschema ``node`` of property ``key`` as a choice of the spans of its kind that
    ``source`` states and its length bounds allow (module doc), or None where no kind applies."""
    from .constraints.quote_automaton import is_quoted
    from .grounding import GROUND_KEY, STATED_KEY, quotable

    if not isinstance(node, dict) or GROUND_KEY not in node or node.get("format") or not isinstance(key, str):
        return None
    lo, hi, text = node.get("minLength", 0), node.get("maxLength"), quotable(source)
    for kind, spans_for in _kinds():
        spans = [v for v in spans_for(key, source) if len(v) >= lo and (hi is None or len(v) <= hi)
                 and is_quoted(v, text)]
        if spans and len(spans) <= MAX_SPANS:
            return {**{k: v for k, v in node.items() if k != GROUND_KEY}, STATED_KEY: source, SPANS_KEY: spans,
                    KIND_KEY: kind}
    return None


def spans_of(node: Any) -> dict | None:
    """``{"kind", "values"}`` of a subschema ``spans_field`` made, else None."""
    spans = node.get(SPANS_KEY) if isinstance(node, dict) else None
    return {"kind": node.get(KIND_KEY), "values": spans} if isinstance(spans, list) else None
