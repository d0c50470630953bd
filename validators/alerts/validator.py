"""The semantic checks of alert rules: :class:`AlertRulesValidator`.

Owns what makes a well-formed rule wrong for a catalog (unknown names, thresholds out of range or in the
wrong unit, comparisons never or always true, windows and hold times out of bounds, duplicates), each
reported as an :class:`~structgen.validators.Issue` spanning the offending text.
"""

from __future__ import annotations

import difflib
from decimal import Decimal
from pathlib import Path
from typing import Mapping

from lark.exceptions import LarkError

from ..base import Issue, Span
from .catalog import _INF, AlertCatalog, _value_range
from .rules import AlertRule, And, Comparison, Duration, LabelMatch, Not, Notify, Or, _decimal_text, _parse

__all__ = ["AlertRulesValidator"]

#: Threshold units that convert into one another: (dimension, size in the dimension's base unit).
_SCALE = {"ms": ("time", Decimal("0.001")), "s": ("time", Decimal(1)),
          "KB": ("bytes", Decimal(10) ** 3), "MB": ("bytes", Decimal(10) ** 6), "GB": ("bytes", Decimal(10) ** 9)}


def _fmt(d: Decimal) -> str:
    if d in (_INF, -_INF):
        return "∞" if d > 0 else "-∞"
    return _decimal_text(d)


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
        if cat.comparison_required and not rule.comparisons():
            issue(f"the description names {', '.join(cat.metrics)}; compare it with a threshold", None, "condition")
        elif cat.aggregation_required and not any(c.metric.aggregation for c in rule.comparisons()):
            issue(f"the description names an aggregation ({', '.join(cat.aggregations or ())}); compare one",
                  None, "condition")
        issues += [Issue(m, span, "condition", self.name) for m, span in _shape_issues(cat, rule)]
        if not cat.negation:
            for c in _negations(rule.condition):
                issue("the description negates nothing; test what it names without `not`, `!=` or `not in`",
                      c.span, "condition")
        for m in _contradictions(rule.condition):
            issue(f"`{m.canonical()}` contradicts another test of {m.key!r} in the same `and`, so the rule can "
                  "never fire; test the label once", m.span, "label")
        for m in rule.label_matches():
            if cat.labels is not None and m.key not in cat.labels:
                issue(f"unknown label key {m.key!r}{_suggest(m.key, cat.labels)}", m.key_span, "label")
                known_values = None
            else:
                known_values = cat.labels.get(m.key) if cat.labels is not None else None
            if cat.polarity is not None and m.key in cat.polarity:
                pos, neg = cat.polarity[m.key]
                want, how = (neg, "negated") if m.op in ("!=", "not in") else (pos, "as it is")
                for value in m.values:
                    if value in (known_values or ()) and value not in want:
                        issue(f"the description does not name {value!r} {how}", m.span, f"label/{m.key}")
                known_values = want if known_values is not None else None
            if cat.whole_lists and known_values is not None and m.op in ("in", "not in") and \
                    set(known_values) - set(m.values):
                issue(f"the list of {m.key!r} leaves out {', '.join(sorted(set(known_values) - set(m.values)))}, "
                      "which the description names too; list every one", m.span, f"label/{m.key}")
            seen: set[str] = set()
            for value, span in zip(m.values, m.value_spans or (None,) * len(m.values)):
                if known_values is not None and value not in known_values:
                    issue(f"unknown value {value!r} for label {m.key!r}{_suggest(value, known_values)}", span,
                          f"label/{m.key}")
                elif value in seen:
                    issue(f"{value!r} is listed twice for label {m.key!r}; list each value once", span,
                          f"label/{m.key}")
                seen.add(value)
        if rule.hold is None and cat.holds is not None:
            issue(f"the description says how long the condition must hold; add `for "
                  f"{' or '.join(cat.hold_times()) or '...'}`", None, "hold")
        if rule.hold is not None:
            h = rule.hold
            allowed = cat.holds if cat.holds is not None else cat.durations
            if allowed is not None and h.seconds not in allowed:
                issue(f"the hold time {h} is no duration the description states; " +
                      (f"drop `for {h}`" if not cat.hold_times() else f"use one of {', '.join(cat.hold_times())}"),
                      h.span, "hold")
            elif h.seconds == 0:
                issue(f"the hold time `for {h}` is zero; drop `for {h}` or give a positive duration", h.span, "hold")
            elif h.seconds > cat.max_hold:
                issue(f"the hold time {h} is longer than the limit of {_fmt_duration(cat.max_hold)}", h.span, "hold")
        done: dict[str, set[str]] = {"channel": set(), "team": set()}
        for i, a in enumerate(rule.actions):
            if isinstance(a, Notify):
                what, name, span, known, twice = ("channel", a.channel, a.channel_span, cat.channels,
                                                  "is notified twice; notify each channel once")
            else:
                what, name, span, known, twice = ("team", a.team, a.team_span, cat.teams,
                                                  "is paged twice; page each team once")
            if known is not None and name not in known:
                issue(f"unknown {what} {name!r}{_suggest(name, known)}", span, f"actions/{i}")
            elif isinstance(a, Notify) and cat.severities is not None and a.severity not in cat.severities:
                issue(f"severity {a.severity} is not the one the description states "
                      f"({', '.join(cat.severities)})", a.span, f"actions/{i}")
            elif name in done[what]:
                issue(f"{what} {name!r} {twice}", a.span, f"actions/{i}")
            done[what].add(name)
        if cat.every_action and rule.actions:
            missing = [c for c in cat.channels or () if c not in done["channel"]]
            missing += [t for t in cat.teams or () if t not in done["team"]]
            if missing:
                issue(f"the description also names {', '.join(map(repr, missing))}; notify or page it too",
                      rule.actions[-1].span, f"actions/{len(rule.actions) - 1}")
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
        if m.aggregation is not None and not cat.allows_aggregation(m.aggregation):
            issue(f"the description names no {m.aggregation} aggregation; compare {m.name} itself", m.span, "metric")
        elif m.aggregation is not None and not cat.allows_aggregation(m.aggregation, m.name):
            issue(f"the description names the {m.aggregation} of another metric, not of {m.name}", m.span, "metric")
        windows = cat.window_durations()
        if m.window is not None and windows is not None and m.window.seconds not in windows:
            issue(f"the window [{m.window}] is no duration the description states" +
                  (" for a window (it is the hold time)" if m.window.seconds in (cat.durations or ()) else ""),
                  m.window.span, "window")
        # the unit of the aggregated value, and the threshold in that unit
        unit, lo, hi = _value_range(info, m.aggregation)
        if cat.units and unit is not None and t.unit is None:
            issue(f"write the threshold of {what} with its unit: {t.canonical()}{unit}", t.span, "threshold")
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
        allowed = cat.thresholds_for(unit)
        if m.aggregation == "count" and allowed is not None:
            allowed = tuple(v for v in allowed if v == v.to_integral())
        if allowed and any(lo <= v <= hi for v in allowed) and t.value not in allowed and value not in allowed:
            issue(f"the threshold {shown} is no number the description states for {what} "
                  f"({', '.join(_fmt(v) + (unit or '') for v in allowed if lo <= v <= hi)})", t.span, "threshold")
        if cat.comparators is not None and c.op not in cat.comparators:
            issue(f"the description compares with {' or '.join(cat.comparators)}, not {c.op}", c.span, "comparison")
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


