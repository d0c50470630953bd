"""SQL validity through ``sg.Sql(shop)``: how many answers the repair rounds mend, how many only the strict
fallback does, and how many only the salvage does: the cut (the longest complete prefix that validates),
the finisher (the longest prefix the grammar can finish in the canvas, finished) or, when no prefix can be
finished, the replacement (a short output of the grammar: the widest room's completion from nothing, or
the grammar's shortest output).

Two writers: ``RandomLogits`` over the 4k test tokenizer (whatever the grammar lets through, so it measures
what the default grammar leaves to the validators), seeds spread over block lengths 8/16/32 and two commit
policies; and the embedded model (or ``--model DIR``) on questions of the held-out SQL split (``structgen
eval``'s examples).
Each run has a 64-token canvas (128 for the embedded model, as ``structgen eval``) and 3 repair rounds.
Printed per writer: valid in the first stage (with its repair rounds), valid through the strict fallback,
valid through the cut, the finisher or the replacement, still invalid, stuck (``CanvasTooSmallError``), the
model calls per answer in each case, and the most common error that sent answers to the fallback.
``--json`` also keeps every salvaged answer (its question, cut, finished or replaced, and its text).

    python benchmarks/sql_validity.py
    python benchmarks/sql_validity.py --seeds 100 --questions 64 --json sql_validity.json
    python benchmarks/sql_validity.py --seeds 0 --questions 50 --model path/to/model
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

BLOCKS = (8, 16, 32)
STAGES = ("first stage", "fallback", "cut", "finished", "replaced")  # where a valid answer came from
SALVAGE = {"cut to its longest complete prefix": "cut", "finished: ": "finished",  # event note -> stage
           "replaced by a short output": "replaced"}
POLICIES = ({"threshold": 0.9, "tokens_per_step": None}, {"threshold": None, "tokens_per_step": 2})


def run(jobs, spec, bar, task) -> dict:
    """``jobs``: (generator, prompt, max_tokens) triples; the tallies of their results."""
    import structgen as sg

    tally: Counter = Counter()
    nfe: dict[str, list[int]] = {k: [] for k in STAGES}
    causes: Counter = Counter()
    salvaged: list[dict] = []
    for gen, prompt, max_tokens in jobs:
        trace = []
        try:
            r = gen.generate(prompt, spec, max_tokens=max_tokens, strict=False,
                             on_step=lambda e: trace.append(e) if e.kind == "remask" else None)
        except sg.CanvasTooSmallError:
            tally["stuck"] += 1
        else:
            if r.fallback:
                note = next((e.note for e in trace if e.note.startswith("strict fallback after: ")), "")
                causes[note.removeprefix("strict fallback after: ")[:70]] += 1
            salvage = next((v for e in trace for k, v in SALVAGE.items() if e.note.startswith(k)), None)
            key = "invalid" if not r.valid else salvage or ("fallback" if r.fallback else "first stage")
            tally[key] += 1
            if salvage:
                salvaged.append({"prompt": str(prompt), "how": salvage, "text": r.text})
            if r.valid:
                nfe[key].append(r.nfe)
        bar.advance(task)
    return {"tally": tally, "nfe": nfe, "causes": causes, "salvaged": salvaged}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=48, help="random-logits runs (default 48)")
    ap.add_argument("--questions", type=int, default=32, help="held-out questions for the embedded model (32)")
    ap.add_argument("--model", default=None, help="a model directory to ask instead of the embedded model")
    C.add_common_args(ap, device=False)
    args = ap.parse_args()
    C.setup_torch(args)
    C.quiet_warnings()
    import structgen as sg
    from structgen.train.data import examples

    spec = sg.Sql(C.ROOT / "examples" / "shop" / "shop.sqlite")
    tok = C.tokenizer("4k")
    random_jobs = [(sg.Generator(sg.models.RandomLogits(tok, seed=s), block_length=BLOCKS[s % len(BLOCKS)],
                                 **POLICIES[(s // len(BLOCKS)) % len(POLICIES)]),
                    "How many customers are from Germany?", 64) for s in range(args.seeds)]
    embedded = sg.Generator(sg.load_model(args.model))
    model_jobs = [(embedded, ex.prompt, 128) for ex in examples("sql", "heldout", args.questions, 1234)]
    rows, payload = [], {"seeds": args.seeds, "questions": args.questions, "writers": {}}
    with C.progress() as bar:
        for name, jobs in (("random logits", random_jobs), (args.model or "embedded model", model_jobs)):
            if not jobs:
                continue
            task = bar.add_task(name, total=len(jobs))
            out = run(jobs, spec, bar, task)
            t, n = out["tally"], len(jobs)
            mean = {k: sum(v) / len(v) if v else float("nan") for k, v in out["nfe"].items()}
            cause = out["causes"].most_common(1)[0][0] if out["causes"] else "-"
            rows.append([name, n, *(t[k] for k in STAGES), t["invalid"], t["stuck"],
                         sum(t[k] for k in STAGES) / n, *(mean[k] for k in STAGES), cause])
            payload["writers"][name] = {**t, "nfe_mean": mean, "fallback_causes": dict(out["causes"]),
                                        "salvaged": out["salvaged"]}
    C.console.print(C.table("SQL answers through sg.Sql(shop): first stage (3 repair rounds), strict fallback, "
                            "salvage (cut, finished or replaced)",
                            ["writer", "n", *(f"valid, {k}" for k in STAGES), "invalid", "stuck", "valid share",
                             *(f"nfe ({k})" for k in STAGES), "most common cause of a fallback"],
                            rows))
    C.write_json(args.json, payload)


if __name__ == "__main__":
    main()
