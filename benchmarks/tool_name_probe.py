"""Does a trained model tell which tool a request asks for? The tool name scored with the arguments unknown.

For each tool-call example (held-out and training templates, the same seed as ``structgen eval``), the
canvas is ``{"name": "`` followed by masks only, and every tool of the example's list is scored by the sum
of its name tokens' log-probabilities there (one model call per example: all candidates read the same
all-masked canvas). The request's intent is then the only clue: no argument has been written. Run 24 of
the training log chose the wrong tool in 23 of 50 held-out calls while decoding; this says whether the
model itself cannot tell, or the decoding order misleads it. Figures only; nothing is asserted.

    python benchmarks/tool_name_probe.py                     # the embedded model
    python benchmarks/tool_name_probe.py --model DIR -n 100 --json names.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

PREFIX = '{"name": "'


def choose(model, example) -> tuple[str, str]:
    """(gold name, the name whose tokens score highest after ``PREFIX`` with the rest of the canvas masked)."""
    import torch

    from structgen.train.evaluate import CANVAS
    from structgen.train.tokenizer import encode_target

    tok = model.tokenizer
    prompt = model.encode_prompt(example.spec.render_prompt(example.prompt))
    head = encode_target(tok, PREFIX)
    ids = torch.tensor([prompt + head + [model.mask_id] * (CANVAS["tool"] - len(head))])
    with torch.no_grad():
        logp = model.logits(ids, start=len(prompt) + len(head))[0].float().log_softmax(-1)
    quote = encode_target(tok, '"')
    scores = {}
    for name in (t.name for t in example.spec.tools):
        full = encode_target(tok, PREFIX + name + '"')
        if full[:len(head)] != head or full[-1:] != quote:
            raise SystemExit(f"this tokenizer merges {name!r} with the JSON around it; the probe needs the "
                             f"name's own tokens between {PREFIX!r} and '\"'")
        scores[name] = sum(float(logp[i, t]) for i, t in enumerate(full[len(head):-1]))
    return json.loads(example.target)["name"], max(scores, key=scores.get)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    C.add_model_args(ap, n=50)
    args = ap.parse_args()
    model = C.load_probed_model(args)
    from structgen.train.data import examples

    rows, payload = [], {"env": C.environment(args), "model": args.model or "default", "splits": {}}
    with C.progress() as bar:
        task = bar.add_task("examples", total=2 * args.n)
        for split in ("heldout", "train"):
            got = []
            for ex in examples("tool", split, args.n, args.seed):
                got.append(choose(model, ex))
                bar.advance(task)
            right = sum(g == c for g, c in got)
            wrong = Counter(f"{g} -> {c}" for g, c in got if g != c)
            rows.append([split, f"{right}/{len(got)}", ", ".join(f"{k} ({v})" for k, v in wrong.most_common(4))])
            payload["splits"][split] = {"right": right, "n": len(got), "confusions": dict(wrong)}
    C.console.print(C.table(f"Tool name with the arguments masked ({args.model or 'embedded model'})",
                            ["split", "right", "commonest mistakes (gold -> chosen)"], rows))
    C.write_json(args.json, payload)


if __name__ == "__main__":
    main()
