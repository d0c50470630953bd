"""How well a trained model reads a value it must convert, against one it can copy: teacher-forced, per token.

For each example (tool calls and JSON extraction, held-out and training templates) the gold answer is laid on
the canvas with its EOS tail; one answer token at a time is masked and the model's argmax there is compared
with the gold token. Tokens are counted in two classes, both inside the answer's *values* (not keys or
punctuation) and with a letter or digit in them:

* **converted**: the run of letters and digits the token belongs to is not a run of the prompt (the month
  ``07`` and the day ``02`` of ``2027-07-02`` for "2 July 2027", ``SEK`` for "Swedish kronor", ``16`` for
  "4:30 pm");
* **copied**: it is (``Dentist``, ``2027``, ``Søren`` of ``C:\\Users\\Søren``), however the tokenizer cuts it.

Everything else of the answer is visible, so this isolates the lookup from decoding order and from the
other values: the shipped model (run 11) gets 1 month in 35 right this way on its own training templates
(training log, run 16), which is what ``structgen train --drill-examples`` is for.

    python benchmarks/value_lookup.py                       # the embedded model
    python benchmarks/value_lookup.py --model DIR -n 60 --json lookup.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402


def leaf_texts(value) -> list[str]:
    """The texts of a gold value's leaves as the answer writes them (strings without quotes; no booleans,
    nulls or empty containers), in order."""
    from structgen.train.evaluate import _leaves

    return [v if isinstance(v, str) else json.dumps(v) for v in _leaves(value).values()
            if v is not None and not isinstance(v, (bool, dict, list))]


def value_tokens(tok, example) -> list[tuple[int, str, bool, bool]]:
    """``(index, token text, converted, month)`` for the answer's value tokens with a letter or digit;
    ``month``: the token is the month of an ISO date (``2027-07-02``)."""
    target = example.target
    enc = tok(target, add_special_tokens=False, return_offsets_mapping=True, split_special_tokens=True)
    prompt = json.dumps(example.prompt, ensure_ascii=False) if not isinstance(example.prompt, str) else example.prompt
    gold = example.gold["arguments"] if example.family == "tool" else example.gold
    spans, start = [], 0
    for text in leaf_texts(gold):
        at = target.find(text, start)
        if at >= 0:
            spans.append((at, at + len(text)))
            start = at + len(text)
    runs = set(RUN.findall(prompt))
    out = []
    for i, (a, b) in enumerate(enc["offset_mapping"]):
        piece = target[a:b].strip()
        if piece and any(ch.isalnum() for ch in piece) and any(s <= a and b <= e for s, e in spans):
            month = bool(re.fullmatch(r"\d{4}-", target[max(0, a - 5):a])) and target[b:b + 1] == "-"
            out.append((i, piece, not all(r in runs for r in _runs_at(target, a, b)), month))
    return out


RUN = re.compile(r"[^\W_]+")  # a run of letters and digits


def _runs_at(text: str, a: int, b: int) -> list[str]:
    """The runs of letters and digits that ``text[a:b]`` (a token) touches, each whole."""
    while a > 0 and text[a - 1].isalnum():
        a -= 1
    while b < len(text) and text[b].isalnum():
        b += 1
    return RUN.findall(text[a:b])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    ap.add_argument("-n", type=int, default=40, help="examples per family and split (default 40)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--families", default="tool,json")
    C.add_common_args(ap, device=False)
    args = ap.parse_args()
    C.setup_torch(args)
    C.quiet_warnings()
    import torch

    import structgen as sg
    from structgen.train.data import examples
    from structgen.train.evaluate import CANVAS
    from structgen.train.tokenizer import encode_target

    model = sg.load_model(args.model)
    tok = model.tokenizer
    counts: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    months: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    fams = [f.strip() for f in args.families.split(",") if f.strip()]
    with C.progress() as bar:
        task = bar.add_task("examples", total=len(fams) * 2 * args.n)
        for fam in fams:
            for split in ("heldout", "train"):
                for ex in examples(fam, split, args.n, args.seed):
                    prompt = model.encode_prompt(ex.spec.render_prompt(ex.prompt))
                    target = encode_target(tok, ex.target)
                    canvas = target + [model.eos_id] * max(0, CANVAS[fam] - len(target))
                    slots = value_tokens(tok, ex)
                    if slots:
                        rows = torch.tensor([prompt + canvas] * len(slots))
                        for r, (i, *_) in enumerate(slots):
                            rows[r, len(prompt) + i] = model.mask_id
                        with torch.inference_mode():
                            logits = model.logits(rows, start=len(prompt))
                        for r, (i, _, converted, month) in enumerate(slots):
                            right = int(logits[r, i].argmax()) == target[i]
                            tallies = [counts[(fam, split, "converted" if converted else "copied")]]
                            if month and converted:
                                tallies.append(months[(fam, split)])
                            for c in tallies:
                                c[0] += right
                                c[1] += 1
                    bar.advance(task)
    rows, payload = [], {"env": C.environment(args), "model": args.model or "default", "n": args.n, "results": {}}
    for (fam, split, kind), (right, total) in sorted(counts.items()):
        rows.append([fam, split, kind, total, 100.0 * right / max(1, total)])
        payload["results"][f"{fam}/{split}/{kind}"] = {"tokens": total, "right": right}
    for (fam, split), (right, total) in sorted(months.items()):
        rows.append([fam, split, "converted: month of a date", total, 100.0 * right / max(1, total)])
        payload["results"][f"{fam}/{split}/month"] = {"tokens": total, "right": right}
    title = f"Value tokens predicted with the rest of the answer visible ({args.model or 'embedded model'})"
    C.console.print(C.table(title, ["family", "split", "value tokens", "count", "right %"], rows))
    C.write_json(args.json, payload)


if __name__ == "__main__":
    main()
