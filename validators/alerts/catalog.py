"""What alert rules may refer to, and how that is written into the grammar.

Owns :class:`MetricInfo` and :class:`AlertCatalog` (built from JSON or a dict by ``catalog_json``, with a
``SpecError`` naming whatever is wrong), the range of each aggregated value, and the grammar narrowing:
:meth:`AlertCatalog.choices` (names and :func:`tidy_durations`) and :meth:`AlertCatalog.grammar_rules`
(``%override`` rules with threshold regexes per metric range, each label key's values, and lists and
actions that repeat no name).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Mapping

from structgen.errors import SpecError

from .rules import _SECONDS, UNITS, Duration, _decimal_text

__all__ = ["MetricInfo", "AlertCatalog", "tidy_durations"]

_DEFAULT_LIMIT = 7 * 86400
_INF = Decimal("Infinity")


@dataclass(frozen=True)
class MetricInfo:
    """What the catalog knows of one metric: its ``unit`` and valid range ``[min, max]`` (each optional), a
    ``description`` and its ``aliases``, the words people call it by ("CPU load"), which grounding reads."""

    name: str
    unit: str | None = None
    min: Decimal | None = None
    max: Decimal | None = None
    description: str = ""
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class AlertCatalog:
    """What alert rules may refer to.

    ``metrics`` (name -> :class:`MetricInfo`, at least one); ``labels`` (key -> known values, or ``None``
    for any value; ``None`` as a whole: label keys are not checked); ``channels`` and ``teams``
    (``None``: not checked); ``max_window`` and ``max_hold`` (seconds, default 7 days): the longest
    aggregation window and ``for`` hold time. Not in the JSON form, what grounding sets
    (``validators.alerts.grounded``; ``None``: no narrowing): ``thresholds``, the values a threshold may take
    where they fall in a metric's range; ``aggregations``, the aggregations a rule may use; ``durations``,
    the windows and hold times it may write (seconds; empty: none); ``severities``; ``holds``, hold
    times one of which the rule must hold for (seconds); ``negation``: whether a rule may negate (``not``,
    ``!=``, ``not in``); ``whole_lists``: a list of label values holds every value its key lists;
    ``polarity``: per label key, the values a rule tests as they are (``==``, ``in``) and those it tests
    negated (``!=``, ``not in``); ``comparison_required``: a rule compares a metric (with
    ``aggregation_required``, an aggregated one); ``units``: a threshold writes its metric's unit;
    ``every_action``: the actions notify every channel and page every team listed; ``unit_thresholds``:
    the stated numbers by the unit written after them (``None``: none), read by :meth:`thresholds_for`;
    ``comparators``: the comparison operators a rule may use; ``single_comparison``: the condition is one
    comparison and'ed with label tests; ``either``: the condition is the two metrics' comparisons as
    alternatives, ``(A or B)``, and'ed with label tests (``validators.alerts.condition_grammar``); with
    either shape, ``labels_once``: each label key is tested exactly once, and ``window_required``: an
    aggregated comparison has a window; ``metric_aggregations``: per metric, the aggregations it may use.
    Build it with :meth:`from_dict` or :meth:`load`; as JSON::

        {"metrics": {"cpu.usage": {"unit": "%", "min": 0, "max": 100, "aliases": ["CPU", "CPU load"]},
                     "http.requests.5xx": {"min": 0}},
         "labels": {"host": ["web-1", "web-2"], "service": null},
         "channels": ["#ops"], "teams": ["ops"], "limits": {"max_window": "1d", "max_hold": "7d"}}
    """

    metrics: Mapping[str, MetricInfo]
    labels: Mapping[str, tuple[str, ...] | None] | None = None
    channels: tuple[str, ...] | None = None
    teams: tuple[str, ...] | None = None
    max_window: int = _DEFAULT_LIMIT
    max_hold: int = _DEFAULT_LIMIT
    thresholds: tuple[Decimal, ...] | None = None
    aggregations: tuple[str, ...] | None = None
    durations: tuple[int, ...] | None = None
    severities: tuple[str, ...] | None = None
    holds: tuple[int, ...] | None = None
    negation: bool = True
    whole_lists: bool = False
    polarity: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None
    comparison_required: bool = False
    aggregation_required: bool = False
    units: bool = False
    every_action: bool = False
    unit_thresholds: Mapping[str | None, tuple[Decimal, ...]] | None = None
    comparators: tuple[str, ...] | None = None
    single_comparison: bool = False
    either: bool = False
    labels_once: bool = False
    window_required: bool = False
    metric_aggregations: Mapping[str, tuple[str, ...]] | None = None

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
        from .catalog_json import read_catalog

        return cls(**read_catalog(data, where))

    def choices(self) -> dict[str, list[str]]:
        """``Grammar(choices=...)`` that writes the catalog's names into the grammar: metric names, hold
        times and windows (whole units up to the limits: 1-59s, 1-59m, 1-23h, 1d...) always; channels,
        teams and label keys when listed; label values when every label key lists its values."""
        out: dict[str, list[str]] = {"METRIC": list(self.metrics), "HOLD": self.hold_times(),
                                     "WINDOW": self.windows()}
        if self.channels:
            out["CHANNEL"] = list(self.channels)
        if self.teams:
            out["TEAM"] = list(self.teams)
        if self.severities:
            out["SEVERITY"] = list(self.severities)
        if self.labels is not None:
            out["LABEL"] = list(self.labels)
            if all(v is not None for v in self.labels.values()):
                out["VALUE"] = list(dict.fromkeys(v for vs in self.labels.values() for v in vs))
        return {k: v for k, v in out.items() if v}

    def hold_times(self) -> list[str]:
        """The ``for`` hold times a rule may write (:func:`tidy_durations`, only ``holds`` or else
        ``durations`` when set)."""
        return _tidy_within(self.max_hold, self.holds if self.holds is not None else self.durations)

    def windows(self) -> list[str]:
        """The aggregation windows a rule may write (:func:`tidy_durations`, only ``durations`` when set,
        and of those no hold time when ``window_required``)."""
        return _tidy_within(self.max_window, self.window_durations())

    def window_durations(self) -> tuple[int, ...] | None:
        """The durations (seconds) a window may span: ``durations``, less the ``holds`` when
        ``window_required``; ``None``: any."""
        if self.durations is None or not self.window_required:
            return self.durations
        return tuple(d for d in self.durations if d not in (self.holds or ()))

    def thresholds_for(self, unit: str | None) -> tuple[Decimal, ...] | None:
        """The thresholds a value in ``unit`` may be compared with: the numbers the description writes in
        that unit, else those it writes without one, else ``thresholds`` (``None``: any)."""
        if self.unit_thresholds is None:
            return self.thresholds
        return (self.unit_thresholds.get(unit) if unit else None) or self.unit_thresholds.get(None) or \
            self.thresholds

    def allows_aggregation(self, name: str, metric: str | None = None) -> bool:
        """Whether a rule may aggregate (``metric``, when given) with ``name``."""
        if self.aggregations is not None and name not in self.aggregations:
            return False
        return metric is None or self.metric_aggregations is None or name in self.metric_aggregations.get(metric, ())

    def _label_matches(self, lines: list[str], i: int, key: str, vs: tuple[str, ...]) -> list[str]:
        """The ``label_match`` alternatives of label ``key`` (the ``i``-th with known values ``vs``): each
        value at most once in a list (every one with ``whole_lists``), negated (``!=``, ``not in``) only
        when ``negation`` allows, and with ``polarity`` only the values it says each way."""
        k = f"NARROW_LABEL_{i}"
        lines.append(f"{k}: {_alternatives([key])}")
        if self.polarity is None or key not in self.polarity:
            groups = [("", vs, "EQ" if self.negation else '"=="', True, self.negation)]
        else:
            pos, neg = self.polarity[key]
            groups = [("_p", pos, '"=="', True, False), ("_n", neg, '"!="', False, True)]
        out = []
        for suffix, values, eq, plain, negated in groups:
            if not values:
                continue
            v = f"narrow_value_{i}{suffix}"
            lines.append(f'{v}: "\\"" NARROW_VALUE_{i}{suffix.upper()} "\\""')
            lines.append(f"NARROW_VALUE_{i}{suffix.upper()}: {_alternatives(values)}")
            if len(values) <= DISTINCT_MAX:  # each value at most once, by construction
                items = f'"[" {_distinct_lists(lines, f"narrow_list_{i}{suffix}", values, self.whole_lists)} "]"'
            else:
                items = f'"[" {v} (", " {v})* "]"'
            if not (self.labels_once and len(values) > 1):  # tested once: every value it names, in a list
                out.append(f'{k} " " {eq} " " {v}')
            out += [f'{k} " " "in" " " {items}'] if plain else []
            out += [f'{k} " " "not" " " "in" " " {items}'] if negated else []
        return out

    def grammar_rules(self) -> str:
        """Lark rules that narrow what ``choices()`` cannot, because it depends on context: thresholds
        within each metric's range and in its unit (per aggregation: a ``sum`` keeps only the sign of the
        range, a ``count`` is a whole number of samples), each label key's own values, each listed at
        most once, and actions that notify each channel and page each team at most once (both for up to
        ``DISTINCT_MAX`` names). They ``%override`` the grammar's ``comparison``, ``label_match`` and
        ``actions`` rules with a subset of their language; appended to ``alerts.lark`` together with
        ``choices()`` (see :func:`alerts_spec`)."""
        from .condition_grammar import comparison_rules, rule_rules

        lines: list[str] = []
        plain, aggregated = comparison_rules(self, lines)
        head = ["%override comparison: " + " | ".join(plain + aggregated)]
        required = "comparison"
        if self.aggregation_required and aggregated:
            lines.append("agg_comparison: " + " | ".join(aggregated))
            required = "agg_comparison"
        head += rule_rules(self, lines, required, [int(a.rsplit("_", 1)[1]) for a in aggregated])
        if not self.negation:
            head.append("%override ?not_cond: atom")
        eq = "EQ" if self.negation else '"=="'
        if self.labels is not None and not self.labels:
            head.append('%override ?atom: "(" condition ")" | comparison')
        elif self.labels is not None:
            matches, free = [], [k for k, vs in self.labels.items() if vs is None]
            for i, (key, vs) in enumerate((k, vs) for k, vs in self.labels.items() if vs is not None):
                lines.append(f"narrow_key_{i}: " + "\n    | ".join(self._label_matches(lines, i, key, vs)))
                matches.append(f"narrow_key_{i}")
            if free:
                lines.append(f"NARROW_FREE_LABEL: {_alternatives(free)}")
                items = '"[" value (", " value)* "]"'
                matches += [f'NARROW_FREE_LABEL " " {eq} " " value', f'NARROW_FREE_LABEL " " "in" " " {items}']
                matches += [f'NARROW_FREE_LABEL " " "not" " " "in" " " {items}'] if self.negation else []
            head.append("%override label_match: " + "\n    | ".join(matches))
        if self.channels is not None and self.teams is not None and \
                len(self.channels) + len(self.teams) <= DISTINCT_MAX:
            head.append("%override actions: " + _distinct_actions(lines, self.channels, self.teams,
                                                                    every=self.every_action))
        return "\n".join(head + lines) + "\n"


# --- narrowing the grammar -------------------------------------------------------------------------


def tidy_durations(limit: int) -> list[str]:
    """Durations up to ``limit`` seconds in whole units as people write them: 1-59s, 1-59m, 1-23h, then
    days (at most 400)."""
    out = []
    for unit, top in (("s", 59), ("m", 59), ("h", 23), ("d", 400)):
        out += [f"{n}{unit}" for n in range(1, top + 1) if n * _SECONDS[unit] <= limit]
    return out


def _tidy_within(limit: int, allowed: tuple[int, ...] | None) -> list[str]:
    """``tidy_durations(limit)`` of ``allowed`` seconds only (``None``: all)."""
    return [d for d in tidy_durations(limit) if allowed is None or Duration.parse(d).seconds in allowed]


#: lists of at most this many known names (label values; channels and teams together) are written into
#: the grammar so that no name can repeat: one rule per set of names already used (2 ** n rules)
DISTINCT_MAX = 6


def _subset_rules(lines: list[str], prefix: str, options: list[str], every: bool = False) -> str:
    """Rules for sequences of ``options`` (Lark texts) joined by ``", "`` in which no option appears twice
    (rule ``{prefix}_{used}``: one more option not in the bit set ``used``), and with ``every``, in which
    each appears; appended to ``lines``. Returns the start rule's name."""
    full = (1 << len(options)) - 1
    for used in range(full):
        alts = []
        for bit, text in enumerate(options):
            if used & (1 << bit):
                continue
            after = used | (1 << bit)
            alts.append(text if after == full else f'{text} ", " {prefix}_{after}' if every
                        else f'{text} (", " {prefix}_{after})?')
        lines.append(f"{prefix}_{used}: " + "\n    | ".join(alts))
    return f"{prefix}_0"


