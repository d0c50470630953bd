"""Would grounding allow the right answer? Each gold string and number of the task data against what its request states.

``generate(..., ground=True)`` (``structgen.grounding``) restricts a free-text string to the request's
parts that start at a word (``constraints.quote_automaton``), an e-mail to its addresses, a date, date-time,
patterned string, number or enum choice to the values the request states, and an optional property with a
default that the request states no value for to its default. A gold value outside that set could never be
written, so this counts, per family, split and kind of value, the gold values whose request states some
candidate and, of those, the ones the candidates hold (a *miss* is a value grounding makes wrong for
certain). Values left ungrounded (other formats, enums whose choices the request never names, nothing
stated) are counted apart. SQL: each string literal of the gold query against ``stated_literals``
(``structgen.sql.grounded``); alert rules: each metric, threshold, comparison operator, aggregation, window,
hold time, label value, channel, team and severity of the gold rule against the grounded catalog
(``validators.alerts.grounded``), and the whole gold rule against the grounded spec's validators; JSON and
tool calls: the whole gold answer too (the rules across fields: roles, named numbers, proper names...).
No model; figures only, nothing is asserted.

    python benchmarks/grounding_coverage.py                 # 400 examples per family and split
    python benchmarks/grounding_coverage.py -n 1000 --json coverage.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402


def kind_and_candidates(node: dict, source: str, prop: dict | None = None):
    """(kind, candidates or None for free text) of a schema node as grounding treats it; kind None: untouched.
    ``prop``: the optional property (with a default) the node is or is an item of, whose default is all an
    unstated value may be (``ground_schema``)."""
    from structgen.grounding import emails_in, groundable, statable, stated_for, unstated

    if prop is not None and unstated(prop, source):
        default = prop["default"]
        return "default only", default if isinstance(default, list) else [default]
    if groundable(node, source):
        if node.get("format") == "email":
            return "email", emails_in(source, node.get("pattern"))
        return "free text", None
    if statable(node, source):
        kind = node.get("format") or ("choice" if "enum" in node else "pattern" if "pattern" in node
                                      else "number")
        return kind, stated_for(node, source)
    return None, None


def leaves(schema: dict, value, root: dict, optional: dict | None = None):
    """(subschema, value, optional property's subschema or None) for every string and number of ``value``
    whose subschema is found by properties/items; the third is the optional property (with a default) the
    value is in, whose default is all an unstated value may be."""
    if isinstance(schema, dict) and "$ref" in schema:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    if isinstance(value, dict):
        props, required = schema.get("properties", {}), schema.get("required", [])
        for k, v in value.items():
            if k in props:
                yield from leaves(props[k], v, root, props[k] if k not in required and "default" in props[k]
                                  else None)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(schema.get("items", {}), v, root, optional)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        yield schema, value, optional


def sql_leaves(ex):
    """(kind, value, allowed) for each string literal of a gold query."""
    from structgen.sql.grounded import sql_literals, stated_literals

    allowed = set(stated_literals(ex.prompt, ex.spec.schema))
    for _, v in sql_literals(ex.target):
        yield "literal", v, v in allowed


def alert_leaves(ex):
    """(kind, value, allowed) for each metric, threshold (in its unit), comparison operator, aggregation
    (of its metric), window, hold time, label value, channel, team and severity of a gold rule, and the
    whole rule against the grounded spec's validators."""
    from structgen.validators.alerts import Notify, Page, parse_rule
    from structgen.validators import run_validators, validators_for
    from structgen.validators.alerts.catalog import _value_range
    from structgen.validators.alerts.grounded import ground_catalog

    g = ground_catalog(ex.spec.catalog, ex.prompt)
    rule = parse_rule(ex.target)
    for c in rule.comparisons():
        m = c.metric
        yield "metric", m.name, m.name in g.metrics
        t = c.threshold
        unit = _value_range(g.metrics[m.name], m.aggregation)[0]
        allowed = g.thresholds_for(unit)
        yield "threshold", t.canonical(), (allowed is None or t.value in allowed) and (
            not g.units or t.unit is not None or g.metrics[m.name].unit is None or m.aggregation == "count")
        yield "comparison", c.op, g.comparators is None or c.op in g.comparators
        if m.aggregation:
            yield "aggregation", m.aggregation, g.allows_aggregation(m.aggregation, m.name)
        if m.window is not None:
            yield "window", str(m.window), str(m.window.canonical()) in g.windows()
    if rule.hold is not None:
        yield "hold time", str(rule.hold), rule.hold.canonical() in g.hold_times()
    for lm in rule.label_matches():
        for v in lm.values:
            side = (g.polarity or {}).get(lm.key)  # (as they are, negated)
            yield "label value", v, g.labels is None or (lm.key in g.labels and (
                g.labels[lm.key] is None or v in g.labels[lm.key]) and (
                side is None or v in side[lm.op in ("!=", "not in")]))
    for a in rule.actions:
        if isinstance(a, Notify):
            yield "channel", a.channel, g.channels is None or a.channel in g.channels
            yield "severity", a.severity, g.severities is None or a.severity in g.severities
        elif isinstance(a, Page):
            yield "team", a.team, g.teams is None or a.team in g.teams
    # the whole rule against every grounding rule the validators check (its shape, each label key once...)
    yield "whole rule", ex.target, run_validators(validators_for(ex.spec.grounded(ex.prompt)), ex.target) == []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=400, help="Examples per family and split.")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None, help="Also write the counts here.")
    args = ap.parse_args()
    from structgen.constraints.quote_automaton import is_quoted
    from structgen.grounding import Grounded, quotable
    from structgen.validators import run_validators, validators_for
    from structgen.train.data import examples

    counts: Counter = Counter()
    misses: list[dict] = []
    with C.progress() as bar:
        task = bar.add_task("examples", total=8 * args.n)
        for fam in ("tool", "json"):
            for split in ("heldout", "train"):
                for ex in examples(fam, split, args.n, seed=args.seed):
                    gold = json.loads(ex.target)
                    if fam == "tool":
                        schema, value = ex.spec.tool(gold["name"]).schema, gold["arguments"]
                    else:
                        schema, value = ex.spec.schema, gold
                    for node, v, prop in leaves(schema, value, schema):
                        kind, cands = kind_and_candidates(node, ex.prompt, prop)
                        key = (fam, split, kind or "left as it is")
                        counts[key + ("values",)] += 1
                        ok = kind is None or (is_quoted(v, quotable(ex.prompt)) if cands is None else v in cands)
                        counts[key + ("held",)] += ok
                        if not ok and len(misses) < 12:
                            misses.append({"family": fam, "split": split, "kind": kind, "gold": v,
                                           "stated": cands, "request": ex.prompt[:120]})
                    # the whole answer against every grounding rule the validators check (across fields too)
                    whole = run_validators(validators_for(Grounded(ex.spec, ex.prompt)), ex.target)
                    key = (fam, split, "whole answer")
                    counts[key + ("values",)] += 1
                    counts[key + ("held",)] += not whole
                    if whole and len(misses) < 24:
                        misses.append({"family": fam, "split": split, "kind": "whole answer", "gold": ex.target,
                                       "stated": [i.message[:160] for i in whole], "request": ex.prompt[:120]})
                    bar.advance(task)
        for fam, walk in (("sql", sql_leaves), ("alert", alert_leaves)):
            for split in ("heldout", "train"):
                for ex in examples(fam, split, args.n, seed=args.seed):
                    for kind, v, ok in walk(ex):
                        key = (fam, split, kind)
                        counts[key + ("values",)] += 1
                        counts[key + ("held",)] += ok
                        if not ok and len(misses) < 24:
                            misses.append({"family": fam, "split": split, "kind": kind, "gold": v,
                                           "stated": None, "request": ex.prompt[:120]})
                    bar.advance(task)
    rows = []
    for fam, split, kind in sorted({k[:3] for k in counts}):
        n, held = counts[(fam, split, kind, "values")], counts[(fam, split, kind, "held")]
        rows.append([fam, split, kind, n, held, n - held])
    C.console.print(C.table("Gold values grounding would allow",
                            ["family", "split", "kind", "values", "allowed", "missed"], rows))
    for m in misses:
        C.console.print(f"[dim]missed[/] {m['family']}/{m['split']} {m['kind']}: {m['gold']!r} not in "
                        f"{m['stated']} — {m['request']!r}")
    if args.json:
        args.json.write_text(json.dumps({"counts": {"|".join(map(str, k)): v for k, v in counts.items()},
                                         "misses": misses}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
