"""``structgen eval``: the held-out split of every task family, decoded three ways, scored side by side.

Modes (one model, the same prompts):

* ``constrained`` — the spec's constraint, Fast-dLLM threshold commits (``threshold=0.9``), repair;
* ``unconstrained`` — the same sampler with no constraint (any text, EOS tail; no repair), validated after;
* ``one-token`` — constrained, one token per model call (``tokens_per_step=1``): the accuracy reference;
* ``grounded`` — constrained with ``ground=True``: JSON extraction and tool calls with every free-text
  string a part of the request made of whole words, every e-mail, date, patterned string and number one it
  states (``structgen.grounding``); SQL with every string literal a part of the question, a value its notes
  or the database state, or a date format, and joins along the foreign keys (``Sql.grounded``); alert rules
  with the channels, teams, label values and thresholds the description states (``validators.alerts.grounded``);
* ``grounded-one-token`` — ``grounded`` one token per model call: the accuracy reference of grounded
  decoding (not in ``DEFAULT_MODES``).

``threshold`` (``structgen eval --threshold``) is the commit threshold of the threshold modes
(``constrained``, ``unconstrained``, ``grounded``): fewer model calls below 0.9, at some accuracy.

Scores per family: **validity** (every validator of the spec passes) and **fallback** (the share of answers
a last resort wrote after the repair rounds ran out: SQL's strict fallback, its cut or its finisher); the family's
**accuracy** — tool calls: exact match (the same tool, and every argument the tool receives the same once its
defaults apply: ``same_call``); JSON extraction: field accuracy (share of the gold object's leaves
reproduced exactly, missing and extra fields count as wrong); SQL: execution
accuracy (the same rows as the gold query on the shop database, as a multiset unless the gold query orders
them); alert rules: semantically equal (equal canonical forms) — and **exact** (the text equals the target).
Speed: ``nfe`` per output token, the share of output tokens forced by the constraint (no model call), output
tokens per second on this machine.

Your own examples (``structgen eval --data FILE``, ``file_examples``): the held-out lines of a ``structgen
train --data`` file by family, scored the same way (regex lines: exact match), each decoded with its
family's canvas or one that holds its answer (``canvas_for``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from ..errors import StructgenError

MODES: dict[str, dict[str, Any]] = {
    "constrained": {"constrained": True, "threshold": 0.9, "tokens_per_step": None},
    "unconstrained": {"constrained": False, "threshold": 0.9, "tokens_per_step": None},
    "one-token": {"constrained": True, "threshold": None, "tokens_per_step": 1},
    "grounded": {"constrained": True, "threshold": 0.9, "tokens_per_step": None, "ground": True},
    "grounded-one-token": {"constrained": True, "threshold": None, "tokens_per_step": 1, "ground": True},
}

#: the modes an evaluation decodes unless told otherwise (``structgen eval``'s default too)
DEFAULT_MODES = ("constrained", "unconstrained", "one-token", "grounded")

#: the families ``grounded`` decodes: every family's spec can ground itself (``generate(..., ground=True)``)
GROUNDED_FAMILIES = ("json", "tool", "sql", "alert")

#: the canvas (``max_tokens``) each family is decoded with; training pads its targets to the same lengths
CANVAS: dict[str, int] = {"json": 128, "tool": 128, "sql": 128, "alert": 64}

ACCURACY_NAME = {"json": "field accuracy", "tool": "exact match", "sql": "execution accuracy",
                 "alert": "semantically equal", "regex": "exact match"}


@dataclass
class Scored:
    """One decoded example: its validity, accuracy (0..1) and exactness, and the run's counts."""

    family: str
    mode: str
    template: str
    valid: bool
    accuracy: float
    exact: bool
    output_tokens: int
    nfe: int
    forced: int
    seconds: float
    text: str
    error: str = ""
    fallback: bool = False  # the repair rounds ran out and a last resort wrote the text (Result.fallback)


@dataclass
class Row:
    """The scores of one family under one mode (rates in 0..1)."""

    family: str
    mode: str
    n: int
    valid: float
    accuracy: float
    exact: float
    fallback: float
    nfe_per_token: float
    forced_share: float
    tokens_per_s: float
    examples: list[Scored] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("examples")
        d["accuracy_name"] = ACCURACY_NAME.get(self.family, "accuracy")
        return d


# ----------------------------------------------------------------------------------------------------
# scoring
# ----------------------------------------------------------------------------------------------------


def _leaves(obj: Any, prefix: str = "") -> dict[str, Any]:
    """A JSON value flattened to ``{pointer: leaf}`` (arrays by index; an empty container is a leaf)."""
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_leaves(v, f"{prefix}/{k}"))
        return out
    if isinstance(obj, list) and obj:
        out = {}
        for i, v in enumerate(obj):
            out.update(_leaves(v, f"{prefix}/{i}"))
        return out
    return {prefix: obj}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))
    return a == b


