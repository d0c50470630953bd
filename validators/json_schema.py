"""Validate decoded JSON against a JSON Schema (and optionally a pydantic model), naming spans to redo.

:class:`JsonSchemaValidator` parses the text with :func:`~.json_spans.parse_with_spans`, validates the value
with ``jsonschema`` with format assertion switched on (date, date-time, time, email, uri, uuid, ipv4, ...
every format the installed jsonschema extras can check), and turns every error
into an :class:`~.base.Issue` whose span is the smallest part of the text that must be redone:

- the value at the error's instance path (a number below ``minimum``, a string too long, a bad format);
- for an object member that must not be there (``additionalProperties``/``unevaluatedProperties`` false,
  a property name failing ``propertyNames``, a property whose subschema is ``false``), that whole member,
  key included — one issue per member (for ``false`` subschemas jsonschema loses the child's path, so
  the child is found by identity of the rejected value, falling back to the container when ambiguous);
- for errors about an object or array as a whole (``required``, ``minProperties``, ``dependentRequired``,
  ``minItems``, ``uniqueItems``, ``contains``, ...), the object or array.

With a pydantic model it also runs ``model.model_validate_json`` (models can enforce what their schema
cannot, e.g. custom field validators) and maps each error ``loc`` to a span the same way; a pydantic issue
on a span already reported by the schema is dropped as a duplicate. :class:`ToolCallValidator` does the
same for tool calls, with the model of the tool each call names.

The dialect is draft 2020-12 unless the schema's ``$schema`` declares another draft jsonschema knows
(draft 4, 6, 7, 2019-09): real-world schemas (a third of MaskBench) are draft 4/7, where ``$id``,
``exclusiveMaximum: true`` or tuple ``items`` mean something else, so their own dialect is the only
correct reading. Remote references are never fetched: a ``$ref`` that resolves neither inside the schema
nor to a standard meta-schema is an :class:`~structgen.errors.UnsupportedSchemaError` when the validator
is built.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator as JsonschemaValidator
from jsonschema.validators import validator_for
from jsonschema_specifications import REGISTRY as _SPECIFICATIONS
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

from structgen.errors import GenerationError, SpecError, UnsupportedSchemaError
from structgen.constraints.quote_automaton import is_quoted
from structgen.grounding import GROUND_KEY, STATED_KEY, quotable, source_of, stated_for
from structgen.stated_spans import spans_of

from .base import Issue, Span
from .json_spans import JsonSpans, JsonSyntaxIssue, PathT, json_pointer, parse_with_spans

_NO_RETRIEVAL = Registry()  # no ``retrieve``: unknown URIs are unresolvable, never downloaded
_MEMBER_NAMES = re.compile(r"\((.*) (?:was|were) (?:unexpected|unevaluated and invalid)\)$", re.DOTALL)


class JsonSchemaValidator:
    """Checks JSON text against a JSON Schema (formats asserted) and an optional pydantic model."""

    name = "jsonschema"

    def __init__(self, schema: dict | bool, model: type | None = None, *, check_schema: bool = True):
        """``check_schema=False`` skips validating the schema against its meta-schema (the slow part of
        building, ~30 ms for a large schema) when the caller has already done so, as ``JsonSchema`` has."""
        cls = dialect_for(schema)
        if source_of(schema) is not None:
            cls = grounded_dialect(cls)
        if check_schema:
            try:
                cls.check_schema(schema)
            except SchemaError as e:
                where = json_pointer(tuple(e.absolute_path)) or "(root)"
                raise SpecError(f"invalid JSON Schema at {where}: {e.message}") from None
        bad = unresolvable_refs(schema)
        if bad:
            raise UnsupportedSchemaError(
                f"the schema's $ref {', '.join(map(repr, bad))} cannot be resolved locally; structgen never "
                "fetches remote schemas: copy the referenced schema under $defs and refer to it as '#/$defs/NAME'"
            )
        self.schema = schema
        self.model = model
        self.dialect = cls
        self._validator = cls(schema, format_checker=cls.FORMAT_CHECKER, registry=_NO_RETRIEVAL)

    def __repr__(self) -> str:
        return f"JsonSchemaValidator(model={getattr(self.model, '__name__', None)})"

    def __call__(self, text: str) -> list[Issue]:
        try:
            value, spans = parse_with_spans(text)
        except JsonSyntaxIssue as e:
            return [e.to_issue(self.name)]
        return self.value_issues(value, text, spans)

    def value_issues(self, value: Any, text: str, spans: JsonSpans) -> list[Issue]:
        """The issues of ``text`` once parsed (``value``, ``spans``): the schema's, then the model's."""
        issues = self.schema_issues(value, spans)
        if self.model is not None:
            seen = {i.span for i in issues}
            issues += [i for i in pydantic_issues(self.model, text, spans) if i.span not in seen]
        return issues

    def schema_issues(self, value: Any, spans: JsonSpans) -> list[Issue]:
        """The schema's verdict on an already parsed value, as issues sorted by position."""
        try:
            errors = list(self._validator.iter_errors(value))
        except Unresolvable as e:  # backstop: a reference the eager check could not see
            raise UnsupportedSchemaError(
                f"the schema's $ref {e.ref!r} cannot be resolved locally; structgen never fetches remote "
                "schemas: copy the referenced schema under $defs and refer to it as '#/$defs/NAME'"
            ) from None
        issues: list[Issue] = []
        for err in errors:
            issues.extend(_issues_for_error(err, value, spans, self.name))
        return _sorted_unique(issues)


