"""Training data, family "alert": a plain-language alert request and the rule in the alert DSL.

Owns the description templates (train and held-out), the English phrasing of the example catalog's labels,
channels and teams (``examples/alerts/catalog.json``; its metrics are called by the catalog's own
``aliases``), and :func:`examples`. A template composes building blocks (a metric comparison, a label scope, a
hold time, actions), each of which knows its words and its meaning as a node of the rule AST
(``structgen.validators.alerts``). The target is the rule's canonical text (``AlertRule.canonical()``: sorted
``and``/``or`` operands, the hold after the condition, sorted actions), rendered from the AST without a parse:
what the eval's "semantically equal" compares with, and what a model can write. Every target parses, passes
``AlertRulesValidator(catalog)`` and is in the language of ``alerts_spec(catalog)``. Thresholds are written in
the catalog's unit of the metric (the narrowed grammar allows no other). Held-out templates are description
*shapes* never seen in training (a question, the passive voice, a story, a field list, "unless"), not only new
values.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

from structgen.validators.alerts import (AlertRule, And, Comparison, Condition, Duration, LabelMatch, Metric,
                                         Notify, Or, Page, Threshold)

from .base import Example, Template, check_split, example_file, generate, noise

__all__ = ["TRAIN_TEMPLATES", "HELDOUT_TEMPLATES", "examples", "catalog", "alert_spec"]

FAMILY = "alert"


@functools.lru_cache(maxsize=1)
def catalog():
    """The example alert catalog (``examples/alerts/catalog.json``)."""
    from structgen.validators.alerts import AlertCatalog

    return AlertCatalog.load(example_file("alerts/catalog.json", "the alert-rule data"))


@functools.lru_cache(maxsize=1)
def alert_spec():
    """``alerts_spec(catalog())``: one instance shared by every example."""
    from structgen.validators.alerts import alerts_spec

    return alerts_spec(catalog())


# ---- building blocks: words and their meaning -------------------------------------------------------------


class Part(NamedTuple):
    """Words and their meaning: an AST node of the rule language (a duration: its text, e.g. ``5m``)."""

    text: str
    dsl: Any


class Words(NamedTuple):
    """How people alert on one catalog metric (what they call it: the catalog's ``aliases``)."""

    name: str
    unit: str  # the catalog's unit, "" when it has none
    thresholds: tuple[int, ...]
    op: str  # ">" (alert when too high) or "<" (too low)
    aggs: tuple[str, ...]

    @property
    def words(self) -> tuple[str, ...]:
        """What people call the metric: its ``aliases`` in the example catalog."""
        return catalog().metrics[self.name].aliases


_METRICS = {
    "cpu": Words("cpu.usage", "%", (70, 75, 80, 85, 90, 95), ">", ("avg", "max", "p95")),
    "mem": Words("mem.used", "%", (80, 85, 90, 95), ">", ("avg", "max")),
    "lat": Words("http.latency", "ms", (200, 250, 300, 500, 800, 1000, 1500, 2000), ">", ("p99", "p95", "avg", "max")),
    "err": Words("http.requests.5xx", "", (5, 10, 20, 50, 100), ">", ("avg", "max")),
    "queue": Words("queue.depth", "", (1000, 5000, 10000, 20000, 50000), ">", ("avg", "max")),
    "disk": Words("disk.free", "GB", (5, 10, 20, 50), "<", ("avg", "min")),
    "memfree": Words("mem.free", "MB", (100, 250, 500, 1000), "<", ("avg", "min")),
}
_HIGH = ("cpu", "mem", "lat", "err", "queue")
_LOW = ("disk", "memfree")
_AGG_WORDS = {"avg": ("average", "mean"), "max": ("maximum", "peak"), "min": ("minimum", "lowest"),
              "p95": ("95th percentile", "p95"), "p99": ("99th percentile", "p99")}
_OP_WORDS = {">": ("is above", "goes above", "exceeds", "is over", "rises above", "is higher than"),
             "<": ("drops below", "falls below", "is under", "is below", "is less than"),
             ">=": ("reaches", "is at least"), "<=": ("is at most", "gets down to")}
_HOLD_WORDS = {">": ("stays above", "remains above", "is above"), "<": ("stays below", "remains under", "is below")}
_DURATIONS = {"30s": ("30 seconds",), "1m": ("1 minute", "a minute", "one minute"),
              "2m": ("2 minutes", "two minutes"), "3m": ("3 minutes",), "5m": ("5 minutes", "5 min", "five minutes"),
              "10m": ("10 minutes", "10 min", "ten minutes"), "15m": ("15 minutes", "a quarter of an hour"),
              "30m": ("30 minutes", "half an hour"), "1h": ("1 hour", "an hour", "60 minutes")}
_HOLDS = ("1m", "2m", "3m", "5m", "10m", "15m", "30m", "1h")
_WINDOWS = ("30s", "1m", "5m", "10m", "15m", "30m", "1h")
_ENV_WORDS = {"prod": ("production", "prod"), "staging": ("staging", "the staging environment")}


def _names(what: str) -> tuple[str, ...]:
    """Names from the catalog: ``channels``, ``teams`` or a label key's values."""
    cat = catalog()
    return tuple(getattr(cat, what) if what in ("channels", "teams") else cat.labels[what])


def _num(rng: random.Random, v: int, unit: str) -> str:
    """A threshold as people write it: ``90%``/``90 percent``, ``800 ms``, ``20,000``."""
    n = f"{v:,}" if v >= 10000 and rng.random() < 0.5 else str(v)
    if unit == "%":
        return rng.choice((f"{n}%", f"{n} percent"))
    if unit == "ms":
        return rng.choice((f"{n} ms", f"{n}ms", f"{n} milliseconds"))
    return rng.choice((f"{n} {unit}", f"{n}{unit}")) if unit else n


def _dur(rng: random.Random, pool=_HOLDS) -> Part:
    d = rng.choice(pool)
    return Part(rng.choice(_DURATIONS[d]), d)


def _cmpn(name: str, op: str, value: int, unit: str, agg: str | None = None, window: str | None = None) -> Comparison:
    """The comparison ``agg(name[window]) op value unit``."""
    return Comparison(Metric(name, agg, Duration.parse(window) if window else None), op,
                      Threshold(Decimal(value), unit or None))


def _label(key: str, op: str, *values: str) -> LabelMatch:
    return LabelMatch(key, op, tuple(values))


def _cmp(rng, kind: str | None = None, *, agg: str | None | bool = False, window: bool | None = None,
         op: str | None = None, held: bool = False) -> tuple[str, str, Comparison]:
    """(subject words, predicate words, node). ``agg=False``: aggregated or not by a coin, ``window=None``:
    a window or not by a coin; ``held``: the predicate reads "stays above"."""
    m = _METRICS[kind or rng.choice(_HIGH + _LOW)]
    if agg is False:
        agg = rng.choice(m.aggs) if rng.random() < 0.5 else None
    win = rng.choice(_WINDOWS) if agg and (window or (window is None and rng.random() < 0.5)) else None
    subj = rng.choice(m.words)
    if agg:
        subj = f"the {rng.choice(_AGG_WORDS[agg])} {subj.removeprefix('the ')}"
    if win:
        w = rng.choice(_DURATIONS[win])
        subj += rng.choice((f" over {w}", f" over the last {w}", f" across {w}"))
    op = op or m.op
    value = rng.choice(m.thresholds)
    verb = rng.choice(_HOLD_WORDS[op] if held and op in _HOLD_WORDS else _OP_WORDS[op])
    return subj, f"{verb} {_num(rng, value, m.unit)}", _cmpn(m.name, op, value, m.unit, agg, win)


def _c(rng, *a, **k) -> Part:
    subj, pred, node = _cmp(rng, *a, **k)
    return Part(f"{subj} {pred}", node)


def _and_words(items, last: str = " and ") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + last + items[-1]


def _hosts(rng, k: int | None = None) -> list[str]:
    return sorted(rng.sample(_names("host"), k or rng.choice((1, 2, 2, 3))))


def _host_scope(rng, *, negate: bool = False) -> Part:
    hs = _hosts(rng, rng.choice((1, 2)) if negate else None)
    if negate:
        lead = rng.choice(("on every host except ", "on any host other than ", "on all hosts but "))
        return Part(lead + _and_words(hs), _label("host", "not in", *hs))
    lead = rng.choice(("on ", "on host ", "for "))
    return Part(lead + _and_words(hs, rng.choice((" or ", " and "))), _label("host", "in", *hs))


def _scope(rng, key: str, *, negate: bool = False) -> Part:
    """A test of the ``env`` or ``region`` label: "in production", "outside the us-east region"..."""
    v = rng.choice(_names(key))
    word = rng.choice(_ENV_WORDS.get(v, (v,)))
    region = key == "region"
    if negate:
        texts = (f"outside {word}", f"anywhere but {word}", f"everywhere except {word}") + \
            ((f"outside the {v} region",) if region else ())
        return Part(rng.choice(texts), _label(key, "!=", v))
    return Part(rng.choice((f"in {word}",) + ((f"in the {v} region",) if region else ())), _label(key, "==", v))


def _notify(rng) -> Part:
    chan, sev = rng.choice(_names("channels")), rng.choice(("low", "medium", "high", "critical"))
    text = rng.choice((f"notify {chan} with {sev} severity", f"send a {sev}-severity alert to {chan}",
                       f"alert {chan} ({sev})", f"post to {chan} at {sev} severity",
                       f"notify {chan} (severity: {sev})"))
    return Part(text, Notify(chan, sev))


def _page(rng) -> Part:
    team = rng.choice(_names("teams"))
    return Part(rng.choice((f"page the {team} team", f"page {team}", f"page the {team} on-call")), Page(team))


def _action(rng) -> Part:
    return _notify(rng) if rng.random() < 0.6 else _page(rng)


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


def _rule(cond: list[Condition], acts: list[Part], hold: Part | None = None) -> str:
    """The canonical text of "when all of ``cond`` hold (for ``hold``), then ``acts``"."""
    node = cond[0] if len(cond) == 1 else And(tuple(cond))
    return AlertRule(node, Duration.parse(hold.dsl) if hold else None, tuple(a.dsl for a in acts)).canonical()


# ---- templates: rng -> (description, canonical rule) -------------------------------------------------------

def _t_notify_when(rng):
    a, c = _notify(rng), _c(rng)
    return f"{_cap(a.text)} when {c.text}.", _rule([c.dsl], [a])


def _t_page_if(rng):
    a, c = _page(rng), _c(rng)
    return f"{_cap(a.text)} if {c.text}.", _rule([c.dsl], [a])


def _t_when_then(rng):
    a, c = _action(rng), _c(rng, agg=rng.choice(("avg", "max")), window=True)
    return f"When {c.text}, {a.text}.", _rule([c.dsl], [a])


def _t_hold_stays(rng):
    (a, h), (s, p, d) = (_action(rng), _dur(rng)), _cmp(rng, held=True)
    return f"{_cap(a.text)} when {s} {p} for {h.text}.", _rule([d], [a], h)


def _t_host_hold(rng):
    a, h, hs = _action(rng), _dur(rng), _host_scope(rng)
    s, p, d = _cmp(rng, rng.choice(("cpu", "mem")), agg=rng.choice(("avg", None)), held=True)
    return f"{_cap(a.text)} when {s} {hs.text} {p} for {h.text}.", _rule([d, hs.dsl], [a], h)


def _t_low_resource_host(rng):
    a, hs = _notify(rng), _host_scope(rng)
    s, p, d = _cmp(rng, rng.choice(_LOW), agg=None)
    return f"Warn {a.dsl.channel} at {a.dsl.severity} severity when {s} {hs.text} {p}.", _rule([d, hs.dsl], [a])


def _t_env_latency(rng):
    a, h, e = _action(rng), _dur(rng), _scope(rng, "env")
    s, p, d = _cmp(rng, "lat", agg=rng.choice(("p99", "p95")))
    return f"When {s} {e.text} {p} for {h.text}, {a.text}.", _rule([d, e.dsl], [a], h)


def _t_two_actions(rng):
    n, pg, c = _notify(rng), _page(rng), _c(rng)
    first, second = (n, pg) if rng.random() < 0.5 else (pg, n)
    return f"If {c.text}, {first.text} and {second.text}.", _rule([c.dsl], [n, pg])


def _t_or_metrics(rng):
    a, (k1, k2) = _action(rng), rng.sample(_HIGH + _LOW, 2)
    c1, c2 = _c(rng, k1), _c(rng, k2)
    return f"{_cap(a.text)} if {c1.text} or {c2.text}.", _rule([Or((c1.dsl, c2.dsl))], [a])


def _t_and_metrics(rng):
    a, (k1, k2) = _action(rng), rng.sample(_HIGH + _LOW, 2)
    c1, c2 = _c(rng, k1), _c(rng, k2)
    tail = rng.choice((" at the same time", "", " together"))
    return f"{_cap(a.text)} when {c1.text} and {c2.text}{tail}.", _rule([c1.dsl, c2.dsl], [a])


def _t_region_exclude(rng):
    a, c, r = _action(rng), _c(rng), _scope(rng, "region", negate=True)
    return f"{_cap(a.text)} when {c.text} {r.text}.", _rule([c.dsl, r.dsl], [a])


def _t_error_burst(rng):
    a, w, n = _action(rng), _dur(rng, ("1m", "5m", "10m", "15m")), rng.choice((20, 50, 100, 200, 500))
    word = rng.choice(("server errors", "5xx errors", "HTTP 5xx responses"))
    return (f"If there are more than {n} {word} within {w.text}, {a.text}.",
            _rule([_cmpn("http.requests.5xx", ">", n, "", "sum", w.dsl)], [a]))


def _t_queue_backlog(rng):
    (a, h), (s, p, d) = (_action(rng), _dur(rng)), _cmp(rng, "queue", agg="avg", window=True, held=True)
    return f"Queue backlog: when {s} {p} for {h.text}, {a.text}.", _rule([d], [a], h)


def _t_host_exclude(rng):
    a, c, hs = _action(rng), _c(rng), _host_scope(rng, negate=True)
    return f"{_cap(a.text)} when {c.text} {hs.text}.", _rule([c.dsl, hs.dsl], [a])


def _t_terse(rng):
    n, h, hs, kind = _notify(rng), _dur(rng), _host_scope(rng), rng.choice(("cpu", "mem", "lat"))
    m, short = _METRICS[kind], {"cpu": "cpu", "mem": "mem", "lat": "latency"}[kind]
    v = rng.choice(m.thresholds)
    return (f"{short} > {v}{m.unit} for {h.dsl} {hs.text} -> {n.dsl.channel} {n.dsl.severity}",
            _rule([_cmpn(m.name, ">", v, m.unit), hs.dsl], [n], h))


def _t_create_rule(rng):
    a, c = _action(rng), _c(rng)
    lead = rng.choice(("Create an alert rule", "New rule", "Set up an alert", "Add an alert"))
    return f"{lead}: if {c.text}, then {a.text}.", _rule([c.dsl], [a])


def _t_env_region(rng):
    a, c, e, r = _action(rng), _c(rng), _scope(rng, "env"), _scope(rng, "region")
    return f"{_cap(a.text)} when {c.text} {e.text} {r.text}.", _rule([c.dsl, e.dsl, r.dsl], [a])


def _t_at_least(rng):
    a, (s, p, d) = _action(rng), _cmp(rng, rng.choice(_HIGH), op=">=")
    return f"{_cap(a.text)} as soon as {s} {p}.", _rule([d], [a])


def _t_at_most(rng):
    a, (s, p, d) = _action(rng), _cmp(rng, rng.choice(_LOW), op="<=")
    return f"{_cap(a.text)} when {s} {p}.", _rule([d], [a])


def _t_severity_first(rng):
    n, c = _notify(rng), _c(rng)
    return f"{_cap(n.dsl.severity)}-severity alert to {n.dsl.channel}: {c.text}.", _rule([c.dsl], [n])


def _t_env_page_notify(rng):
    e, h, pg, n = _scope(rng, "env"), _dur(rng), _page(rng), _notify(rng)
    s, p, d = _cmp(rng, held=True)
    return f"{_cap(e.text)}, if {s} {p} for {h.text}, {pg.text} and {n.text}.", _rule([d, e.dsl], [pg, n], h)


def _t_percentile_region(rng):
    a, r, (s, p, d) = _notify(rng), _scope(rng, "region"), _cmp(rng, "lat", agg="p95", window=True)
    return f"{_cap(a.text)} when {s} {p} {r.text}.", _rule([d, r.dsl], [a])


# held-out shapes


def _h_question(rng):
    a, c = _action(rng), _c(rng)
    verb, rest = a.text.split(" ", 1)
    third = {"notify": "notifies", "page": "pages", "send": "sends", "alert": "alerts", "post": "posts"}[verb]
    return f"Can you set up an alert that {third} {rest} whenever {c.text}?", _rule([c.dsl], [a])


def _h_passive(rng):
    pg, n, h, e = _page(rng), _notify(rng), _dur(rng), _scope(rng, "env")
    m = _METRICS[rng.choice(_HIGH)]
    v = rng.choice(m.thresholds)
    return ((f"The {pg.dsl.team} team should be paged and {n.dsl.channel} notified ({n.dsl.severity}) if "
            f"{rng.choice(m.words)} has been over {_num(rng, v, m.unit)} for {h.text} {e.text}."),
            _rule([_cmpn(m.name, ">", v, m.unit), e.dsl], [pg, n], h))


def _h_story(rng):
    n, host, v = _notify(rng), rng.choice(_names("host")), rng.choice(_METRICS["disk"].thresholds)
    text = (f"Our {host} box keeps running out of disk. Let {n.dsl.channel} know with {n.dsl.severity} severity "
            f"once less than {v} GB is free.")
    return text, _rule([_cmpn("disk.free", "<", v, "GB"), _label("host", "==", host)], [n])


def _h_or_scoped(rng):
    n, e, c1, c2 = _notify(rng), _scope(rng, "env"), _c(rng, "lat", agg="p95"), _c(rng, "err", agg=None)
    return ((f"Raise a {n.dsl.severity} alert in {n.dsl.channel} when either {c1.text} or {c2.text}, but only "
            f"{e.text}."), _rule([e.dsl, Or((c1.dsl, c2.dsl))], [n]))


def _h_fields(rng):
    a, h, hs, (s, p, d) = _action(rng), _dur(rng), _host_scope(rng), _cmp(rng, rng.choice(_HIGH))
    return f"metric: {s}\ncondition: {p} for {h.text}\nscope: {hs.text}\naction: {a.text}", _rule([d, hs.dsl], [a], h)


def _h_threshold_first(rng):
    n, h, hs, m = _notify(rng), _dur(rng), _host_scope(rng), _METRICS[rng.choice(("cpu", "mem"))]
    v = rng.choice(m.thresholds)
    return ((f"Anything over {_num(rng, v, m.unit)} {rng.choice(m.words)} {hs.text} for {h.text} is a "
            f"{n.dsl.severity} problem for {n.dsl.channel}."), _rule([_cmpn(m.name, ">", v, m.unit), hs.dsl], [n], h))


def _h_unless(rng):
    a, c, hs = _action(rng), _c(rng), _hosts(rng, 2)
    return (f"{_cap(a.text)} when {c.text}, unless the host is {hs[0]} or {hs[1]}.",
            _rule([c.dsl, _label("host", "not in", *hs)], [a]))


_TABLE: dict[str, dict[str, Callable[[random.Random], tuple[str, str]]]] = {
    split: {k[3:]: v for k, v in list(globals().items()) if k.startswith(prefix) and callable(v)}
    for split, prefix in (("train", "_t_"), ("heldout", "_h_"))}
TRAIN_TEMPLATES: list[str] = list(_TABLE["train"])
HELDOUT_TEMPLATES: list[str] = list(_TABLE["heldout"])


def _template(tid: str, split: str, fn) -> Template:
    def render(rng: random.Random) -> tuple[str, str, str, Any]:
        text, rule = fn(rng)
        return noise(rng, text), rule, rule, alert_spec()

    return Template(tid, FAMILY, split, render)


_TEMPLATES = {split: tuple(_template(tid, split, fn) for tid, fn in table.items()) for split, table in _TABLE.items()}


def examples(split: str, n: int, seed: int = 0) -> list[Example]:
    """``n`` examples of ``split`` ("train" or "heldout"), the same for the same seed (example ``i`` depends
    only on the split, seed and ``i``); templates are used round-robin in a seeded order, so every template
    appears once ``n`` reaches their number. Prompt: the description; target and gold: the canonical rule."""
    check_split(split)
    return generate(FAMILY, split, _TEMPLATES[split], n, seed)
