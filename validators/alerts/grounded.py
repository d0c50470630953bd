"""Grounded alert rules: what a rule writes is what its description states.

``generate(description, alerts_spec(catalog), ground=True)`` decodes with ``ground_catalog(catalog,
description)``'s spec: the catalog cut down to what the description says, written into the grammar
(``choices`` and the ``%override`` rules, as ``alerts_spec`` writes any catalog) and into the validator.

* **Names** (``stated_names``): channels, teams and each label key's values the description names. A name
  is stated when the description holds it as a whole word, in any case, its hyphens included (``db-1`` is no
  mention of ``#db``; ``web-3 box`` names ``web-3``); a channel also by its name without the ``#`` ("the ops
  channel"); a label value of four letters or more also as the start of a word ("production" names
  ``prod``, ``stated_values``). The actions are the channels and teams it names, each once: "let #ops know"
  pages no team, "page dba and tell #db" does both ("page ops" and "the ops team" name a team, not the
  channel ``#ops``; a description that writes one channel's ``#`` writes them all so: "an alert that alerts
  #ops" names no ``#alerts``); when it names none, or a word that may name either ("tell ops"), any of the
  named ones. A label key of which it names no value is not tested, and a list of a key's values (``in``, ``not
  in``) holds every value the description names of it ("on web-1, web-2 or web-3": all three; one of them
  alone is ``==``, and a subset ``==`` tests joined by ``or``).
* **Metrics** (``stated_metrics``): those the description calls by their name, a word of their name
  (``disk``, ``latency``) or one of their catalog ``aliases`` ("CPU load", "response time"); all when it
  names none. When it names one, the rule compares a metric (not labels alone), and an aggregated one when
  it names an aggregation too.
* **Thresholds**: the numbers the description states (``structgen.stated_numbers``: "over 85 percent" 85,
  "5 GB" 5, "a thousand" 1000; not the count of a duration, "for 2 minutes") that fall in their metric's
  range, or any in range when none does; always written with the metric's unit (``90%``, not ``90``). A
  number written with a unit is a threshold of the metrics in that unit only, and a metric in a unit the
  description writes takes only those ("p95 latency above 500 ms or more than 10 errors": ``500ms`` and
  ``10``; ``stated_thresholds``); "5xx" states no 5.
* **Comparisons**: the operators the words before each number state ("exceeds" ``>``, "drops below" ``<``,
  "at least" ``>=``); any when a number has none (``stated_thresholds.stated_comparators``).
* **Shape** (``condition_grammar``): a description that names one metric and states one number compares
  it once, and'ed with the label tests (``single_comparison``); one that names two metrics with "either"
  writes them as alternatives, ``(A or B)``, and'ed with the label tests (``either``: "either the p95
  latency exceeds 500 ms or the error rate tops 10, but only in prod"). In either shape each label key the
  description names is tested exactly once (``labels_once``; unless it names values of a key both as they
  are and negated), and a comparison of one metric aggregated over a window it states that is no hold time
  has that window ("the average latency over 10 minutes ... for 5 minutes": ``window_required``).
* **Aggregations** (``stated_aggregations``): those the description names ("the average", "p95", "peak";
  "more than 50 errors within 10 min" is a sum over the window); none when it names none, so "CPU above 90%"
  is ``cpu.usage > 90%``. Each goes with the metric named right after it (``metric_aggregations``: "the p95
  latency or the error rate" aggregates the latency, not the errors).
* **Windows and hold times** (``stated_durations``): the durations the description states ("5 min", "half
  an hour", "60 minutes" is ``1h``); none when it states none. A duration right after "for" is a hold
  time (``stated_holds``): the rule then holds for one of those ("for 5 minutes" is ``for 5m``).
* **Severities**: those the description names as words; all when it names none.
* **Negation**: a rule tests ``!=``, ``not in`` or ``not`` only when the description has a negating word
  ("unless", "except", "other than", "outside", "not", ...): "Our web-3 box" is ``host == "web-3"``. A
  label value named in a negating clause ("unless the host is web-1 or web-3") is tested negated
  (``not in``), one named outside any as it is (``polarity``).
* **Units**: where the description writes a unit after a number ("50 GB"), a metric measured in another
  unit is not among the stated ones ("out of disk ... 50 GB free" is ``disk.free``, not ``mem.free``).
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from typing import Iterable

from structgen.stated_numbers import COUNT, count_of, stated_numbers

from .catalog import AlertCatalog
from .stated_thresholds import UNIT_WORDS, stated_comparators, threshold_text, thresholds_by_unit

__all__ = ["stated_names", "stated_values", "stated_metrics", "stated_aggregations", "metric_aggregations",
           "stated_durations", "stated_holds", "stated_severities", "stated_units", "polarity", "ground_catalog"]

#: the words that name each aggregation of the rule language
AGGREGATION_WORDS = {"avg": ("avg", "average", "mean"), "min": ("min", "minimum", "lowest"),
                     "max": ("max", "maximum", "peak", "highest"), "p95": ("p95", "95th percentile"),
                     "p99": ("p99", "99th percentile"), "sum": ("sum", "total", "within"),
                     "count": ("count", "number of")}
SEVERITIES = ("low", "medium", "high", "critical")
_SECONDS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60,
            "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
            "d": 86400, "day": 86400, "days": 86400, "week": 604800, "weeks": 604800}
_DURATION = re.compile(rf"(?<![\w.,])(?:(?P<half>half\s+an?)|(?P<quarter>(?:an?\s+)?quarter\s+of\s+an?)|{COUNT})"
                       rf"(?(num)\s*|\s+)(?P<unit>{'|'.join(sorted(_SECONDS, key=len, reverse=True))})(?!\w)"
                       r"(?P<and_half>\s+and\s+a\s+half)?", re.IGNORECASE)


def _phrase(phrase: str) -> str | None:
    """A regex of ``phrase``'s words in any spacing, without a leading article; None when it has none."""
    words = re.sub(r"^(?:the|a|an)\s+", "", phrase.strip(), flags=re.IGNORECASE).split()
    return r"\s+".join(map(re.escape, words)) if words else None