def pydantic_issues(model: type, text: str, spans: JsonSpans, at: PathT = (), value: Any = None) -> list[Issue]:
    """Validate ``text`` with ``model.model_validate_json`` and map each error ``loc`` to a span. With ``at``
    the model validates only the part of the document at that path (``value``, its parsed value: a tool
    call's arguments), and its errors are placed under it."""
    from pydantic import ValidationError as PydanticValidationError

    who = f"pydantic:{getattr(model, '__name__', 'model')}"
    try:
        model.model_validate_json(json.dumps(value, ensure_ascii=False) if at else text)
    except PydanticValidationError as e:
        issues = []
        for err in e.errors(include_url=False):
            loc = tuple(at) + tuple(err.get("loc", ()))
            path, span = spans.nearest(loc)
            if err.get("type") == "extra_forbidden" and path == loc and spans.member(path):
                span = spans.member(path)
            issues.append(Issue(f"{json_pointer(path) or '(root)'}: {err['msg']}", span, json_pointer(path), who))
        return _sorted_unique(issues)
    except Exception as e:  # a custom validator that raised something pydantic does not catch
        return [Issue(f"model {who} raised {type(e).__name__}: {e}", None, "", who)]
    return []


class ToolCallValidator(JsonSchemaValidator):
    """Checks tool calls (``{"name": ..., "arguments": {...}}``, or a list of them: an agent turn's parallel
    calls) against the schema and then, when the schema passes, each call's arguments against the named
    tool's pydantic model (``models``: tool name -> model), whose custom validators say what a schema
    cannot (a flight's two airports differ). The model's errors get their argument's span, so the
    generator repairs them as it repairs the schema's, instead of ``ToolCall.parse`` refusing the finished
    call; the order is ``Tool.problems``'s. Any other JSON (a turn's ``{"content": ...}``) gets the schema's
    verdict alone."""

    def __init__(self, schema: dict | bool, models: dict[str, type], *, check_schema: bool = True):
        super().__init__(schema, None, check_schema=check_schema)
        self.models = dict(models)

    def __repr__(self) -> str:
        return f"ToolCallValidator(models={sorted(self.models)})"

    def value_issues(self, value: Any, text: str, spans: JsonSpans) -> list[Issue]:
        issues = self.schema_issues(value, spans)
        if issues:
            return issues
        calls = [((), value)] if isinstance(value, dict) else []
        if isinstance(value, list):
            calls = [((i,), call) for i, call in enumerate(value)]
        for at, call in calls:
            if isinstance(call, dict) and isinstance(call.get("name"), str) and "arguments" in call:
                model = self.models.get(call["name"])
                if model is not None:
                    issues += pydantic_issues(model, text, spans, (*at, "arguments"), call["arguments"])
        return _sorted_unique(issues)


def parse_json_value(text: str, schema_or_model: Any = None) -> Any:
    """The Python value of a JSON result: a validated pydantic instance when a model is given
    (a pydantic class, or a ``JsonSchema`` spec made from one), else the parsed JSON (not re-validated).

    Raises :class:`~structgen.errors.GenerationError` (with ``.errors`` as issues) when the text is not
    JSON or the model rejects it.
    """
    model = getattr(schema_or_model, "model", None)
    if model is None and isinstance(schema_or_model, type) and hasattr(schema_or_model, "model_validate_json"):
        model = schema_or_model
    try:
        value, spans = parse_with_spans(text)
    except JsonSyntaxIssue as e:
        raise GenerationError(str(e), text=text, errors=[e.to_issue()]) from None
    if model is None:
        return value
    from pydantic import ValidationError as PydanticValidationError

    try:
        return model.model_validate_json(text)
    except PydanticValidationError:
        issues = pydantic_issues(model, text, spans)
        raise GenerationError(
            f"the output does not validate as {model.__name__}: " + "; ".join(i.message for i in issues),
            text=text,
            errors=issues,
        ) from None


