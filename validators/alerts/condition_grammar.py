"""The condition part of a catalog's grammar narrowing: each metric's comparisons and the condition's shape.

:meth:`AlertCatalog.grammar_rules` (``validators.alerts.catalog``) writes them with the label and action
rules:

* :func:`comparison_rules` — per metric, its comparisons: ``name op threshold`` and, where the catalog
  allows aggregations, ``agg(name[window]) op threshold`` (a ``sum`` keeps only the sign of the range, a
  ``count`` is a whole number of samples), each threshold within the aggregated value's range, in its unit
  and, when grounding narrowed them, one of the numbers the description states in that unit
  (``AlertCatalog.thresholds_for``), and the operator one it states (``comparators``).
* :func:`rule_rules` — the ``%override rule`` for what grounding requires of the condition: a hold time
  (``holds``), a comparison somewhere in it (``comparison_required``, an aggregated one with
  ``aggregation_required``), exactly one comparison and'ed with label tests (``single_comparison``: the
  description names one metric and one number), or the two metrics it names as alternatives, ``(A or B)``,
  and'ed with label tests (``either``: "either A or B, but only in prod").
"""

from __future__ import annotations

import itertools
import json

from .catalog import AlertCatalog, _threshold, _value_range

__all__ = ["comparison_rules", "rule_rules"]

_ORDER = (">=", "<=", "==", "!=", ">", "<")  # the longest first, as the grammar's CMP


def comparison_rules(cat: AlertCatalog, lines: list[str]) -> tuple[list[str], list[str]]:
    """Append to ``lines`` the comparisons of each metric of ``cat``: rules ``narrow_plain_cmp_{j}`` (the bare
    metric), ``narrow_agg_cmp_{j}`` (aggregated; absent when no aggregation is allowed) and
    ``narrow_cmp_{j}`` (either). Returns the bare and the aggregated comparisons' alternatives, all metrics
    together."""
    window = (" window" if cat.window_required else " window?") if cat.windows() else ""
    cmp = "CMP"
    if cat.comparators is not None:
        lines.append("NARROW_CMP: " + " | ".join(json.dumps(op) for op in _ORDER if op in cat.comparators))
        cmp = "NARROW_CMP"
    terminals: dict[tuple, str] = {}  # one threshold terminal per unit and range

    def threshold(kind: str, unit, lo, hi, allowed) -> str:
        key = (kind, unit, lo, hi)
        if key not in terminals:
            terminals[key] = _threshold(lines, f"NARROW_THRESHOLD_{len(terminals)}", lo, hi, unit, allowed,
                                        cat.units)
        return terminals[key]

    plain_all: list[str] = []
    agg_all: list[str] = []
    for j, info in enumerate(cat.metrics.values()):
        name = f"NARROW_METRIC_{j}"
        lines.append(f"{name}: {json.dumps(info.name)}")
        unit, lo, hi = _value_range(info, None)
        thr = threshold("value", unit, lo, hi, cat.thresholds_for(unit))
        plain = [f'{name} " " {cmp} " " {thr}']
        aggs = [a for a in ("avg", "min", "max", "p95", "p99") if cat.allows_aggregation(a, info.name)]
        aggregated = [f'({" | ".join(json.dumps(a) for a in aggs)}) "(" {name}{window} ")" " " {cmp} " " {thr}'] \
            if aggs else []
        if cat.allows_aggregation("sum", info.name):
            unit, lo, hi = _value_range(info, "sum")
            thr = threshold("sum", unit, lo, hi, cat.thresholds_for(unit))
            aggregated.append(f'"sum" "(" {name}{window} ")" " " {cmp} " " {thr}')
        if cat.allows_aggregation("count", info.name):
            unit, lo, hi = _value_range(info, "count")
            whole = cat.thresholds_for(None)
            thr = threshold("count", unit, lo, hi, None if whole is None else
                            tuple(v for v in whole if v == v.to_integral()))
            aggregated.append(f'"count" "(" {name}{window} ")" " " {cmp} " " {thr}')
        lines.append(f"narrow_plain_cmp_{j}: " + " | ".join(plain))
        if aggregated:
            lines.append(f"narrow_agg_cmp_{j}: " + "\n    | ".join(aggregated))
        lines.append(f"narrow_cmp_{j}: narrow_plain_cmp_{j}" + (f" | narrow_agg_cmp_{j}" if aggregated else ""))
        plain_all += [f"narrow_plain_cmp_{j}"]
        agg_all += [f"narrow_agg_cmp_{j}"] if aggregated else []
    return plain_all, agg_all


