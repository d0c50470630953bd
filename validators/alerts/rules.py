"""The alert-rule language itself: the typed AST, its canonical text, and the Lark parse.

Owns the AST dataclasses (:class:`AlertRule`, :class:`Comparison`, :class:`LabelMatch`, :class:`Not`,
:class:`And`, :class:`Or`, :class:`Notify`, :class:`Page`, ...), their normalisation and rendering
(``AlertRule.canonical()``), the words and units of the language, and :func:`parse_rule` (Lark's Earley
parser on ``grammars/alerts.lark``, its tree turned into the AST with spans into the text).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Iterator, Union

import lark
from lark.exceptions import LarkError

from structgen.errors import SpecError

from ..base import Span

__all__ = [
    "AGGREGATIONS", "SEVERITIES", "UNITS", "RESERVED", "GRAMMAR_PATH",
    "Duration", "Metric", "Threshold", "Comparison", "LabelMatch", "Not", "And", "Or", "Condition",
    "Notify", "Page", "Action", "AlertRule", "parse_rule",
]


def _grammar_path() -> Path:
    from structgen.grammars import grammar_path

    return grammar_path("alerts")


#: The shipped grammar this package parses with.
GRAMMAR_PATH = _grammar_path()

AGGREGATIONS = ("avg", "min", "max", "sum", "count", "p95", "p99")
SEVERITIES = ("low", "medium", "high", "critical")
#: Threshold units the grammar can write; ``ms``/``s`` and ``KB``/``MB``/``GB`` (powers of 1000) convert.
UNITS = ("%", "ms", "s", "KB", "MB", "GB")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Words of the language; a catalog may not use them as label keys.
RESERVED = frozenset({"when", "then", "for", "and", "or", "not", "in", "notify", "page", "severity"})


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
        return _decimal_text(self.value) + (self.unit or "")


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
        m = _normal_label(self)
        if m.op in ("==", "!="):
            return f"{m.key} {m.op} {_quote(m.values[0])}"
        return f"{m.key} {m.op} [" + ", ".join(_quote(v) for v in m.values) + "]"



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


def _decimal_text(d: Decimal) -> str:
    """A finite number without trailing zeros or an exponent (``0`` for any zero)."""
    v = d.normalize()
    return "0" if v == 0 else format(v, "f")


def _normal_label(m: LabelMatch) -> LabelMatch:
    """The same test with its values sorted and deduplicated, and a one-value list written as ``==``/``!=``."""
    values = tuple(sorted(set(m.values)))
    op = m.op
    if op in ("in", "not in") and len(values) == 1:
        op = "==" if op == "in" else "!="
    return LabelMatch(m.key, op, values)


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
        return _normal_label(node)
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
            hold = self.duration(kids[1]) if len(kids) == 3 else None
        else:  # rule_held_first: comparison hold rest
            first, hold, rest = self.cond(kids[0]), self.duration(kids[1]), kids[2]
            ands, ors = [first], []
            for tail in rest.children:
                (ands if tail.data == "and_tail" else ors).append(self.cond(tail.children[0]))
            start = _span(kids[0])[0]
            end_and = _span(rest.children[len(ands) - 2])[1] if len(ands) > 1 else _span(kids[0])[1]
            head = And(tuple(ands), (start, end_and)) if len(ands) > 1 else first
            cond = Or((head, *ors), (start, _span(rest)[1])) if ors else head
        actions = tuple(self.action(a) for a in kids[-1].children)
        return AlertRule(cond, hold, actions, text)

    def duration(self, tree: lark.Tree) -> Duration:
        """A ``hold`` or ``window`` node: its one duration token."""
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
        raise SpecError(f"alerts grammar: unexpected node {kind!r}; "
                        "the grammar and validators/alerts/rules.py disagree")

    def metric(self, tree: lark.Tree) -> Metric:
        kids = tree.children
        if len(kids) == 1:
            return Metric(str(kids[0]), None, None, _span(tree), _span(kids[0]))
        window = self.duration(kids[2]) if len(kids) == 3 else None
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
        from ..lark_check import LarkValidator

        issues = LarkValidator(GRAMMAR_PATH.read_text())(text)
        why = issues[0].message if issues else "it does not parse"
        raise SpecError(f"not an alert rule: {why}; write e.g. "
                        "'when avg(cpu.usage) > 90 for 5m then notify \"#ops\" severity high'") from None
    except RecursionError:
        raise SpecError("the rule is nested too deeply to parse; remove redundant parentheses or `not`s") from None