def _says(phrase: str, source: str) -> bool:
    """Whether ``source`` holds ``phrase`` as whole words (any case and spacing; a leading article of the
    phrase optional)."""
    rx = _phrase(phrase)
    return rx is not None and re.search(rf"(?<![\w#-]){rx}(?![\w-])", source, re.IGNORECASE) is not None


def _mentioned(name: str, source: str, *, channel: bool = False) -> bool:
    """Whether ``source`` holds ``name`` as a whole word (case-insensitive; a channel's ``#`` optional)."""
    bare = name[1:] if channel and name.startswith("#") else name
    hash_ = "#?" if channel else ""
    return re.search(rf"(?<![\w#-]){hash_}{re.escape(bare)}(?![\w-])", source, re.IGNORECASE) is not None


def stated_names(names: Iterable[str], source: str, *, channel: bool = False) -> tuple[str, ...]:
    """The ``names`` that ``source`` states (see the module docstring), in their order."""
    return tuple(n for n in names if _mentioned(n, source, channel=channel))


def _name_words(name: str) -> list[str]:
    """The words of a metric's name that can name it on their own: ``disk`` and ``free`` of ``disk.free``
    (not ``http``, ``requests`` or parts under three letters)."""
    return [w for w in re.split(r"[._]", name) if len(w) >= 3 and w not in _GENERIC]


_GENERIC = frozenset({"http", "requests", "rate", "total", "count", "value", "used", "usage"})


def _team_phrase(team: str, source: str) -> bool:
    """Whether ``source`` names ``team`` as a team: "page (the) ops" ("pages ops"), "the ops team", "the ops
    on-call"."""
    t = re.escape(team)
    return re.search(rf"\bpag(?:e|es|ed|ing)\s+(?:the\s+)?{t}(?![\w-])|(?<![\w#-]){t}\s+(?:team|on-call)\b", source,
                     re.IGNORECASE) is not None


def stated_metrics(catalog: AlertCatalog, source: str) -> tuple[str, ...]:
    """The catalog's metrics that ``source`` names: by name, by a word of its name (``disk`` of
    ``disk.free``, ``latency``), or by one of their ``aliases`` ("CPU load"); in catalog order."""
    named = {name for _, name in _metric_mentions(catalog, source)}
    return tuple(name for name in catalog.metrics if name in named)


def stated_aggregations(source: str, catalog: AlertCatalog | None = None) -> tuple[str, ...]:
    """The aggregations ``source`` names (``AGGREGATION_WORDS``; the "min" of "10 min" is a duration, and
    the words of a ``catalog`` metric's alias name the metric: "the number of waiting messages" is no
    count)."""
    text = _aggregation_text(source, catalog)
    return tuple(agg for agg, words in AGGREGATION_WORDS.items() if any(_says(w, text) for w in words))


def _aggregation_text(source: str, catalog: AlertCatalog | None) -> str:
    """``source`` with its durations and the ``catalog`` metrics' aliases blanked at the same length: what is
    left names aggregations only where it says them."""
    blank = lambda m: " " * len(m.group(0))
    text = _DURATION.sub(blank, source)
    for alias in (a for info in (catalog.metrics.values() if catalog else ()) for a in info.aliases):
        text = re.sub(_phrase(alias), blank, text, flags=re.IGNORECASE)
    return text