def rule_rules(cat: AlertCatalog, lines: list[str], required: str, agg_metrics: list[int]) -> list[str]:
    """The ``%override rule`` for the condition's shape (see the module docstring; ``required``: the rule
    of the comparison the condition must hold, ``agg_metrics``: the metrics with aggregated comparisons);
    rules it needs go to ``lines``; none when nothing is required."""
    labelled = cat.labels is None or bool(cat.labels)
    keyed = cat.labels_once and cat.labels is not None and len(cat.labels) <= 3
    if keyed:  # each key tested once (every value it names, ``AlertCatalog._label_matches``), or `not` that test
        for i in range(len(cat.labels)):
            negated = f' | "not" " " narrow_keyed_{i}' if cat.negation else ""
            lines.append(f"narrow_keyed_{i}: narrow_key_{i}{negated}")
    elif labelled and (cat.single_comparison or cat.either):
        # a label test, negated where negation is allowed, or label tests joined by `or` in parentheses
        lines.append('narrow_lab: label_match | "(" narrow_lab (" or " narrow_lab)+ ")"' +
                     (' | "not" " " narrow_lab' if cat.negation else ""))
    held_first = None
    if cat.either and len(cat.metrics) == 2:
        pairs = _alternatives_of_two(cat.aggregation_required and bool(agg_metrics), agg_metrics)
        lines.append("narrow_or: " + "\n    | ".join(pairs))
        cond = "narrow_either"
        if keyed:
            core = '"(" narrow_or ")"' if cat.labels else "narrow_or"
            lines.append("narrow_either: " + _every_once([f"narrow_keyed_{i}" for i in range(len(cat.labels))], core))
        else:
            around = ['"(" narrow_or ")" (" and " narrow_lab)+',
                      '(narrow_lab " and ")+ "(" narrow_or ")" (" and " narrow_lab)*']
            lines.append("narrow_either: narrow_or" + "".join(f"\n    | {a}" for a in (around if labelled else ())))
    elif cat.single_comparison:
        cond = "narrow_one"
        if keyed:
            keys = [f"narrow_keyed_{i}" for i in range(len(cat.labels))]
            lines.append("narrow_one: " + _every_once(keys, required))
            if keys:
                lines.append("narrow_keys_after: " + _every_once(keys, None, lead=True))
                held_first = f"{required} hold narrow_keys_after"
        else:
            lines.append(f'narrow_one: (narrow_lab " and ")* {required} (" and " narrow_lab)*' if labelled
                         else f"narrow_one: {required}")
            held_first = f'{required} hold (" and " narrow_lab)+' if labelled else None
    elif cat.comparison_required:
        cond = "cond_c"
        held_first = f"{required} hold rest"
        for name, part, op in (("cond_c", "and_c", "or"), ("and_c", "not_c", "and")):
            other = {"and_c": "and_cond", "not_c": "not_cond"}[part]
            more = f'(" {op} " {other})*'
            lines.append(f'{name}: {part} {more} | {other} {more} " {op} " {part} {more}')
        lines.append('not_c: ' + ('"not" " " not_c | ' if cat.negation else "") + f'"(" cond_c ")" | {required}')
    else:
        cond, held_first = "condition", "comparison hold rest"
    if not cat.hold_times():
        return [f'%override rule: "when " {cond} " then " actions']
    if cat.holds is None and cond == "condition":
        return []
    hold = "hold" if cat.holds is not None else "hold?"
    rule = f'"when " {cond} {hold} " then " actions'
    if held_first is not None:
        rule += f'\n    | "when " {held_first} " then " actions  -> rule_held_first'
    return [f"%override rule: {rule}"]


def _every_once(items: list[str], core: str | None, lead: bool = False) -> str:
    """Alternatives that write each of ``items`` (and ``core``, when given) exactly once, in every order,
    joined by ``" and "`` (with ``lead``, each item after an ``" and "``)."""
    parts = items + ([core] if core else [])
    sep = ' " and " '
    orders = [(' " and " ' if lead else "") + sep.join(p) for p in itertools.permutations(parts)]
    return "\n    | ".join(orders)


def _alternatives_of_two(aggregation_required: bool, agg_metrics: list[int]) -> list[str]:
    """``A or B`` of the two metrics' comparisons, either one first; with ``aggregation_required``, at least
    one of them aggregated (each alternative written once: an aggregated first, or a bare first and an
    aggregated second)."""
    out = []
    for x, y in ((0, 1), (1, 0)):
        if not aggregation_required:
            out.append(f'narrow_cmp_{x} " or " narrow_cmp_{y}')
            continue
        if x in agg_metrics:
            out.append(f'narrow_agg_cmp_{x} " or " narrow_cmp_{y}')
        if y in agg_metrics:
            out.append(f'narrow_plain_cmp_{x} " or " narrow_agg_cmp_{y}')
    return out