def dialect_for(schema: Any) -> type[JsonschemaValidator]:
    """The jsonschema validator class for the draft the schema's ``$schema`` declares (2020-12 if none)."""
    if isinstance(schema, dict) and not isinstance(schema.get("$schema", ""), str):
        return Draft202012Validator  # a malformed $schema: check_schema reports it
    return validator_for(schema, default=Draft202012Validator)


@functools.cache
def grounded_dialect(cls: type[JsonschemaValidator]) -> type[JsonschemaValidator]:
    """``cls`` with the grounding keywords (``structgen.grounding``): a string must be a part of its source; a
    stated date, date-time, patterned value or number one the source states."""

    def quoted(validator, source, instance, schema):
        if validator.is_type(instance, "string") and isinstance(source, str) \
                and not is_quoted(instance, quotable(source)):
            yield ValidationError(f"{instance!r} is not quoted from the request: a grounded string must be a "
                                  "non-empty part of it made of whole words")

    def stated(validator, source, instance, schema):
        if (validator.is_type(instance, "string") or validator.is_type(instance, "number")) \
                and isinstance(source, str):
            values = stated_for(schema, source)
            if instance not in values:
                spans = spans_of(schema)
                what = schema.get("format") or (spans["kind"] if spans else "choice" if "enum" in schema
                                                else "value of this pattern" if "pattern" in schema else "number")
                yield ValidationError(f"{instance!r} is not a {what} the request states (it states "
                                      f"{', '.join(map(str, values)) or 'none'})")

    return validators.extend(cls, {GROUND_KEY: quoted, STATED_KEY: stated})


def unresolvable_refs(schema: dict | bool) -> list[str]:
    """Every ``$ref`` in the schema that resolves neither inside it nor to a standard meta-schema."""
    cls = dialect_for(schema)
    resource = specification_with(cls.ID_OF(cls.META_SCHEMA), default=DRAFT202012).create_resource(schema)
    resolver = _SPECIFICATIONS.combine(_NO_RETRIEVAL).resolver_with_root(resource)
    bad: list[str] = []

    def walk(resolver, resource) -> None:
        contents = resource.contents
        if isinstance(contents, dict) and isinstance(contents.get("$ref"), str):
            try:
                resolver.lookup(contents["$ref"])
            except Unresolvable:
                bad.append(contents["$ref"])
        for sub in resource.subresources():
            walk(resolver.in_subresource(sub), sub)

    walk(resolver, resource)
    return list(dict.fromkeys(bad))


def _issues_for_error(err: ValidationError, value: Any, spans: JsonSpans, who: str) -> list[Issue]:
    path, span = spans.nearest(tuple(err.absolute_path))
    inst = _value_at(value, path)
    pointer = json_pointer(path)
    if isinstance(inst, dict):
        names = _offending_members(err, inst)
        if names:
            out = []
            for name in names:
                member = path + (name,)
                mspan = spans.member(member) or span
                out.append(Issue(f"{json_pointer(member)}: {err.message}", mspan, json_pointer(member), who))
            return out
    if err.validator is None and err.instance is not inst and isinstance(inst, (dict, list)):
        # A ``false`` subschema rejected a child (jsonschema drops the child's path for these): blame the
        # child when exactly one has that very object as its value; a member goes with its key.
        children = inst.items() if isinstance(inst, dict) else enumerate(inst)
        hits = [k for k, child in children if child is err.instance]
        if len(hits) == 1:
            path = path + (hits[0],)
            pointer = json_pointer(path)
            span = (spans.member(path) if isinstance(inst, dict) else None) or spans[path]
    return [Issue(f"{pointer or '(root)'}: {err.message}", span, pointer, who)]


def _offending_members(err: ValidationError, obj: dict) -> list[str]:
    """The object members an error blames, when they can be named (else an empty list)."""
    kw = err.validator
    if kw == "additionalProperties" and err.validator_value is False and isinstance(err.schema, dict):
        props = err.schema.get("properties", {})
        patterns = "|".join(err.schema.get("patternProperties", {}))
        return [k for k in obj if k not in props and not (patterns and re.search(patterns, k))]
    if kw == "unevaluatedProperties":
        m = _MEMBER_NAMES.search(err.message)
        if m:
            try:
                names = ast.literal_eval("[" + m.group(1) + "]")
            except (ValueError, SyntaxError):
                return []
            if all(isinstance(n, str) and n in obj for n in names):
                return names
        return []
    if "propertyNames" in err.schema_path and isinstance(err.instance, str) and err.instance in obj:
        return [err.instance]
    return []


def _value_at(value: Any, path: PathT) -> Any:
    for p in path:
        value = value[p]
    return value


def _sorted_unique(issues: list[Issue]) -> list[Issue]:
    def key(i: Issue) -> tuple:
        s: Span = i.span if i.span is not None else (-1, -1)
        return (s[0], -s[1])

    return sorted(dict.fromkeys(issues), key=key)