def _metric_mentions(catalog: AlertCatalog, source: str) -> list[tuple[int, str]]:
    """(start, metric) of each place ``source`` names a catalog metric (as :func:`stated_metrics` reads), the
    longest phrase first where two start at one place ("free memory" is ``mem.free``, not ``disk.free``)."""
    out = []
    for name, info in catalog.metrics.items():
        for phrase in (name, *_name_words(name), *info.aliases):
            rx = _phrase(phrase)
            if rx:
                out += [(m.start(), m.start() - m.end(), name)
                        for m in re.finditer(rf"(?<![\w#-]){rx}(?![\w-])", source, re.IGNORECASE)]
    return [(at, name) for at, _, name in sorted(out)]


def metric_aggregations(catalog: AlertCatalog, source: str) -> dict[str, tuple[str, ...]]:
    """Per metric, the aggregations ``source`` names right before it ("the p95 latency", "the average free
    memory": the first metric named within a few words after the aggregation's word); an aggregation named
    before no metric ("more than 50 errors within 10 min") goes with every metric."""
    mentions = _metric_mentions(catalog, source)
    blanked = _aggregation_text(source, catalog)
    out: dict[str, dict[str, None]] = {name: {} for name in catalog.metrics}
    for agg, words in AGGREGATION_WORDS.items():
        for w in words:
            for m in re.finditer(rf"(?<![\w#-]){_phrase(w)}(?![\w-])", blanked, re.IGNORECASE):
                after = [name for at, name in mentions if m.end() <= at <= m.end() + 30]
                for name in after[:1] or catalog.metrics:
                    out[name][agg] = None
    return {name: tuple(aggs) for name, aggs in out.items()}


def _durations(source: str, holds: bool) -> tuple[int, ...]:
    out: dict[int, None] = {}
    for m in _DURATION.finditer(source):
        if holds and not _FOR.search(source, 0, m.start()):
            continue
        n = 0.5 if m["half"] else 0.25 if m["quarter"] else count_of(m)
        n += 0.5 if m["and_half"] else 0
        seconds = n * _SECONDS[m["unit"].lower()]
        if seconds == int(seconds) and seconds > 0:
            out[int(seconds)] = None
    return tuple(out)


_FOR = re.compile(r"\bfor\s+(?:the\s+(?:next|last)\s+|at\s+least\s+)?$", re.IGNORECASE)


def stated_durations(source: str) -> tuple[int, ...]:
    """The durations ``source`` states, in seconds, in order, each once: ``5 min`` 300, ``an hour`` 3600,
    ``half an hour`` 1800, ``a quarter of an hour`` 900, ``an hour and a half`` 5400, ``30s`` 30."""
    return _durations(source, holds=False)


def stated_holds(source: str) -> tuple[int, ...]:
    """The durations ``source`` states as how long the condition must hold: right after "for" ("for 5
    minutes", "for at least an hour"); "over the last 10 minutes" is a window."""
    return _durations(source, holds=True)


#: words that negate: a rule may test ``!=``, ``not in`` or ``not`` only when its description has one
NEGATIONS = re.compile(r"\b(?:not|unless|except|excluding|other\s+than|outside|but|never|no|without|"
                       r"isn't|aren't|doesn't|don't)\b", re.IGNORECASE)
def stated_units(source: str) -> tuple[str, ...]:
    """The threshold units ``source`` writes after a number ("50 GB", "90%", "800 milliseconds")."""
    return tuple(u for u, words in UNIT_WORDS.items()
                 if re.search(rf"\d\s*(?:{words})(?![\w%])", source, re.IGNORECASE))


def stated_severities(source: str) -> tuple[str, ...]:
    """The severities ``source`` names as whole words."""
    return tuple(s for s in SEVERITIES if _mentioned(s, source))


def _narrowed(names: tuple[str, ...] | None, source: str, *, channel: bool = False) -> tuple[str, ...] | None:
    if names is None:
        return None
    stated = stated_names(names, source, channel=channel)
    return stated or names


def stated_values(values: Iterable[str], source: str) -> tuple[str, ...]:
    """The label ``values`` that ``source`` names: as whole words (``stated_names``), or, for a value of at
    least four letters, as the start of a word ("in production" names ``prod``)."""
    return tuple(v for v in values if _mentions(v, source))


#: from a word that negates what follows to the end of its clause: "unless the host is web-1 or web-3",
#: "on every host except web-2", "anywhere but staging" ("but only in prod" negates nothing)
_NEGATED_SCOPE = re.compile(r"\b(?:unless|except|excluding|other\s+than|outside|not|but(?!\s+only))\b[^.,;:!?]*",
                            re.IGNORECASE)


