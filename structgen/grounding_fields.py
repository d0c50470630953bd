"""Grounding across an object's fields and a union's branches (``structgen.grounding.ground_schema``).

``ground_schema`` marks each field on its own; what needs the fields together is here:

* **defaults** — an optional property with a ``default`` whose value the request does not state may only be
  its default (``const``);
* **roles** — each of a pair of direction fields allows no stated value of the other role
  (``structgen.roles``), and each of a pair of home and away fields (teams, scores) none of the other
  side (``structgen.sides``), and each of a make and a model field none of the other's part of a name
  ("Volvo XC60": ``structgen.make_and_model``);
* **job titles** — a job field (``position``, a signature's ``title``) is one of the request's job titles
  ("Head of Sales"), and a name field (``company``) holds none of them (``structgen.job_titles``);
* **proper names, titles and paths** — a free-text field whose name says it holds a proper name (``city``,
  ``homeTeam``, ``patient_name``, ``make``; a bare ``name`` where the request introduces one) is one of the
  request's capitalised names (``structgen.proper_names``), one that holds a work's title (``course``) one of
  its title-case phrases (``structgen.titles``), one that holds a file path (``path``) one of its paths
  (``structgen.stated_paths``): ``structgen.stated_spans``;
* **named quotes** — a free-text field the request names a quoted span as is that span
  (``structgen.named_quotes``);
* **named numbers** — of several number fields, one the request names a number as ("a depth of 66 km":
  ``depth_km``) takes the numbers it names, and the others do not; an optional one is then written; a
  duration's converted value goes only to a field in its unit ("11 weeks" is no ``capacity`` of 77)
  (``structgen.named_numbers``);
* **left out** — an optional property with no ``default``, of a kind whose value is read off the request (a
  number, an e-mail, a date, a patterned string), for which the request states no value, or only values
  other fields name, is left out: "officials report 14 injuries" states no ``depthKm``. The object then
  allows no property it does not list (``additionalProperties: false``); an object whose other keys a
  schema allows (``additionalProperties`` or ``patternProperties``) or counts (``minProperties``...) keeps
  them all;
* **stated booleans** — a boolean field whose word the request writes only after a negation is ``false``,
  one whose word it writes and never negates nor gives a value of its own is ``true``, and either is written
  ("not yet vaccinated": ``is_vaccinated``; "teaches it online": ``online``; ``structgen.stated_booleans``);
* **stated phones and colours** — an optional phone field of a request that states a phone number is
  written ("T: +45 381 51708": ``phone``; ``structgen.stated_phones``), and so is an optional colour field
  of a request that names a colour ("in grey": ``colour``), which is left out where it names none
  (``structgen.stated_colours``);
* **named choices** — an optional ``enum`` property of which the request names a choice is written
  ("business class if possible": ``cabin`` is required, and ``business``);
* **feasible branches** — of a union (``anyOf``/``oneOf``) of objects, such as a tool-call schema's tools, a
  branch that requires values of stated kinds (numbers, dates, patterned codes, e-mails) of which the
  request states not one is dropped while another branch is left: "Need to pack for Praha. Temperature
  outlook pls" states no amount and no currency, so it cannot be a ``convert_currency`` call (one stated
  value keeps a branch: "flights from Porto to Barcelona on April 20" names no airport code but a date).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ground_properties", "feasible_branches"]


def ground_properties(node: dict, out: dict, source: str) -> dict:
    """``out`` (the marked copy of object subschema ``node``) with the rules of the module docstring applied
    to its ``properties`` and ``required``."""
    from .grounding import GROUND_KEY, STATED_KEY, _default_only, _email_only, stated_for, unstated
    from .job_titles import split_jobs
    from .make_and_model import split_make_model
    from .named_numbers import split_by_name
    from .named_quotes import name_quotes
    from .proper_names import person_key
    from .roles import split_by_role
    from .sides import split_by_side
    from .stated_booleans import stated_value
    from .stated_colours import uncoloured
    from .stated_spans import KIND_KEY, spans_field

    required = node.get("required") if isinstance(node.get("required"), list) else []
    props = {k: _default_only(sub) if k not in required and isinstance(sub, dict) and "default" in sub
             and unstated(sub, source) else out["properties"][k] for k, sub in node["properties"].items()}
    props = name_quotes(props, source, lambda sub: GROUND_KEY in sub and not _email_only(sub))
    props = split_by_role({k: spans_field(person_key(k, props), sub, source) or sub for k, sub in props.items()},
                          source)
    props = split_jobs(split_make_model(split_by_side(props, source), source), source)
    props, naming, empty = split_by_name(props, source)
    said = {k: stated_value(k, source) for k, sub in props.items() if isinstance(k, str) and isinstance(sub, dict)
            and sub.get("type") == "boolean" and not {"const", "enum"} & set(sub)}
    said = {k: flag for k, flag in said.items() if flag is not None}
    props = {k: {**sub, "const": said[k]} if k in said else sub for k, sub in props.items()}
    named = [k for k, sub in props.items() if k not in required and isinstance(sub, dict) and STATED_KEY in sub
             and "enum" in sub and stated_for(sub, source)]
    spans = [k for k, sub in props.items() if isinstance(sub, dict)
             and sub.get(KIND_KEY) in ("phone number", "colour")]
    named += [k for k in [*naming, *said, *spans] if k not in required]
    result = {**out, "properties": props}
    if named:
        result["required"] = [*(out.get("required") or []), *named]
    gone = [k for k, sub in node["properties"].items() if k not in required and isinstance(sub, dict)
            and "default" not in sub and (k in empty or unstated(sub, source)
                                          or uncoloured(k, out["properties"][k], source))]
    return _leave_out(result, gone) if gone else result


#: object keywords under which a property left out would still be allowed, or counted
_OPEN_OBJECT = ("patternProperties", "minProperties", "maxProperties", "propertyNames", "dependentRequired",
                "dependentSchemas", "dependencies", "unevaluatedProperties")


def _leave_out(node: dict, keys: list[str]) -> dict:
    """Object subschema ``node`` without the optional properties ``keys`` and closed to any other (unchanged
    when it allows or counts other keys)."""
    if node.get("additionalProperties", False) is not False or any(k in node for k in _OPEN_OBJECT):
        return node
    props = {k: v for k, v in node["properties"].items() if k not in keys}
    return {**node, "properties": props, "additionalProperties": False}


def _required_kinds(node: Any, source: str, depth: int = 0) -> list[bool]:
    """For each value of a stated kind that a marked object subschema requires (through required object
    properties and non-empty arrays), whether ``source`` states one (a date-time counts as stated where a
    date is)."""
    from .grounding import STATED_KEY, _email_only, _stated_kind, emails_in, stated_for, stated_values
    from .stated_spans import spans_of

    if not isinstance(node, dict) or depth > 8 or spans_of(node):  # a name or path is text, not a stated kind
        return []
    if STATED_KEY in node or _stated_kind(node):
        return [bool(stated_for(node, source)) or (node.get("format") == "date-time"
                                                   and bool(stated_values(source, "date")))]
    if _email_only(node):
        return [bool(emails_in(source, node.get("pattern")))]
    items = node.get("items")
    if node.get("type") == "array" and node.get("minItems", 0) >= 1 and isinstance(items, dict):
        return _required_kinds(items, source, depth + 1)
    props = node.get("properties")
    required = node.get("required") if isinstance(node.get("required"), list) else []
    if isinstance(props, dict):
        return [s for k in required for s in _required_kinds(props.get(k), source, depth + 1)]
    return []


def _feasible(branch: dict, source: str) -> bool:
    """Whether ``source`` states one of the stated-kind values ``branch`` requires, or it requires none."""
    kinds = _required_kinds(branch, source)
    return any(kinds) or not kinds


def feasible_branches(branches: list, source: str) -> list:
    """``branches`` (marked) without those whose required values ``source`` cannot state, unless that
    leaves none; only a union of objects is narrowed."""
    if len(branches) < 2 or not all(isinstance(b, dict) and isinstance(b.get("properties"), dict) for b in branches):
        return branches
    kept = [b for b in branches if _feasible(b, source)]
    return kept or branches