def field_accuracy(got: Any, gold: Any) -> float:
    """Share of fields right: gold leaves reproduced exactly over the union of gold and produced leaves."""
    want, have = _leaves(gold), _leaves(got)
    keys = set(want) | set(have)
    if not keys:
        return 1.0
    return sum(1 for k in keys if k in want and k in have and _same(have[k], want[k])) / len(keys)


def same_call(spec, got: Any, gold: Any) -> bool:
    """``got`` is the ``gold`` call as the tool receives it: a valid call of ``spec``'s tools with the same
    name and the same arguments once the tool's defaults apply. ``"unit": "celsius"`` written out and left
    to its default are the same call of ``get_weather``; any other difference in a value is not."""
    try:
        have, want = spec.parse(got), spec.parse(gold)
    except StructgenError:
        return False
    return have.name == want.name and resolved_arguments(have) == resolved_arguments(want)


def resolved_arguments(call) -> dict:
    """The arguments ``call``'s tool receives: its pydantic model's fields with defaults filled (as JSON
    values), or, for a tool given as a JSON Schema, the arguments plus each missing property's ``default``."""
    tool = call.tool
    if tool is not None and tool.model is not None:
        return call.parsed.model_dump(mode="json")
    props = (tool.schema.get("properties") or {}) if tool is not None else {}
    return {**{k: p["default"] for k, p in props.items() if isinstance(p, dict) and "default" in p},
            **call.arguments}


def _rows(database, sql: str):
    from ..sql import run_query

    res = run_query(database, sql, max_rows=10_000, timeout_s=5.0)
    rows = [tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in res.rows]
    return rows if " ORDER BY " in sql else sorted(rows, key=repr)


def score(example, text: str, valid: bool) -> tuple[float, bool]:
    """(accuracy in 0..1, exact) of ``text`` against the example's gold answer."""
    exact = text == example.target
    fam = example.family
    if fam in ("json", "tool"):
        try:
            got = json.loads(text)
        except (json.JSONDecodeError, ValueError):
            return 0.0, False
        if fam == "json":
            return field_accuracy(got, example.gold), exact
        return float(same_call(example.spec, got, example.gold)), exact
    if fam == "sql":
        database = example.spec.database
        try:
            return float(_rows(database, text) == _rows(database, example.gold)), exact
        except StructgenError:
            return 0.0, exact
    if fam == "regex":  # a line of your own data (``--data``): the text is right or it is not
        return float(exact), exact
    if fam == "alert":
        from ..validators.alerts import parse_rule

        try:
            return float(parse_rule(text).canonical() == parse_rule(example.gold).canonical()), exact
        except StructgenError:
            return 0.0, exact
    raise StructgenError(f"no scorer for family {fam!r}")


# ----------------------------------------------------------------------------------------------------
# the run
# ----------------------------------------------------------------------------------------------------


def eval_generator(model, *, families: Iterable[str], modes: Iterable[str], split: str, block_length: int,
                   engine: str, stutter_gap: int, threshold: float = 0.9, own: dict | None = None):
    """The ``Generator`` an evaluation decodes with, once every argument is known to be usable: a bad mode,
    family, split or sampler setting raises ``StructgenError`` before anything is decoded or written
    (``own``: the examples of a data file by family, ``file_examples``; a family must have some)."""
    from ..sampler import Generator
    from .data import family_module
    from .data.base import check_split

    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise StructgenError(f"unknown eval mode(s) {unknown}; choose from {list(MODES)}")
    check_split(split)
    for fam in families if own is None else ():
        family_module(fam)  # ConfigError for a family that does not exist
    missing = [f for f in families if own is not None and not own.get(f)]
    if missing:
        have = ", ".join(f"{k} ({len(v)})" for k, v in own.items() if v) or "none"
        raise StructgenError(f"the data has no {split} lines of famil{'y' if len(missing) == 1 else 'ies'} "
                             f"{', '.join(missing)}; it has: {have}. Pass --families with those, or --split "
                             f"{'train' if split == 'heldout' else 'heldout'}")
    # the sampler's own settings check refuses a threshold out of (0, 1]
    return Generator(model, block_length=block_length, engine=engine, stutter_gap=stutter_gap, threshold=threshold)


def trained_sql_shapes(model) -> int:
    """The version of the composed SQL training data a structgen-trained ``model`` was trained on (its recipe's
    ``sql_shapes``; 1 for any other model), so ``--split train`` scores the templates it saw."""
    from pathlib import Path

    from ..models.default import RECIPE_FILE

    path = getattr(getattr(getattr(model, "model", None), "config", None), "_name_or_path", "") or ""
    recipe = Path(path) / RECIPE_FILE if path else None
    if recipe is None or not recipe.is_file():
        return 1
    try:
        return int(json.loads(recipe.read_text()).get("config", {}).get("sql_shapes", 1))
    except (ValueError, TypeError, AttributeError):
        return 1