def _contradictions(cond) -> list[LabelMatch]:
    """The label tests that no value can pass together with the earlier tests of their key in the same
    ``and`` (``host == "web-1" and host not in ["web-1"]``), anywhere in ``cond``."""
    out: list[LabelMatch] = []
    if isinstance(cond, (And, Or)):
        for c in cond.operands:
            out += _contradictions(c)
    elif isinstance(cond, Not):
        out += _contradictions(cond.operand)
    if isinstance(cond, And):
        allowed: dict[str, set[str] | None] = {}
        barred: dict[str, set[str]] = {}
        for m in (c for c in cond.operands if isinstance(c, LabelMatch)):
            if m.op in ("==", "in"):
                allowed[m.key] = set(m.values) if allowed.get(m.key) is None else allowed[m.key] & set(m.values)
            else:
                barred.setdefault(m.key, set()).update(m.values)
            if allowed.get(m.key) is not None and not allowed[m.key] - barred.get(m.key, set()):
                out.append(m)
    return out


def _negations(cond) -> list:
    """The negated tests of ``cond``: ``not ...``, ``!=`` and ``not in`` label matches."""
    if isinstance(cond, Not):
        return [cond]
    if isinstance(cond, (And, Or)):
        return [n for c in cond.operands for n in _negations(c)]
    return [cond] if isinstance(cond, LabelMatch) and cond.op in ("!=", "not in") else []


