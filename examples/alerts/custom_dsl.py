"""Bring your own grammar: generate alert rules with a Lark grammar, a catalog and your own validator.

    python examples/alerts/custom_dsl.py                     # random logits: runs with no model
    python examples/alerts/custom_dsl.py --model path/to/hf-masked-lm -n 3

This script owns nothing the library needs; it shows the plumbing a user writes for their own DSL
(docs/bring-your-own-grammar.md walks through it):

1. the grammar: ``grammars/alerts.lark`` (any Lark file works the same way);
2. validators: the catalog checks of ``structgen.validators.alerts`` plus a policy of our own
   (``critical_pages_someone``), each a callable ``text -> list[Issue]`` whose spans say what to redo;
3. narrowing: the catalog's names written into the grammar with ``choices=`` and per-metric thresholds
   with extra ``%override`` rules, so that even random logits mostly produce valid rules;
4. generation with random logits (``sg.models.RandomLogits``), then the rule files in ``rules/``
   checked and printed in canonical form.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
try:  # a source checkout without `pip install -e .`
    import structgen  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(HERE.parent.parent))

import structgen as sg  # noqa: E402
from structgen.validators import Issue  # noqa: E402
from structgen.validators.alerts import (GRAMMAR_PATH, AlertCatalog, AlertRulesValidator, Notify,  # noqa: E402
                                         Page, parse_rule)

PROMPTS = [
    "page ops when cpu is above 90% for 5 minutes",
    "tell #alerts when the p99 latency of the prod api goes over 800ms",
    "warn #db when disk space on db-1 drops under 20GB",
    "page the web team when more than 50 server errors arrive in a minute",
]


def critical_pages_someone(text: str) -> list[Issue]:
    """Our own policy: a rule that notifies with severity critical must also page a team.

    A validator returns a list of issues (empty: valid). Text that does not parse is left to the grammar's
    own Lark validator, so it returns no issue for it. The span is the part to redo: here the critical
    notification, so the sampler re-masks it (and what follows) and writes it again."""
    try:
        rule = parse_rule(text)
    except sg.SpecError:
        return []
    if any(isinstance(a, Page) for a in rule.actions):
        return []
    return [Issue(f"{a.canonical()!r} is critical but the rule pages no team; add page \"...\" or lower "
                  "the severity", a.span, "actions")
            for a in rule.actions if isinstance(a, Notify) and a.severity == "critical"]


def build_spec(catalog: AlertCatalog) -> sg.Grammar:
    """The grammar, narrowed to the catalog, with our validators (what ``alerts_spec`` does, plus ours)."""
    text = GRAMMAR_PATH.read_text() + "\n" + catalog.grammar_rules()  # thresholds per metric, values per key
    return sg.Grammar(text, validators=[AlertRulesValidator(catalog), critical_pages_someone],
                      choices=catalog.choices())  # metric names, channels, teams, label keys, durations


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="random", help="'random' (default) or a local Hugging Face masked LM")
    ap.add_argument("-n", type=int, default=2, help="rules per prompt")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=96)
    args = ap.parse_args(argv)

    catalog = AlertCatalog.load(HERE / "catalog.json")
    spec = build_spec(catalog)
    valid = total = 0
    for p, prompt in enumerate(PROMPTS):
        print(f"# {prompt}")
        for i in range(args.n):
            seed = args.seed + 100 * p + i
            model = sg.load_model(f"random:{seed}" if args.model == "random" else args.model)
            gen = sg.Generator(model, block_length=16, threshold=0.9, seed=seed)
            try:
                r = gen.generate(prompt, spec, max_tokens=args.max_tokens, strict=False)
            except sg.CanvasTooSmallError as e:  # the grammar engine ran out of canvas (rare)
                print(f"  [no result] {e}")
                total += 1
                continue
            total += 1
            valid += r.valid
            print(f"  [{'valid' if r.valid else 'INVALID'}] {r.text}")
            for err in r.errors:
                print(f"      - {err}")
    print(f"\n{valid}/{total} generated rules valid\n")

    print("# example rules, checked and in canonical form")
    checks = [AlertRulesValidator(catalog), critical_pages_someone]
    for path in sorted((HERE / "rules").glob("*.alert")):
        text = path.read_text().strip()
        issues = [i for check in checks for i in check(text)]
        print(f"  {path.name}: {'ok' if not issues else '; '.join(map(str, issues))}")
        print(f"    {parse_rule(text).canonical()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