def evaluate(model, *, families: Iterable[str] = ("json", "tool", "sql", "alert"), n: int = 50,
             seed: int = 1234, modes: Iterable[str] = DEFAULT_MODES, block_length: int = 32,
             split: str = "heldout", on_example: Callable[[Scored], None] | None = None,
             engine: str = "auto", stutter_gap: int = 2, threshold: float = 0.9,
             own: dict[str, list] | None = None) -> list[Row]:
    """Decode ``n`` examples of ``split`` (held-out templates by default; ``"train"`` measures how well the
    training templates were fitted) per family under each mode and score them (see the module doc).
    ``engine`` is the constrained modes' engine ("auto", "automaton" or "grammar"; unconstrained decoding
    always uses the automaton for its any-text language); ``stutter_gap`` is the sampler's no-stutter rule
    (``sampler.policy``; 0 = plain threshold commits); ``threshold`` the threshold modes' commit threshold.
    ``own``: the examples of a data file by family (``file_examples``), the first ``n`` of each decoded
    instead of generated ones. The training split's SQL templates are those of the model's recipe
    (``trained_sql_shapes``)."""
    from .data import examples as family_examples

    families, modes = list(families), list(modes)
    gen = eval_generator(model, families=families, modes=modes, split=split, block_length=block_length,
                         engine=engine, stutter_gap=stutter_gap, threshold=threshold, own=own)
    rows: list[Row] = []
    sql_shapes = trained_sql_shapes(model) if split == "train" else 1
    for fam in families:
        exs = family_examples(fam, split, n, seed, sql_shapes) if own is None else own[fam][:n]
        for mode in modes:
            settings = dict(MODES[mode])
            constrained = settings.pop("constrained")
            if settings["threshold"] is not None:
                settings["threshold"] = threshold
            if settings.get("ground") and fam not in GROUNDED_FAMILIES:
                continue
            scored: list[Scored] = []
            for ex in exs:
                t0 = time.perf_counter()
                try:
                    canvas = CANVAS[fam] if own is None else canvas_for(ex, gen)
                    r = gen.generate(ex.prompt, ex.spec, canvas, strict=False, constrained=constrained,
                                     **settings)
                except StructgenError as e:  # counted as invalid and wrong, never a crash of the run
                    s = Scored(fam, mode, ex.template, False, 0.0, False, 0, 0, 0, time.perf_counter() - t0,
                               "", error=str(e)[:300])
                else:
                    acc, exact = score(ex, r.text, r.valid)
                    s = Scored(fam, mode, ex.template, r.valid, acc, exact, r.n_output_tokens, r.nfe, r.n_forced,
                               r.timings["total_s"], r.text, "; ".join(r.errors)[:300], r.fallback)
                scored.append(s)
                if on_example is not None:
                    on_example(s)
            rows.append(_row(fam, mode, scored))
    return rows


def file_examples(path, tools: Any = None, split: str = "heldout") -> dict[str, list]:
    """The examples of a ``structgen train --data`` file (``from_file.load_file``) of ``split``: its
    ``"split": "heldout"`` lines, or its training lines (``"train"``), by family in file order."""
    from .data.base import check_split
    from .data.from_file import load_file

    check_split(split)
    train, heldout = load_file(path, tools, need_train=False)  # an empty split is the caller's to refuse
    out: dict[str, list] = {}
    for ex in heldout if split == "heldout" else train:
        out.setdefault(ex.family, []).append(ex)
    return out


def canvas_for(example, gen) -> int:
    """The canvas a line of a data file is decoded with: its family's (``CANVAS``; 64 for a regex), or when
    its answer is longer, the answer's length in tokens and room for 16 more, rounded up to a multiple of 32."""
    size, n = CANVAS.get(example.family, 64), len(gen.vocab.encode(example.target))
    return size if n + 16 <= size else -(-(n + 16) // 32) * 32


def _row(fam: str, mode: str, scored: list[Scored]) -> Row:
    k = max(1, len(scored))
    out_tokens = sum(s.output_tokens for s in scored)
    return Row(fam, mode, len(scored), sum(s.valid for s in scored) / k, sum(s.accuracy for s in scored) / k,
               sum(s.exact for s in scored) / k, sum(s.fallback for s in scored) / k,
               sum(s.nfe for s in scored) / max(1, out_tokens),
               sum(s.forced for s in scored) / max(1, out_tokens),
               out_tokens / max(1e-9, sum(s.seconds for s in scored)), scored)
