"""Alert rules from random logits: the share of valid results through the catalog-narrowed spec.

``RandomLogits`` over the 4k test tokenizer writes whatever the grammar lets through, so the share of
valid results measures what the grammar leaves to the validator (and to repair rounds). Seeds are spread
over block lengths (4, 8, 16, 32) and two commit policies (threshold 0.9, one token per step); each run
has an 80-token canvas and the default 3 repair rounds. Printed per spec: valid, invalid (with the most
common first error) and stuck (``CanvasTooSmallError``: the grammar engine could not finish in the canvas).

    python benchmarks/alert_validity.py
    python benchmarks/alert_validity.py --seeds 200 --json alerts.json
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

BLOCKS = (4, 8, 16, 32)
POLICIES = ({"threshold": 0.9, "tokens_per_step": None}, {"threshold": None, "tokens_per_step": 1})


def run(spec, tok, seeds: int, bar, task) -> tuple[Counter, Counter]:
    import structgen as sg

    tally: Counter = Counter()
    first_errors: Counter = Counter()
    for seed in range(seeds):
        gen = sg.Generator(sg.models.RandomLogits(tok, seed=seed), block_length=BLOCKS[seed % len(BLOCKS)],
                           **POLICIES[(seed // len(BLOCKS)) % len(POLICIES)])
        try:
            r = gen.generate("page ops when cpu is above 90% for 5 minutes", spec, max_tokens=80, strict=False)
        except sg.CanvasTooSmallError:
            tally["stuck"] += 1
        else:
            tally["valid" if r.valid else "invalid"] += 1
            if not r.valid:
                first_errors[r.errors[0][:70]] += 1
        bar.advance(task)
    return tally, first_errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=100, help="runs per spec (default 100)")
    C.add_common_args(ap, device=False)
    args = ap.parse_args()
    C.setup_torch(args)
    C.quiet_warnings()
    from structgen.validators.alerts import alerts_spec

    catalog = C.ROOT / "examples" / "alerts" / "catalog.json"
    specs = {"alerts_spec(catalog)": alerts_spec(catalog)}
    tok = C.tokenizer("4k")
    rows, payload = [], {"seeds": args.seeds, "specs": {}}
    with C.progress() as bar:
        for name, spec in specs.items():
            task = bar.add_task(name, total=args.seeds)
            tally, errors = run(spec, tok, args.seeds, bar, task)
            common = errors.most_common(1)[0][0] if errors else "-"
            rows.append([name, tally["valid"], tally["invalid"], tally["stuck"], tally["valid"] / args.seeds, common])
            payload["specs"][name] = {**tally, "first_errors": dict(errors)}
    C.console.print(C.table("Alert rules from random logits (80-token canvas, 3 repair rounds)",
                            ["spec", "valid", "invalid", "stuck", "valid share", "most common first error"], rows))
    C.write_json(args.json, payload)


if __name__ == "__main__":
    main()
