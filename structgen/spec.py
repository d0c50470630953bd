"""Specs: what the user asks for, as pure data (no tokenizer).

``JsonSchema`` (a dict, JSON text or a pydantic model class), ``Regex``, ``Grammar`` (Lark text or a path,
with optional extra validators) and ``Choice``. Each spec has a stable ``key`` used to cache compiled
constraints, and knows which validators check its decoded text.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

from .errors import GrammarSyntaxError, SpecError



def _grammars_dir() -> Path:
    """Where shipped grammars live: ``structgen.grammars`` when installed, else the checkout's folder."""
    try:
        from .grammars import DIR  # type: ignore[attr-defined]

        return DIR
    except ImportError:
        return Path(__file__).resolve().parent.parent / "grammars"


GRAMMARS_DIR = _grammars_dir()


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:24]


class Spec:
    """Base class of all specs.

    ``salvage``: every output of the spec's language is a safe answer whatever it says (``Sql``: one
    read-only query), so when repair and any fallback have failed the generator may release the model's
    output cut to a complete prefix, or a prefix of it finished by the grammar (``Generator``). Off for
    every other spec: a shorter or completed tool call or rule could mean something else."""

    kind: str = "spec"
    salvage: ClassVar[bool] = False

    @property
    def key(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def render_prompt(self, prompt):
        """The prompt the model sees for this spec (text or chat messages). Most specs pass it through;
        a spec that carries context the model needs (``Sql``: the database schema) adds it here."""
        return prompt


@dataclass(frozen=True, eq=False)
class JsonSchema(Spec):
    """A JSON Schema given as a dict, JSON text, or a pydantic model class.

    ``JsonSchema(MyModel).model`` keeps the class, so results can be returned as validated instances.
    The prompt the model sees carries the schema in compact form (``structgen.prompting.json_prompt``);
    ``JsonSchema(schema, in_prompt=False)`` passes prompts through unchanged (``key`` is the same).
    """

    source: Any
    schema: dict = field(init=False)
    model: Any = field(init=False, default=None)
    in_prompt: bool = field(default=True, kw_only=True)
    kind = "json"

    def __post_init__(self):
        src, model = self.source, None
        if isinstance(src, JsonSchema):
            object.__setattr__(self, "in_prompt", bool(self.in_prompt and src.in_prompt))
            src, model = src.schema, src.model
        elif isinstance(src, type) and hasattr(src, "model_json_schema"):
            model = src
            src = src.model_json_schema()
        elif isinstance(src, (str, bytes)):
            try:
                src = json.loads(src)
            except json.JSONDecodeError as e:
                raise SpecError(
                    f"schema is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}; "
                    "pass a dict, JSON text or a pydantic model class"
                ) from None
        elif isinstance(src, Path):
            try:
                src = json.loads(src.read_text())
            except (OSError, json.JSONDecodeError) as e:
                raise SpecError(f"cannot read schema file {src}: {e}") from None
        if isinstance(src, bool):
            src = {} if src else {"not": {}}
        if not isinstance(src, dict):
            raise SpecError(
                f"a JSON Schema must be an object (dict), got {type(src).__name__}; "
                "pass a dict, JSON text or a pydantic model class"
            )
        _check_schema(src)
        object.__setattr__(self, "schema", src)
        object.__setattr__(self, "model", model)

    @property
    def key(self) -> str:
        return "json:" + _digest(json.dumps(self.schema, sort_keys=True, separators=(",", ":")))

    def render_prompt(self, prompt):
        """``prompt`` with the schema in compact form (see ``structgen.prompting``), unless ``in_prompt`` is
        false."""
        if not self.in_prompt:
            return prompt
        from .prompting import compact_schema, json_prompt

        compact = self.__dict__.get("_compact")
        if compact is None:
            compact = compact_schema(self.schema)
            object.__setattr__(self, "_compact", compact)
        return json_prompt(self.schema, prompt, compact=compact)

    def __repr__(self) -> str:
        name = getattr(self.model, "__name__", None)
        return f"JsonSchema({name or _short(json.dumps(self.schema))})"


def _check_schema(schema: dict) -> None:
    """Reject schemas that are invalid under the draft they declare (``$schema``; 2020-12 when none is
    declared), with the failing keyword named."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        raise SpecError(f"invalid JSON Schema at {where}: {e.message}") from None


@dataclass(frozen=True, eq=False)
class Regex(Spec):
    """A regular expression the whole output must match (Python/Rust regex syntax, no lookaround)."""

    pattern: str
    kind = "regex"

    def __post_init__(self):
        if not isinstance(self.pattern, str) or not self.pattern:
            raise SpecError("Regex needs a non-empty pattern string")
        try:
            re.compile(self.pattern)
        except re.error as e:
            raise SpecError(f"invalid regex {self.pattern!r}: {e}") from None
        if re.search(r"\(\?[=!<]", self.pattern):
            raise SpecError(
                f"regex {self.pattern!r} uses lookaround, which no token automaton can hold; "
                "rewrite it without (?=, (?!, (?<= or (?<!"
            )

    @property
    def key(self) -> str:
        return "regex:" + _digest(self.pattern)

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"


@dataclass(frozen=True, eq=False)
class Grammar(Spec):
    """A Lark grammar (text, a path, or the name of a grammar shipped in ``grammars/``).

    ``validators`` are extra checks (callables taking the text and returning a list of
    ``structgen.validators.Issue``) run on every result, e.g. semantic checks of a DSL.

    ``choices`` narrows named rules or terminals to fixed strings, e.g.
    ``choices={"METRIC": ["cpu.usage", "mem.free"]}``: the grammar's own definition of ``METRIC`` is replaced
    (Lark ``%override``) so only those names can be generated, while the validators still see the grammar.
    """

    source: str | Path
    validators: Sequence[Callable] = ()
    start: str = "start"
    choices: dict | None = None
    text: str = field(init=False)
    path: Path | None = field(init=False, default=None)
    kind = "grammar"

    def __post_init__(self):
        src, path = self.source, None
        if isinstance(src, Path) or (isinstance(src, str) and "\n" not in src and src.endswith(".lark")):
            p = Path(src)
            if not p.exists() and (GRAMMARS_DIR / p.name).exists():
                p = GRAMMARS_DIR / p.name
            if not p.exists():
                raise SpecError(f"grammar file {src} not found (looked here and in {GRAMMARS_DIR})")
            path, src = p, p.read_text()
        if not isinstance(src, str) or not src.strip():
            raise SpecError("Grammar needs Lark grammar text or a path to a .lark file")
        if self.choices:
            src = src.rstrip("\n") + "\n" + _choice_overrides(self.choices) + "\n"
        object.__setattr__(self, "text", src)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "validators", tuple(self.validators))
        _check_lark(src, self.start, path)

    @property
    def key(self) -> str:
        return "grammar:" + _digest(self.text, self.start)

    def __repr__(self) -> str:
        return f"Grammar({str(self.path) if self.path else _short(self.text)})"


def _choice_overrides(choices: dict) -> str:
    """``%override`` lines that replace each named rule/terminal with alternatives of fixed strings."""
    lines = []
    for name, options in choices.items():
        if not isinstance(name, str) or not re.fullmatch(r"_?[A-Za-z][A-Za-z0-9_]*", name):
            raise SpecError(f"choices: {name!r} is not a Lark rule or terminal name")
        opts = [options] if isinstance(options, str) else list(options or ())
        if not opts or not all(isinstance(o, str) and o for o in opts):
            raise SpecError(f"choices[{name!r}] must be a non-empty list of non-empty strings")
        alts = " | ".join(json.dumps(o, ensure_ascii=False) for o in dict.fromkeys(opts))
        lines.append(f"%override {name}: {alts}")
    return "\n".join(lines)


def _check_lark(text: str, start: str, path: Path | None) -> None:
    """Parse the grammar with Lark itself so syntax errors name the line, before any compile."""
    import lark

    try:
        lark.Lark(text, start=start, parser="earley")
    except lark.exceptions.GrammarError as e:
        raise GrammarSyntaxError(f"Lark grammar{' ' + str(path) if path else ''} is invalid: {e}") from None
    except lark.exceptions.LarkError as e:
        raise GrammarSyntaxError(
            f"Lark grammar{' ' + str(path) if path else ''} has a syntax error: {str(e).strip()}"
        ) from None


@dataclass(frozen=True, eq=False)
class Choice(Spec):
    """The output is exactly one of the given strings."""

    options: Sequence[str]
    kind = "choice"

    def __post_init__(self):
        opts = list(self.options) if not isinstance(self.options, str) else None
        if not opts or not all(isinstance(o, str) and o for o in opts):
            raise SpecError("Choice needs a non-empty list of non-empty strings, e.g. Choice(['yes', 'no'])")
        object.__setattr__(self, "options", tuple(dict.fromkeys(opts)))

    @property
    def key(self) -> str:
        return "choice:" + _digest(*self.options)

    def to_regex(self) -> str:
        return "(" + "|".join(re.escape(o) for o in sorted(self.options, key=len, reverse=True)) + ")"

    def __repr__(self) -> str:
        return f"Choice({list(self.options)!r})"


def _short(s: str, n: int = 60) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."


def as_spec(obj: Any) -> Spec:
    """Turn what a user passed (a spec, a dict schema, a pydantic class) into a Spec."""
    if isinstance(obj, Spec):
        return obj
    if isinstance(obj, dict) or (isinstance(obj, type) and hasattr(obj, "model_json_schema")):
        return JsonSchema(obj)
    raise SpecError(
        f"cannot use {type(obj).__name__} as a spec; pass sg.JsonSchema(...), sg.Regex(...), "
        "sg.Grammar(...), sg.Choice([...]), a dict schema or a pydantic model class"
    )