def _distinct_lists(lines: list[str], prefix: str, values, every: bool = False) -> str:
    """A list body of distinct ``values`` (in any order; with ``every``, all of them); the name of its rule."""
    return _subset_rules(lines, prefix, [json.dumps(f'"{v}"') for v in dict.fromkeys(values)], every)


def _distinct_actions(lines: list[str], channels, teams, every: bool = False) -> str:
    """The action list with each channel notified and each team paged at most once (with ``every``:
    exactly once); the rule's text."""
    options = [f'{json.dumps(f"notify {json.dumps(c)} severity ")} SEVERITY' for c in dict.fromkeys(channels)]
    options += [json.dumps(f"page {json.dumps(t)}") for t in dict.fromkeys(teams)]
    return _subset_rules(lines, "narrow_actions", options, every)


def _alternatives(names) -> str:
    return " | ".join(json.dumps(n) for n in dict.fromkeys(names))


def _value_range(info: MetricInfo, aggregation: str | None) -> tuple[str | None, Decimal, Decimal]:
    """The unit and range ``[lo, hi]`` of ``aggregation`` (``None``: the bare metric) over a metric: a
    ``count`` is a number of samples without a unit; a ``sum`` keeps only the sign the range guarantees;
    the others keep the metric's unit and range (unbounded where the catalog gives no bound)."""
    if aggregation == "count":
        return None, Decimal(0), _INF
    lo = info.min if info.min is not None else -_INF
    hi = info.max if info.max is not None else _INF
    if aggregation == "sum":
        lo, hi = (Decimal(0) if lo >= 0 else -_INF), (Decimal(0) if hi <= 0 else _INF)
    return info.unit, lo, hi


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


def _threshold(lines: list[str], name: str, lo: Decimal, hi: Decimal, unit: str | None,
               allowed: tuple[Decimal, ...] | None = None, unit_required: bool = False) -> str:
    """Define terminal ``name`` for thresholds in ``[lo, hi]`` in ``unit`` (only the ``allowed`` values when
    some of them fall in the range; the unit always written when ``unit_required``); the grammar symbols to
    use."""
    fits = sorted({_decimal_text(v) for v in allowed or () if lo <= v <= hi and abs(v) < _NARROW_MAX
                   and v == v.quantize(Decimal("0.01"))}, key=lambda t: (-len(t), t))  # as the range regex writes
    # the longest first: Lark's lexer takes the first alternative that matches (50 before 5)
    rx = "(" + "|".join(re.escape(t) for t in fits) + ")" if fits else _number_regex(lo, hi)
    if rx is None:
        return "NUMBER UNIT?"
    if unit in UNITS:
        rx += f"({re.escape(unit)})" + ("" if unit_required else "?")
    lines.append(f"{name}: /{rx}/")
    return name
