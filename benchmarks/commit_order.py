"""When does decoding settle a tool call's name? The order in which a trained model commits a call's parts.

``tool_name_probe.py`` asks the model which tool a request wants with nothing else written; decoding does not
ask that: the sampler commits, step by step, the positions it is surest of, and the constraint then keeps only
the tools whose schema fits what was committed. A model that commits an argument's value (``"Porto"``) before
the name lets the constraint pick the tool from the value. For each tool-call example (``structgen eval``'s
seed and canvas, constrained decoding with the step trace) this prints: whether the name was right, the model
call at which the name's last token was committed (as a share of the call's model calls), whether a model
step or the constraint (a forced step) finished it, and what share of the arguments' tokens were committed by
then (that step included). The name's positions are those of the final canvas; a call repaired after a failed
validation is timed at the first step, of any attempt, that had them all filled. Figures only; nothing is
asserted.

    python benchmarks/commit_order.py                          # the embedded model
    python benchmarks/commit_order.py --model DIR -n 20 --split heldout,train --json order.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
from tool_name_probe import PREFIX  # noqa: E402  (a tool call's canonical opening, up to the name)


def name_positions(tok, ids: list[int], name: str) -> list[int]:
    """Canvas positions whose characters fall inside the name (after ``PREFIX``) of the decoded call."""
    start, end = len(PREFIX), len(PREFIX) + len(name)
    out, at = [], 0
    for i, t in enumerate(ids):
        piece = tok.decode([t])
        if at < end and at + len(piece) > start:
            out.append(i)
        at += len(piece)
        if at >= end:
            break
    return out


def order_of(model, gen, example, canvas: int) -> dict:
    """One constrained decoding of ``example`` with its trace, read for the name's commit."""
    r = gen.generate(example.prompt, example.spec, canvas, trace=True)
    final = r.trace[-1].canvas if r.trace else []
    gold = json.loads(example.target)["name"]
    try:
        name = json.loads(r.text)["name"]
    except (ValueError, KeyError, TypeError):
        return {"right": False, "valid": False}
    where = name_positions(model.tokenizer, final, name)  # the final canvas has no masks left
    start = max(where) + 1 if where else len(final)
    args = [i for i in range(start, len(final)) if final[i] >= 0 and final[i] != model.eos_id]  # not the tail
    for ev in r.trace:
        if ev.kind in ("model", "forced") and where and all(ev.canvas[i] >= 0 for i in where):
            before = sum(ev.canvas[i] >= 0 for i in args)
            return {"right": name == gold, "valid": True, "at_nfe": ev.nfe / max(r.nfe, 1),
                    "by": ev.kind, "args_before": before / max(len(args), 1), "nfe": r.nfe}
    return {"right": name == gold, "valid": True, "at_nfe": 1.0, "by": "none", "args_before": 1.0, "nfe": r.nfe}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    C.add_model_args(ap, n=20)
    ap.add_argument("--split", default="heldout", help="heldout, train or both (comma-separated)")
    args = ap.parse_args()
    model = C.load_probed_model(args)
    import structgen as sg
    from structgen.train.data import examples
    from structgen.train.evaluate import CANVAS

    gen = sg.Generator(model)
    splits = [s.strip() for s in args.split.split(",") if s.strip()]
    rows, payload = [], {"env": C.environment(args), "model": args.model or "default", "splits": {}}
    with C.progress() as bar:
        task = bar.add_task("decodings", total=len(splits) * args.n)
        for split in splits:
            got = []
            for ex in examples("tool", split, args.n, args.seed):
                got.append(order_of(model, gen, ex, CANVAS["tool"]))
                bar.advance(task)
            ok = [g for g in got if g["valid"]]
            by_model = sum(g["by"] == "model" for g in ok)
            rows.append([split, f"{sum(g['right'] for g in got)}/{len(got)}",
                         f"{mean(g['at_nfe'] for g in ok):.2f}" if ok else "-",
                         f"{by_model}/{len(ok)}",
                         f"{mean(g['args_before'] for g in ok):.0%}" if ok else "-",
                         f"{mean(g['nfe'] for g in ok):.1f}" if ok else "-"])
            payload["splits"][split] = got
    C.console.print(C.table(f"When the tool's name is settled while decoding ({args.model or 'embedded model'})",
                            ["split", "right name", "name settled at (share of model calls)",
                             "name finished by a model step (not forced)", "argument tokens committed by then",
                             "model calls"], rows))
    C.write_json(args.json, payload)


if __name__ == "__main__":
    main()