def _shape_issues(cat: AlertCatalog, rule: AlertRule) -> list[tuple[str, Span | None]]:
    """What breaks the condition's required shape (``single_comparison``, ``either``): message and span."""
    comparisons = rule.comparisons()
    if cat.either and len(cat.metrics) == 2:
        cond = rule.condition
        ors = [cond] if isinstance(cond, Or) else [c for c in cond.operands if isinstance(c, Or)] \
            if isinstance(cond, And) else []
        alternatives = ors[0].operands if len(ors) == 1 else ()
        if len(comparisons) != 2 or len(alternatives) != 2 or \
                not all(isinstance(c, Comparison) for c in alternatives) or \
                {c.metric.name for c in alternatives} != set(cat.metrics):
            return [(f"the description names {' and '.join(cat.metrics)} as alternatives (\"either ... or\"); "
                     "write them as one `(A or B)`, and'ed with the label tests", cond.span)]
    elif cat.single_comparison and comparisons:
        extra = comparisons[1:] or [o for o in _ors(rule.condition) if _compares(o)]
        if extra:
            return [("the description names one metric and one number; compare it once, and'ed with the "
                     "label tests", extra[0].span)]
        m = comparisons[0].metric
        if cat.window_required and m.aggregation and m.window is None:
            return [(f"the description states a window for {m.canonical()}; write it: "
                     f"{m.aggregation}({m.name}[{(cat.windows() or ['5m'])[0]}])", m.span)]
    out = []
    if (cat.single_comparison or cat.either) and cat.labels_once and cat.labels is not None:
        tops = rule.condition.operands if isinstance(rule.condition, And) else (rule.condition,)
        tested = [k for t in tops if not _compares(t) for k in dict.fromkeys(_keys(t))]
        for key, values in cat.labels.items():
            if tested.count(key) != 1:
                how = "once" if tested.count(key) else f"too ({', '.join(values or ())})"
                out.append((f"the description names {key!r}; test it {how}, and'ed with the rest",
                            rule.condition.span))
            elif {v for m in rule.label_matches() if m.key == key for v in m.values} != set(values or ()):
                out.append((f"the description names {', '.join(values or ())} of {key!r}; test every one, in one "
                            "list", rule.condition.span))
    return out


def _keys(cond) -> list[str]:
    """The label keys ``cond`` tests."""
    if isinstance(cond, LabelMatch):
        return [cond.key]
    if isinstance(cond, (And, Or)):
        return [k for c in cond.operands for k in _keys(c)]
    return _keys(cond.operand) if isinstance(cond, Not) else []


def _compares(cond) -> bool:
    """Whether ``cond`` holds a comparison."""
    if isinstance(cond, (And, Or)):
        return any(_compares(c) for c in cond.operands)
    return _compares(cond.operand) if isinstance(cond, Not) else isinstance(cond, Comparison)


def _ors(cond) -> list:
    """The ``or`` nodes of ``cond``."""
    if isinstance(cond, Or):
        return [cond] + [o for c in cond.operands for o in _ors(c)]
    if isinstance(cond, And):
        return [o for c in cond.operands for o in _ors(c)]
    return _ors(cond.operand) if isinstance(cond, Not) else []
