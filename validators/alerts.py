"""Alert rules (``grammars/alerts.lark``): the typed AST, the catalog, the semantic validator and the spec.

This module owns everything that gives the alert-rule language its meaning:

- :func:`parse_rule` turns one rule into an :class:`AlertRule` (dataclasses: :class:`Comparison`,
  :class:`LabelMatch`, :class:`Not`, :class:`And`, :class:`Or`, :class:`Notify`, :class:`Page`, ...);
  ``AlertRule.canonical()`` is its canonical text, and two rules are equal when their canonical texts are
  (list order, operand order, redundant parentheses, double negation, ``60s`` vs ``1m`` do not matter).
- :class:`AlertCatalog` lists what rules may refer to: metrics (unit, valid range), label keys (and their
  known values), channels, teams, and the longest window and hold time.
- :class:`AlertRulesValidator` checks a rule against a catalog and reports each problem as an
  :class:`~structgen.validators.Issue` whose span is the offending part of the text (what the sampler
  re-masks and denoises again). It never raises: text that does not parse has no semantic issues (the
  Lark validator reports the syntax).
- :func:`alerts_spec` is the shipped grammar with the validator attached and, by default, the catalog
  written into the grammar itself: names and durations through ``Grammar(..., choices=...)``
  (:meth:`AlertCatalog.choices`), per-metric thresholds and per-key label values through ``%override``
  rules (:meth:`AlertCatalog.grammar_rules`).

    from structgen.validators.alerts import AlertCatalog, alerts_spec
    spec = alerts_spec(AlertCatalog.load("examples/alerts/catalog.json"))
    gen.generate("page ops when cpu is above 90% for 5 minutes", spec, max_tokens=64)
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator, Mapping, Union

import lark
from lark.exceptions import LarkError

from structgen.errors import SpecError

from .base import Issue, Span

__all__ = [
    "AGGREGATIONS", "SEVERITIES", "UNITS", "GRAMMAR_PATH",
    "Duration", "Metric", "Threshold", "Comparison", "LabelMatch", "Not", "And", "Or", "Condition",
    "Notify", "Page", "Action", "AlertRule", "parse_rule",
    "MetricInfo", "AlertCatalog", "AlertRulesValidator", "alerts_spec", "tidy_durations",
]


def _grammar_path() -> Path:
    from structgen.grammars import grammar_path

    return grammar_path("alerts")


#: The shipped grammar this module parses with.
GRAMMAR_PATH = _grammar_path()

AGGREGATIONS = ("avg", "min", "max", "sum", "count", "p95", "p99")
SEVERITIES = ("low", "medium", "high", "critical")
#: Threshold units the grammar can write; ``ms``/``s`` and ``KB``/``MB``/``GB`` (powers of 1000) convert.
UNITS = ("%", "ms", "s", "KB", "MB", "GB")
_SCALE = {"ms": ("time", Decimal("0.001")), "s": ("time", Decimal(1)),
          "KB": ("bytes", Decimal(10) ** 3), "MB": ("bytes", Decimal(10) ** 6), "GB": ("bytes", Decimal(10) ** 9)}
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Words of the language; a catalog may not use them as label keys.
RESERVED = frozenset({"when", "then", "for", "and", "or", "not", "in", "notify", "page", "severity"})
_DEFAULT_LIMIT = 7 * 86400

# ----------------------------------------------------------------------------------------------------
# the AST
# ----------------------------------------------------------------------------------------------------


def _nospan():
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Duration:
    """A duration such as ``5m``: ``amount`` of ``unit`` (``s``, ``m``, ``h`` or ``d``)."""

    amount: int
    unit: str
    span: Span | None = _nospan()

    @classmethod
    def parse(cls, text: str, span: Span | None = None) -> "Duration":
        m = re.fullmatch(r"(0|[1-9][0-9]*)([smhd])", text.strip()) if isinstance(text, str) else None
        if not m:
            raise SpecError(f"{text!r} is not a duration; write a whole number and a unit s, m, h or d, e.g. 5m")
        return cls(int(m.group(1)), m.group(2), span)

    @property
    def seconds(self) -> int:
        return self.amount * _SECONDS[self.unit]

    def canonical(self) -> str:
        """The same duration in the largest unit that holds it exactly (``60s`` -> ``1m``; zero is ``0s``)."""
        s = self.seconds
        for unit in ("d", "h", "m"):
            if s and s % _SECONDS[unit] == 0:
                return f"{s // _SECONDS[unit]}{unit}"
        return f"{s}s"

    def __str__(self) -> str:
        return f"{self.amount}{self.unit}"


@dataclass(frozen=True)
class Metric:
    """A metric expression: ``name``, optionally inside an ``aggregation`` over a ``window``."""

    name: str
    aggregation: str | None = None
    window: Duration | None = None
    span: Span | None = _nospan()
    name_span: Span | None = _nospan()

    def canonical(self) -> str:
        if self.aggregation is None:
            return self.name
        window = f"[{self.window.canonical()}]" if self.window is not None else ""
        return f"{self.aggregation}({self.name}{window})"


@dataclass(frozen=True)
class Threshold:
    """The number a metric is compared with, and its unit (``None`` when none is written)."""

    value: Decimal
    unit: str | None = None
    span: Span | None = _nospan()

    def canonical(self) -> str:
        v = self.value.normalize()
        text = "0" if v == 0 else format(v, "f")
        return text + (self.unit or "")


@dataclass(frozen=True)
class Comparison:
    """``metric op threshold``, e.g. ``avg(cpu.usage[10m]) > 90%``."""

    metric: Metric
    op: str
    threshold: Threshold
    span: Span | None = _nospan()

    def canonical(self) -> str:
        return f"{self.metric.canonical()} {self.op} {self.threshold.canonical()}"


_NEGATE = {"==": "!=", "!=": "==", "in": "not in", "not in": "in"}


@dataclass(frozen=True)
class LabelMatch:
    """A label test: ``key op values`` with ``op`` one of ``==``, ``!=`` (one value), ``in``, ``not in``."""

    key: str
    op: str
    values: tuple[str, ...]
    span: Span | None = _nospan()
    key_span: Span | None = _nospan()
    value_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)

    def canonical(self) -> str:
        values = sorted(set(self.values))
        op = self.op
        if op in ("in", "not in") and len(values) == 1:
            op = "==" if op == "in" else "!="
        if op in ("==", "!="):
            return f"{self.key} {op} {_quote(values[0])}"
        return f"{self.key} {op} [" + ", ".join(_quote(v) for v in values) + "]"


@dataclass(frozen=True)
class Not:
    """``not operand``."""

    operand: "Condition"
    span: Span | None = _nospan()


@dataclass(frozen=True)
class And:
    """All ``operands`` hold (two or more)."""

    operands: tuple["Condition", ...]
    span: Span | None = _nospan()


@dataclass(frozen=True)
class Or:
    """At least one of ``operands`` holds (two or more)."""

    operands: tuple["Condition", ...]
    span: Span | None = _nospan()


Condition = Union[Comparison, LabelMatch, Not, And, Or]


@dataclass(frozen=True)
class Notify:
    """``notify "channel" severity level``."""

    channel: str
    severity: str
    span: Span | None = _nospan()
    channel_span: Span | None = _nospan()

    def canonical(self) -> str:
        return f"notify {_quote(self.channel)} severity {self.severity}"


@dataclass(frozen=True)
class Page:
    """``page "team"``."""

    team: str
    span: Span | None = _nospan()
    team_span: Span | None = _nospan()

    def canonical(self) -> str:
        return f"page {_quote(self.team)}"


Action = Union[Notify, Page]


@dataclass(frozen=True, eq=False)
class AlertRule:
    """One alert rule: fire ``actions`` when ``condition`` has held for ``hold`` (``None``: at once).

    Rules compare equal (and hash alike) when their :meth:`canonical` texts are equal; ``text`` is the
    source the rule was parsed from (empty when built by hand).
    """

    condition: Condition
    hold: Duration | None
    actions: tuple[Action, ...]
    text: str = ""

    def canonical(self) -> str:
        """The canonical text: one space between words, ``and``/``or`` flattened with their operands
        sorted and deduplicated, double ``not`` removed, ``not`` of a label match folded into it, list
        values sorted and deduplicated (a one-value list written as ``==``/``!=``), numbers without
        trailing zeros, durations in their largest exact unit, the hold (unless zero) after the
        condition, actions sorted and deduplicated. It parses back to an equal rule."""
        cond = _render(_normalize(self.condition), 0)
        hold = f" for {self.hold.canonical()}" if self.hold is not None and self.hold.seconds else ""
        actions = ", ".join(sorted({a.canonical() for a in self.actions}))
        return f"when {cond}{hold} then {actions}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AlertRule):
            return NotImplemented
        return self.canonical() == other.canonical()

    def __hash__(self) -> int:
        return hash(self.canonical())

    def conditions(self) -> Iterator[Condition]:
        """Every node of the condition, outermost first."""
        stack = [self.condition]
        while stack:
            node = stack.pop()
            yield node
            if isinstance(node, Not):
                stack.append(node.operand)
            elif isinstance(node, (And, Or)):
                stack.extend(reversed(node.operands))

    def comparisons(self) -> list[Comparison]:
        return [c for c in self.conditions() if isinstance(c, Comparison)]

    def label_matches(self) -> list[LabelMatch]:
        return [c for c in self.conditions() if isinstance(c, LabelMatch)]


def _quote(s: str) -> str:
    return f'"{s}"'


def _normalize(node: Condition) -> Condition:
    """The condition with the rewrites :meth:`AlertRule.canonical` describes (spans dropped)."""
    if isinstance(node, Not):
        inner = _normalize(node.operand)
        if isinstance(inner, Not):
            return inner.operand
        if isinstance(inner, LabelMatch):
            return LabelMatch(inner.key, _NEGATE[inner.op], inner.values)
        return Not(inner)
    if isinstance(node, (And, Or)):
        kind = type(node)
        flat: dict[str, Condition] = {}
        for op in node.operands:
            op = _normalize(op)
            for leaf in (op.operands if isinstance(op, kind) else (op,)):
                flat.setdefault(_render(leaf, 0), leaf)
        if len(flat) == 1:
            return next(iter(flat.values()))
        return kind(tuple(flat[k] for k in sorted(flat)))
    if isinstance(node, LabelMatch):
        values = tuple(sorted(set(node.values)))
        op = node.op
        if op in ("in", "not in") and len(values) == 1:
            op = "==" if op == "in" else "!="
        return LabelMatch(node.key, op, values)
    return node


_PREC = {Or: 1, And: 2, Not: 3}


def _render(node: Condition, parent: int) -> str:
    """Text of a condition, parenthesised only where the parent binds tighter."""
    prec = _PREC.get(type(node), 4)
    if isinstance(node, Or):
        text = " or ".join(_render(o, 1) for o in node.operands)
    elif isinstance(node, And):
        text = " and ".join(_render(o, 2) for o in node.operands)
    elif isinstance(node, Not):
        text = "not " + _render(node.operand, 3)
    else:
        text = node.canonical()
    return f"({text})" if prec < parent or (parent == 3 and prec < 4) else text


# ----------------------------------------------------------------------------------------------------
# parsing
# ----------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    return lark.Lark(GRAMMAR_PATH.read_text(), parser="earley", propagate_positions=True)


def _span(node) -> Span:
    if isinstance(node, lark.Token):
        return (node.start_pos, node.end_pos)
    return (node.meta.start_pos, node.meta.end_pos)


class _Builder:
    """Lark tree of ``alerts.lark`` -> AST."""

    def rule(self, tree: lark.Tree, text: str) -> AlertRule:
        kids = tree.children
        if tree.data == "rule":
            cond = self.cond(kids[0])
            hold = self.hold(kids[1]) if len(kids) == 3 else None
        else:  # rule_held_first: comparison hold rest
            first, hold, rest = self.cond(kids[0]), self.hold(kids[1]), kids[2]
            ands, ors = [first], []
            for tail in rest.children:
                (ands if tail.data == "and_tail" else ors).append(self.cond(tail.children[0]))
            start = _span(kids[0])[0]
            end_and = _span(rest.children[len(ands) - 2])[1] if len(ands) > 1 else _span(kids[0])[1]
            head = And(tuple(ands), (start, end_and)) if len(ands) > 1 else first
            cond = Or((head, *ors), (start, _span(rest)[1])) if ors else head
        actions = tuple(self.action(a) for a in kids[-1].children)
        return AlertRule(cond, hold, actions, text)

    def hold(self, tree: lark.Tree) -> Duration:
        tok = tree.children[0]
        return Duration.parse(str(tok), _span(tok))

    def cond(self, node) -> Condition:
        kind, kids, span = node.data, node.children, _span(node)
        if kind == "or_cond":
            return Or(tuple(self.cond(k) for k in kids), span)
        if kind == "and_cond":
            return And(tuple(self.cond(k) for k in kids), span)
        if kind == "negation":
            return Not(self.cond(kids[0]), span)
        if kind == "comparison":
            metric, op, number = kids[0], kids[1], kids[2]
            unit = str(kids[3]) if len(kids) > 3 else None
            return Comparison(self.metric(metric), str(op), Threshold(Decimal(str(number)), unit,
                                                                      (number.start_pos, _span(kids[-1])[1])), span)
        if kind in ("label_match", "label_in", "label_not_in"):
            key = kids[0]
            if kind == "label_match":
                op, values = str(kids[1]), [kids[2].children[0]]
            else:
                op = "in" if kind == "label_in" else "not in"
                values = [v.children[0] for v in kids[1].children]
            return LabelMatch(str(key), op, tuple(str(v) for v in values), span, _span(key),
                              tuple(_span(v) for v in values))
        raise SpecError(f"alerts grammar: unexpected node {kind!r}; the grammar and validators/alerts.py disagree")

    def metric(self, tree: lark.Tree) -> Metric:
        kids = tree.children
        if len(kids) == 1:
            return Metric(str(kids[0]), None, None, _span(tree), _span(kids[0]))
        window = None
        if len(kids) == 3:
            tok = kids[2].children[0]
            window = Duration.parse(str(tok), _span(tok))
        return Metric(str(kids[1]), str(kids[0]), window, _span(tree), _span(kids[1]))

    def action(self, tree: lark.Tree) -> Action:
        kids = tree.children
        if tree.data == "notify":
            return Notify(str(kids[0]), str(kids[1]), _span(tree), _span(kids[0]))
        return Page(str(kids[0]), _span(tree), _span(kids[0]))


def _parse(text: str) -> AlertRule:
    tree = _lark().parse(text)
    return _Builder().rule(tree.children[0], text)


def parse_rule(text: str) -> AlertRule:
    """Parse one rule of ``grammars/alerts.lark`` into an :class:`AlertRule` (spans are offsets in ``text``).

    Raises ``SpecError`` naming the line, column and what was expected when ``text`` is not a rule."""
    if not isinstance(text, str):
        raise SpecError(f"parse_rule needs the rule text (str), got {type(text).__name__}")
    try:
        return _parse(text)
    except LarkError:
        from .lark_check import LarkValidator

        issues = LarkValidator(GRAMMAR_PATH.read_text())(text)
        why = issues[0].message if issues else "it does not parse"
        raise SpecError(f"not an alert rule: {why}; write e.g. "
                        "'when avg(cpu.usage) > 90 for 5m then notify \"#ops\" severity high'") from None
    except RecursionError:
        raise SpecError("the rule is nested too deeply to parse; remove redundant parentheses or `not`s") from None


# ----------------------------------------------------------------------------------------------------
# the catalog
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricInfo:
    """What the catalog knows of one metric: its ``unit`` and valid range ``[min, max]`` (each optional)."""

    name: str
    unit: str | None = None
    min: Decimal | None = None
    max: Decimal | None = None
    description: str = ""


@functools.lru_cache(maxsize=1)
def _terminal_res() -> dict[str, re.Pattern]:
    p = _lark()
    return {name: re.compile(p.get_terminal(name).pattern.to_regexp())
            for name in ("METRIC", "LABEL", "VALUE", "CHANNEL", "TEAM")}


_CATALOG_KEYS = ("metrics", "labels", "channels", "teams", "limits")
_METRIC_KEYS = ("unit", "min", "max", "description")
_LIMIT_KEYS = ("max_window", "max_hold")


@dataclass(frozen=True, eq=False)
class AlertCatalog:
    """What alert rules may refer to.

    ``metrics`` (name -> :class:`MetricInfo`, at least one); ``labels`` (key -> known values, or ``None``
    for any value; ``None`` as a whole: label keys are not checked); ``channels`` and ``teams``
    (``None``: not checked); ``max_window`` and ``max_hold`` (seconds, default 7 days): the longest
    aggregation window and ``for`` hold time. Build it with :meth:`from_dict` or :meth:`load`; as JSON::

        {"metrics": {"cpu.usage": {"unit": "%", "min": 0, "max": 100}, "http.requests.5xx": {"min": 0}},
         "labels": {"host": ["web-1", "web-2"], "service": null},
         "channels": ["#ops"], "teams": ["ops"], "limits": {"max_window": "1d", "max_hold": "7d"}}
    """

    metrics: Mapping[str, MetricInfo]
    labels: Mapping[str, tuple[str, ...] | None] | None = None
    channels: tuple[str, ...] | None = None
    teams: tuple[str, ...] | None = None
    max_window: int = _DEFAULT_LIMIT
    max_hold: int = _DEFAULT_LIMIT

    @classmethod
    def load(cls, path: str | Path) -> "AlertCatalog":
        """Read a catalog from a JSON file."""
        try:
            data = json.loads(Path(path).read_text())
        except OSError as e:
            raise SpecError(f"cannot read the alert catalog {path}: {e.strerror or e}") from None
        except json.JSONDecodeError as e:
            raise SpecError(f"alert catalog {path} is not valid JSON: {e.msg} at line {e.lineno} "
                            f"column {e.colno}") from None
        return cls.from_dict(data, where=str(path))

    @classmethod
    def coerce(cls, obj: Any) -> "AlertCatalog":
        """An ``AlertCatalog`` from a catalog, a dict or the path of a JSON file."""
        if isinstance(obj, AlertCatalog):
            return obj
        if isinstance(obj, Mapping):
            return cls.from_dict(obj)
        if isinstance(obj, (str, Path)):
            return cls.load(obj)
        raise SpecError(f"an alert catalog must be an AlertCatalog, a dict or a JSON file path, "
                        f"got {type(obj).__name__}")

    @classmethod
    def from_dict(cls, data: Mapping, *, where: str = "alert catalog") -> "AlertCatalog":
        """Build a catalog from its JSON form (see the class docstring); ``SpecError`` names what is wrong."""
        if not isinstance(data, Mapping):
            raise SpecError(f"{where}: expected a JSON object with {', '.join(_CATALOG_KEYS)}, "
                            f"got {type(data).__name__}")
        _no_unknown(data, _CATALOG_KEYS, where)
        res = _terminal_res()
        metrics = _metrics(data.get("metrics"), where, res["METRIC"])
        labels = None
        if data.get("labels") is not None:
            raw = data["labels"]
            if not isinstance(raw, Mapping) or not raw:
                raise SpecError(f"{where}: labels must be a non-empty object mapping each label key to its "
                                "values (a list) or null (any value); leave labels out to allow any key")
            labels = {}
            for key, values in raw.items():
                _check_name(key, res["LABEL"], f"{where}: label key",
                            "label keys are a lowercase letter then lowercase letters, digits or _ (at most 24 in all)")
                if key in RESERVED:
                    raise SpecError(f"{where}: label key {key!r} is a keyword of the rule language; rename it")
                labels[key] = None if values is None else _names(values, res["VALUE"], f"{where}: labels[{key!r}]")
        channels = _names(data["channels"], res["CHANNEL"], f"{where}: channels") \
            if data.get("channels") is not None else None
        teams = _names(data["teams"], res["TEAM"], f"{where}: teams") if data.get("teams") is not None else None
        limits = data.get("limits") or {}
        if not isinstance(limits, Mapping):
            raise SpecError(f"{where}: limits must be an object such as "
                            '{"max_window": "1d", "max_hold": "7d"}')
        _no_unknown(limits, _LIMIT_KEYS, f"{where}: limits")
        lim = {k: _limit(limits.get(k, _DEFAULT_LIMIT), f"{where}: limits.{k}") for k in _LIMIT_KEYS}
        return cls(metrics, labels, channels, teams, lim["max_window"], lim["max_hold"])

    def choices(self) -> dict[str, list[str]]:
        """``Grammar(choices=...)`` that writes the catalog's names into the grammar: metric names, hold
        times and windows (whole units up to the limits: 1-59s, 1-59m, 1-23h, 1d...) always; channels,
        teams and label keys when listed; label values when every label key lists its values."""
        out: dict[str, list[str]] = {"METRIC": list(self.metrics), "HOLD": tidy_durations(self.max_hold),
                                     "WINDOW": tidy_durations(self.max_window)}
        if self.channels is not None:
            out["CHANNEL"] = list(self.channels)
        if self.teams is not None:
            out["TEAM"] = list(self.teams)
        if self.labels is not None:
            out["LABEL"] = list(self.labels)
            if all(v is not None for v in self.labels.values()):
                out["VALUE"] = list(dict.fromkeys(v for vs in self.labels.values() for v in vs))
        return out

    def grammar_rules(self) -> str:
        """Lark rules that narrow what ``choices()`` cannot, because it depends on context: thresholds
        within each metric's range and in its unit (per aggregation: a ``sum`` keeps only the sign of the
        range, a ``count`` is a whole number of samples), and each label key's own values. They
        ``%override`` the grammar's ``comparison`` and ``label_match`` rules with a subset of their
        language; appended to ``alerts.lark`` together with ``choices()`` (see :func:`alerts_spec`)."""
        lines: list[str] = []
        comparisons: list[str] = []
        values: dict[tuple, list[str]] = {}
        sums: dict[tuple, list[str]] = {}
        for info in self.metrics.values():
            lo = info.min if info.min is not None else -_INF
            hi = info.max if info.max is not None else _INF
            values.setdefault((info.unit, lo, hi), []).append(info.name)
            sums.setdefault((info.unit, *_sum_range(lo, hi)), []).append(info.name)
        lines.append('NARROW_AGG: "avg" | "min" | "max" | "p95" | "p99"')
        for i, ((unit, lo, hi), names) in enumerate(values.items()):
            lines.append(f'narrow_metric_{i}: NARROW_METRIC_{i} | NARROW_AGG "(" NARROW_METRIC_{i} window? ")"')
            lines.append(f"NARROW_METRIC_{i}: {_alternatives(names)}")
            thr = _threshold(lines, f"NARROW_THRESHOLD_{i}", lo, hi, unit)
            comparisons.append(f'narrow_metric_{i} " " CMP " " {thr}')
        for i, ((unit, lo, hi), names) in enumerate(sums.items()):
            lines.append(f"NARROW_SUM_METRIC_{i}: {_alternatives(names)}")
            thr = _threshold(lines, f"NARROW_SUM_THRESHOLD_{i}", lo, hi, unit)
            comparisons.append(f'"sum" "(" NARROW_SUM_METRIC_{i} window? ")" " " CMP " " {thr}')
        thr = _threshold(lines, "NARROW_COUNT_THRESHOLD", Decimal(0), _INF, None)
        comparisons.append(f'"count" "(" METRIC window? ")" " " CMP " " {thr}')
        head = ["%override comparison: " + "\n    | ".join(comparisons)]
        if self.labels is not None:
            matches, free = [], [k for k, vs in self.labels.items() if vs is None]
            for i, (key, vs) in enumerate((k, vs) for k, vs in self.labels.items() if vs is not None):
                v, k = f"narrow_value_{i}", f"NARROW_LABEL_{i}"
                lines.append(f'{v}: "\\"" NARROW_VALUE_{i} "\\""')
                lines.append(f"NARROW_VALUE_{i}: {_alternatives(vs)}")
                lines.append(f"{k}: {_alternatives([key])}")
                items = f'"[" {v} (", " {v})* "]"'
                matches += [f'{k} " " EQ " " {v}', f'{k} " " "in" " " {items}', f'{k} " " "not" " " "in" " " {items}']
            if free:
                lines.append(f"NARROW_FREE_LABEL: {_alternatives(free)}")
                items = '"[" value (", " value)* "]"'
                matches += ['NARROW_FREE_LABEL " " EQ " " value', f'NARROW_FREE_LABEL " " "in" " " {items}',
                            f'NARROW_FREE_LABEL " " "not" " " "in" " " {items}']
            head.append("%override label_match: " + "\n    | ".join(matches))
        return "\n".join(head + lines) + "\n"


def tidy_durations(limit: int) -> list[str]:
    """Durations up to ``limit`` seconds in whole units as people write them: 1-59s, 1-59m, 1-23h, then
    days (at most 400)."""
    out = []
    for unit, top in (("s", 59), ("m", 59), ("h", 23), ("d", 400)):
        out += [f"{n}{unit}" for n in range(1, top + 1) if n * _SECONDS[unit] <= limit]
    return out


def _alternatives(names) -> str:
    return " | ".join(json.dumps(n) for n in dict.fromkeys(names))


def _sum_range(lo: Decimal, hi: Decimal) -> tuple[Decimal, Decimal]:
    """The range of a sum of values in ``[lo, hi]``: only the sign survives."""
    return (Decimal(0) if lo >= 0 else -_INF), (Decimal(0) if hi <= 0 else _INF)


_NARROW_MAX = 999999


def _ints(a: int, b: int) -> str:
    """A regex for the whole numbers ``a..b`` (``0 <= a <= b``) whose first match is the longest one.

    Lark's Earley lexer takes a terminal's first regex match (Python tries alternatives left to right)
    where llguidance takes the longest, so alternatives go from the most digits to the fewest; a
    ``0|1..9`` range is written as one greedy run of digits."""
    from structgen.constraints.placeholders import int_range_regex

    k = len(str(b))
    if b == 10**k - 1 and a in (0, 1):
        run = "[1-9]" + (f"[0-9]{{0,{k - 1}}}" if k > 1 else "")
        return f"({run}|0)" if a == 0 else f"({run})"
    groups = []
    for n in range(k, len(str(a)) - 1, -1):  # one regex per number of digits, longest first
        lo, hi = max(a, 10 ** (n - 1) if n > 1 else 0), min(b, 10**n - 1)
        if lo <= hi:
            groups.append(int_range_regex(lo, hi))
    return "(" + "|".join(groups) + ")"


def _number_regex(lo: Decimal, hi: Decimal) -> str | None:
    """A regex for numbers in ``[lo, hi]`` and within +-999999.99, written as the grammar writes them
    with at most two decimals; ``None`` when the range holds no whole number (it is then not narrowed)."""
    dec, parts = r"(\.[0-9]{1,2})?", []

    def half(a: int, top: Decimal, sign: str) -> None:
        """Magnitudes from ``a`` up to ``top``: floor(top) itself exact (first: its match is the longest),
        then any decimals below it."""
        if top >= _NARROW_MAX:
            parts.append(sign + _ints(a, _NARROW_MAX) + dec)
            return
        b = math.floor(top)
        if a <= b:
            parts.append(f"{sign}{b}")
        if a <= b - 1:
            parts.append(sign + _ints(a, b - 1) + dec)

    if hi >= 0:
        half(max(math.ceil(lo), 0) if lo > -_INF else 0, hi, "")
    if lo < 0:
        half(max(math.ceil(-hi), 1) if hi < 0 else 1, -lo, "-")
    return "(" + "|".join(parts) + ")" if parts else None


def _threshold(lines: list[str], name: str, lo: Decimal, hi: Decimal, unit: str | None) -> str:
    """Define terminal ``name`` for thresholds in ``[lo, hi]`` in ``unit``; the grammar symbols to use."""
    rx = _number_regex(lo, hi)
    if rx is None:
        return "NUMBER UNIT?"
    if unit in UNITS:
        rx += f"({re.escape(unit)})?"
    lines.append(f"{name}: /{rx}/")
    return name


def _no_unknown(data: Mapping, allowed: tuple[str, ...], where: str) -> None:
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(allowed)}")


def _check_name(name: Any, rx: re.Pattern, what: str, rule: str) -> None:
    if not isinstance(name, str) or not rx.fullmatch(name):
        raise SpecError(f"{what} {name!r} cannot be written in an alert rule: {rule}")


_TEXT_RULE = ("quoted names are printable ASCII without '\"' or '\\', words of 1-24 characters separated "
              "by single spaces, at most 4 words")


def _names(values: Any, rx: re.Pattern, where: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
        raise SpecError(f"{where}: expected a non-empty list of names, got {values!r}; leave it out (or null) "
                        "to allow any")
    for v in values:
        _check_name(v, rx, f"{where}: name", _TEXT_RULE)
    return tuple(dict.fromkeys(values))


def _number(v: Any, where: str) -> Decimal | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise SpecError(f"{where}: expected a finite number or null, got {v!r}")
    return Decimal(str(v))


def _metrics(raw: Any, where: str, rx: re.Pattern) -> dict[str, MetricInfo]:
    if isinstance(raw, (list, tuple)):
        raw = {name: None for name in raw}
    if not isinstance(raw, Mapping) or not raw:
        raise SpecError(f"{where}: metrics must be a non-empty object mapping each metric name to "
                        "{\"unit\", \"min\", \"max\", \"description\"} (each optional), or a list of names")
    out = {}
    for name, info in raw.items():
        _check_name(name, rx, f"{where}: metric name",
                    "names are lowercase words (letters, digits, _) joined by dots, e.g. cpu.usage")
        info = {} if info is None else info
        if not isinstance(info, Mapping):
            raise SpecError(f"{where}: metrics[{name!r}] must be an object with unit/min/max/description or null")
        _no_unknown(info, _METRIC_KEYS, f"{where}: metrics[{name!r}]")
        unit = info.get("unit")
        if unit is not None and (not isinstance(unit, str) or not unit):
            raise SpecError(f"{where}: metrics[{name!r}].unit must be a non-empty string such as \"%\" or \"ms\"")
        lo = _number(info.get("min"), f"{where}: metrics[{name!r}].min")
        hi = _number(info.get("max"), f"{where}: metrics[{name!r}].max")
        if lo is not None and hi is not None and lo > hi:
            raise SpecError(f"{where}: metrics[{name!r}] has min {lo} above max {hi}; swap them")
        desc = info.get("description", "")
        if not isinstance(desc, str):
            raise SpecError(f"{where}: metrics[{name!r}].description must be a string")
        out[name] = MetricInfo(name, unit, lo, hi, desc)
    return out


def _limit(v: Any, where: str) -> int:
    if isinstance(v, str):
        try:
            seconds = Duration.parse(v).seconds
        except SpecError as e:
            raise SpecError(f"{where}: {e}") from None
    elif isinstance(v, int) and not isinstance(v, bool):
        seconds = v
    else:
        raise SpecError(f"{where}: expected a duration such as \"7d\" or a number of seconds, got {v!r}")
    if seconds <= 0:
        raise SpecError(f"{where}: must be longer than zero, got {v!r}")
    return seconds


# ----------------------------------------------------------------------------------------------------
# the validator
# ----------------------------------------------------------------------------------------------------

_INF = Decimal("Infinity")


def _fmt(d: Decimal) -> str:
    if d in (_INF, -_INF):
        return "∞" if d > 0 else "-∞"
    v = d.normalize()
    return "0" if v == 0 else format(v, "f")


def _fmt_duration(seconds: int) -> str:
    return Duration(seconds, "s").canonical()


def _suggest(name: str, known) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    shown = ", ".join(list(known)[:8]) + (", ..." if len(known) > 8 else "")
    return (f" (did you mean {close[0]!r}?)" if close else "") + f"; known: {shown}"


class AlertRulesValidator:
    """Checks alert rules against an :class:`AlertCatalog` (or a dict / JSON path of one).

    Reports unknown metrics, channels, teams, label keys and values; thresholds outside a metric's range
    or in the wrong unit; comparisons that can never be true (or are always true) given the range;
    aggregation windows and hold times that are zero or longer than the catalog's limits; duplicate
    actions and duplicate list values. Each issue's span is the offending part. Never raises.
    """

    name = "alerts"

    def __init__(self, catalog: AlertCatalog | Mapping | str | Path):
        self.catalog = AlertCatalog.coerce(catalog)

    def __repr__(self) -> str:
        return f"AlertRulesValidator({len(self.catalog.metrics)} metrics)"

    def __call__(self, text: str) -> list[Issue]:
        if not isinstance(text, str):
            return []
        try:
            rule = _parse(text)
        except LarkError:
            return []  # the Lark validator reports the syntax
        except RecursionError:
            return [Issue("the rule is nested too deeply to check; remove redundant parentheses or `not`s",
                          None, "condition", self.name)]
        return self.check(rule)

    def check(self, rule: AlertRule) -> list[Issue]:
        """The issues of a parsed rule (spans index ``rule.text``)."""
        issues: list[Issue] = []
        cat = self.catalog

        def issue(msg: str, span: Span | None, path: str) -> None:
            issues.append(Issue(msg, span, path, self.name))

        for c in rule.comparisons():
            self._comparison(c, issue)
        for m in rule.label_matches():
            if cat.labels is not None and m.key not in cat.labels:
                issue(f"unknown label key {m.key!r}{_suggest(m.key, cat.labels)}", m.key_span, "label")
                known_values = None
            else:
                known_values = cat.labels.get(m.key) if cat.labels is not None else None
            seen: set[str] = set()
            for value, span in zip(m.values, m.value_spans or (None,) * len(m.values)):
                if known_values is not None and value not in known_values:
                    issue(f"unknown value {value!r} for label {m.key!r}{_suggest(value, known_values)}", span,
                          f"label/{m.key}")
                elif value in seen:
                    issue(f"{value!r} is listed twice for label {m.key!r}; list each value once", span,
                          f"label/{m.key}")
                seen.add(value)
        if rule.hold is not None:
            h = rule.hold
            if h.seconds == 0:
                issue(f"the hold time `for {h}` is zero; drop `for {h}` or give a positive duration", h.span, "hold")
            elif h.seconds > cat.max_hold:
                issue(f"the hold time {h} is longer than the limit of {_fmt_duration(cat.max_hold)}", h.span, "hold")
        notified: set[str] = set()
        paged: set[str] = set()
        for i, a in enumerate(rule.actions):
            if isinstance(a, Notify):
                if cat.channels is not None and a.channel not in cat.channels:
                    issue(f"unknown channel {a.channel!r}{_suggest(a.channel, cat.channels)}", a.channel_span,
                          f"actions/{i}")
                elif a.channel in notified:
                    issue(f"channel {a.channel!r} is notified twice; notify each channel once", a.span, f"actions/{i}")
                notified.add(a.channel)
            else:
                if cat.teams is not None and a.team not in cat.teams:
                    issue(f"unknown team {a.team!r}{_suggest(a.team, cat.teams)}", a.team_span, f"actions/{i}")
                elif a.team in paged:
                    issue(f"team {a.team!r} is paged twice; page each team once", a.span, f"actions/{i}")
                paged.add(a.team)
        return issues

    def _comparison(self, c: Comparison, issue) -> None:
        cat, m, t = self.catalog, c.metric, c.threshold
        if m.window is not None:
            w = m.window
            if w.seconds == 0:
                issue(f"the window [{w}] of {m.canonical()} is zero; give a positive duration such as [5m]",
                      w.span, "window")
            elif w.seconds > cat.max_window:
                issue(f"the window [{w}] is longer than the limit of {_fmt_duration(cat.max_window)}",
                      w.span, "window")
        info = cat.metrics.get(m.name)
        if info is None:
            issue(f"unknown metric {m.name!r}{_suggest(m.name, cat.metrics)}", m.name_span, "metric")
            return
        what = m.canonical()
        # the unit of the aggregated value, and the threshold in that unit
        if m.aggregation == "count":
            unit, lo, hi = None, Decimal(0), _INF
        else:
            unit = info.unit
            lo = info.min if info.min is not None else -_INF
            hi = info.max if info.max is not None else _INF
            if m.aggregation == "sum":  # a sum keeps only the sign the range guarantees
                lo = Decimal(0) if lo >= 0 else -_INF
                hi = Decimal(0) if hi <= 0 else _INF
        value = t.value
        if t.unit is not None and t.unit != unit:
            a, b = _SCALE.get(t.unit), _SCALE.get(unit) if unit else None
            if a is None or b is None or a[0] != b[0]:
                where = "a count of samples, without a unit" if m.aggregation == "count" else (
                    f"in {unit}" if unit else "without a unit")
                issue(f"{what} is {where}, but the threshold {t.canonical()} is in {t.unit}; "
                      f"write the threshold {'without a unit' if not unit else 'in ' + unit}", t.span, "threshold")
                return
            value = value * a[1] / b[1]
        shown = t.canonical() + (f" (= {_fmt(value)}{unit})" if value != t.value else "")
        if value < lo or value > hi:
            issue(f"the threshold {shown} is outside the range of {what}: "
                  f"{_fmt(lo)} to {_fmt(hi)}{unit or ''}", t.span, "threshold")
            return
        never = {">": value >= hi, ">=": value > hi, "<": value <= lo, "<=": value < lo,
                 "==": False, "!=": lo == hi == value}[c.op]
        always = {">": value < lo, ">=": value <= lo, "<": value > hi, "<=": value >= hi,
                  "==": lo == hi == value, "!=": False}[c.op]
        rng = f"{_fmt(lo)} to {_fmt(hi)}{unit or ''}"
        if never:
            issue(f"`{c.canonical()}` can never be true: {what} stays within {rng}", c.span, "comparison")
        elif always:
            issue(f"`{c.canonical()}` is always true: {what} stays within {rng}, so the alert would always fire",
                  c.span, "comparison")


# ----------------------------------------------------------------------------------------------------
# the spec
# ----------------------------------------------------------------------------------------------------


def alerts_spec(catalog: AlertCatalog | Mapping | str | Path, *, narrow: bool = True):
    """``sg.Grammar`` of alert rules checked against ``catalog`` by an :class:`AlertRulesValidator`.

    With ``narrow`` (the default) the catalog is also written into the grammar: its names and durations
    through ``choices=`` (:meth:`AlertCatalog.choices`) and, through ``%override`` rules appended to the
    grammar text (:meth:`AlertCatalog.grammar_rules`), each metric's thresholds and each label key's
    values; so most of what a model writes is valid by construction. The validator still checks what
    the grammar cannot: comparisons that are never (or always) true, units a threshold converts from,
    duplicate actions and list values."""
    from structgen.spec import Grammar

    cat = AlertCatalog.coerce(catalog)
    validators = [AlertRulesValidator(cat)]
    if not narrow:
        return Grammar(GRAMMAR_PATH, validators=validators)
    text = GRAMMAR_PATH.read_text().rstrip("\n") + "\n\n// narrowed to a catalog by alerts_spec\n" + cat.grammar_rules()
    return Grammar(text, validators=validators, choices=cat.choices())