def _mentions(value: str, source: str) -> list[int]:
    """Where ``source`` names ``value``: as a whole word, or, four letters or more, as a word's start."""
    rx = rf"(?<![\w#-]){re.escape(value)}" + ("" if len(value) >= 4 and value.isalpha() else r"(?![\w-])")
    return [m.start() for m in re.finditer(rx, source, re.IGNORECASE)]


def polarity(labels, source: str) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Per label key, the values ``source`` names as they are and those it names negated (inside a
    negating clause: "unless the host is web-1"); a value named both ways is in both."""
    scopes = [m.span() for m in _NEGATED_SCOPE.finditer(source)]
    out = {}
    for key, values in (labels or {}).items():
        pos, neg = [], []
        for v in values or ():
            at = _mentions(v, source)
            inside = [any(a <= p < b for a, b in scopes) for p in at]
            if not all(inside):
                pos.append(v)
            if any(inside):
                neg.append(v)
        out[key] = (tuple(pos), tuple(neg))
    return out


def _labels(labels, source: str):
    """Each label key with the values ``source`` names; a key with known values of which it names none goes
    (the rule tests no label the description does not mention); keys of any value stay."""
    if labels is None:
        return None
    out = {}
    for key, values in labels.items():
        stated = None if values is None else stated_values(values, source)
        if values is None or stated:
            out[key] = stated
    return out


def ground_catalog(catalog: AlertCatalog, source: str) -> AlertCatalog:
    """``catalog`` narrowed to what ``source`` states (see the module docstring): its metrics, channels,
    teams, label values and severities to those it names (a list it names nothing of stays whole; a kind of
    action it names nothing of, beside one it names, goes), its thresholds to the numbers it states where
    they fall in a metric's range, written in the metric's unit, its aggregations, windows and hold times to
    those it states (none when it states none)."""
    labels = _labels(catalog.labels, source)
    # the counts of durations ("for 2 minutes", "over 30 seconds") and the digits of "5xx" are no thresholds
    text = threshold_text(source, _DURATION)
    stated = tuple(dict.fromkeys(Decimal(str(n)) for n in stated_numbers(text)))
    by_unit = thresholds_by_unit(text)
    written = {v for u, vs in by_unit.items() if u for v in vs}
    metrics = stated_metrics(catalog, source)
    aggregations = stated_aggregations(source, catalog)
    units = stated_units(source)
    # "less than 50 GB is free": not free memory, which is in MB
    fitting = tuple(m for m in metrics if catalog.metrics[m].unit in (None, *units))
    metrics = fitting if units and fitting else metrics
    durations, holds, sides = stated_durations(source), stated_holds(source), polarity(labels, source)
    pairs = metric_aggregations(catalog, source)  # an aggregation is required where a stated metric may take one
    single = len(metrics) == 1 and len(stated) == 1 and len(aggregations) <= 1
    either = len(metrics) == 2 and re.search(r"\beither\b", source, re.IGNORECASE) is not None
    channels = _narrowed(catalog.channels, source, channel=True)
    teams = _narrowed(catalog.teams, source)
    every_action = False
    if channels is not None and teams is not None:
        hashed = stated_names(catalog.channels, source)  # "#ops" itself
        named_teams = stated_names(catalog.teams, source)
        # a description that writes a channel's "#" writes every channel so ("an alert that alerts #ops":
        # the verb is no channel); else no word may name a channel as well as a team: "ops" in "page ops"
        # or "the ops team" is the team
        bare = () if hashed else {c for c in stated_names(catalog.channels, source, channel=True)
                                  if not (c.lstrip("#") in named_teams and _team_phrase(c.lstrip("#"), source))}
        if (hashed or named_teams) and not bare:
            channels, teams, every_action = hashed, named_teams, True
    return dataclasses.replace(
        catalog, metrics={m: catalog.metrics[m] for m in metrics} if metrics else catalog.metrics,
        labels=labels, channels=channels, teams=teams, thresholds=stated or None,
        aggregations=aggregations, durations=durations, holds=holds or None,
        negation=NEGATIONS.search(source) is not None,
        whole_lists=True, polarity={k: p for k, p in sides.items() if labels[k] is not None},
        comparison_required=bool(metrics), aggregation_required=any(pairs.get(m) for m in metrics),
        severities=stated_severities(source) or None, units=True, every_action=every_action,
        unit_thresholds={**{u: vs for u, vs in by_unit.items() if u},
                         None: tuple(v for v in stated if v not in written)},
        comparators=stated_comparators(text),
        single_comparison=single, either=either, labels_once=(single or either) and labels is not None and all(
            vs is not None and not (sides[key][0] and sides[key][1]) for key, vs in labels.items()),
        window_required=single and bool(aggregations) and bool(set(durations) - set(holds or ())),
        metric_aggregations=pairs)
