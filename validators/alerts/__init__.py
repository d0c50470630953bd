"""Alert rules (``grammars/alerts.lark``): the typed AST, the catalog, the semantic validator and the spec.

This package owns everything that gives the alert-rule language its meaning:

- :func:`parse_rule` turns one rule into an :class:`AlertRule` (dataclasses: :class:`Comparison`,
  :class:`LabelMatch`, :class:`Not`, :class:`And`, :class:`Or`, :class:`Notify`, :class:`Page`, ...);
  ``AlertRule.canonical()`` is its canonical text, and two rules are equal when their canonical texts are
  (list order, operand order, redundant parentheses, double negation, ``60s`` vs ``1m`` do not matter).
  (:mod:`.rules`)
- :class:`AlertCatalog` lists what rules may refer to: metrics (unit, valid range), label keys (and their
  known values), channels, teams, and the longest window and hold time. (:mod:`.catalog`)
- :class:`AlertRulesValidator` checks a rule against a catalog and reports each problem as an
  :class:`~structgen.validators.Issue` whose span is the offending part of the text (what the sampler
  re-masks and denoises again). It never raises: text that does not parse has no semantic issues (the
  Lark validator reports the syntax). (:mod:`.validator`)
- :func:`alerts_spec` (here) is the shipped grammar with the validator attached and, by default, the
  catalog written into the grammar itself: names and durations through ``Grammar(..., choices=...)``
  (:meth:`AlertCatalog.choices`), per-metric thresholds and per-key label values through ``%override``
  rules (:meth:`AlertCatalog.grammar_rules`).

    from structgen.validators.alerts import AlertCatalog, alerts_spec
    spec = alerts_spec(AlertCatalog.load("examples/alerts/catalog.json"))
    gen.generate("page ops when cpu is above 90% for 5 minutes", spec, max_tokens=64)
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from .catalog import AlertCatalog, MetricInfo, tidy_durations
from .rules import (AGGREGATIONS, GRAMMAR_PATH, RESERVED, SEVERITIES, UNITS, Action, AlertRule, And,  # noqa: F401
                    Comparison, Condition, Duration, LabelMatch, Metric, Not, Notify, Or, Page, Threshold, parse_rule)
from .validator import AlertRulesValidator

# RESERVED is public but, as before the split, not in __all__
__all__ = [
    "AGGREGATIONS", "SEVERITIES", "UNITS", "GRAMMAR_PATH",
    "Duration", "Metric", "Threshold", "Comparison", "LabelMatch", "Not", "And", "Or", "Condition",
    "Notify", "Page", "Action", "AlertRule", "parse_rule",
    "MetricInfo", "AlertCatalog", "AlertRulesValidator", "alerts_spec", "tidy_durations",
]


def alerts_spec(catalog: AlertCatalog | Mapping | str | Path, *, narrow: bool = True,
                grounded_in: str | None = None):
    """``sg.Grammar`` of alert rules checked against ``catalog`` by an :class:`AlertRulesValidator`.

    With ``narrow`` (the default) the catalog is also written into the grammar: its names and durations
    through ``choices=`` (:meth:`AlertCatalog.choices`) and, through ``%override`` rules appended to the
    grammar text (:meth:`AlertCatalog.grammar_rules`), each metric's thresholds and each label key's
    values, and (for up to ``DISTINCT_MAX`` names) lists and actions that name each value, channel and
    team at most once; so most of what a model writes is valid by construction. The validator still
    checks what the grammar cannot: comparisons that are never (or always) true, units a threshold
    converts from, and repeats among longer lists of names.

    The spec is an ``AlertRulesGrammar`` (a ``Grammar`` that keeps ``catalog``): ``ground=True`` decodes
    it with the channels, teams and label values the description names and the thresholds it states
    (``validators.alerts.grounded``; ``grounded_in`` is that description)."""
    from .spec import AlertRulesGrammar

    cat = AlertCatalog.coerce(catalog)
    validators = [AlertRulesValidator(cat)]
    if not narrow:
        return AlertRulesGrammar(GRAMMAR_PATH, validators=validators, catalog=cat)
    text = GRAMMAR_PATH.read_text().rstrip("\n") + "\n\n// narrowed to a catalog by alerts_spec\n" + cat.grammar_rules()
    return AlertRulesGrammar(text, validators=validators, choices=cat.choices(), catalog=cat,
                             grounded_in=grounded_in)
