"""Does a trained model read a month name? Twelve one-value probes, decoded as users decode.

Two schemas, each asked for every month: ``{"month": integer 1-12}`` from "Month: July" and
``{"date": string, format date}`` from "Date: July 14, 2026". A model that reads the word writes ``7`` and
``2026-07-14``; one that does not writes the same month for every name (the shipped run 11 writes 7 for
every "Month: ..." and 2026-07-14 for almost every date; training log, run 17). Decoded with the default
``sg.Generator`` (constrained), so the figures are what a user would get. For a copy-head model it also
prints where the pointer looks: its weight on the month word at the month's slot, with the answer written
up to that slot and the rest masked (run 19's pointer put 0.00 there), and for a model with the lookup the
lookup's weight there too (run 33's read the canvas beside the slot). Figures only; nothing is asserted.

    python benchmarks/month_probe.py                   # the embedded model
    python benchmarks/month_probe.py --model DIR --json probe.json
"""

from __future__ import annotations

import argparse
import calendar
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

MONTH = {"type": "object", "properties": {"month": {"type": "integer", "minimum": 1, "maximum": 12}},
         "required": ["month"], "additionalProperties": False}
DATE = {"type": "object", "properties": {"date": {"type": "string", "format": "date"}},
        "required": ["date"], "additionalProperties": False}


#: the answer up to the month's slot, per probe kind
PREFIX = {"month number": '{"month": ', "ISO date": '{"date": "2026-'}


def weights_on_word(model, prompt: str, schema: dict, prefix: str, word: str,
                    canvas: int = 24) -> tuple[float, float | None] | None:
    """The copy head's weight on the prompt tokens of ``word`` at the first position after ``prefix`` (the rest
    of the canvas masked), and the lookup's (None without one); None for a model without a copy head."""
    import torch

    import structgen as sg
    from structgen.train.sources import text_positions

    hf = model.model
    if not hasattr(hf, "mixed_log_probs"):
        return None
    prompt_ids = model.encode_prompt(sg.JsonSchema(schema).render_prompt(prompt))
    answer = model.tokenizer.encode(prefix, add_special_tokens=False)
    ids = torch.tensor([prompt_ids + answer + [model.mask_id] * (canvas - len(answer))], device=model.device)
    slot = torch.zeros_like(ids, dtype=torch.bool)
    slot[0, len(prompt_ids) + len(answer)] = True
    prompt = torch.zeros_like(slot)
    prompt[0, :len(prompt_ids)] = True
    with torch.no_grad():
        parts = hf.masked_log_probs(ids, None, slot, pointer=True, prompt=prompt)
    on_word = text_positions(model.tokenizer, prompt_ids, word)  # every token of the word

    def on(weights):
        return float(weights[0, on_word].sum()) if on_word else 0.0

    return on(parts.attn), None if parts.lookup is None else on(parts.lookup)


def probes() -> list[tuple[str, str, dict, object]]:
    """(kind, prompt, schema, the right value) for both schemas and every month."""
    out = []
    for m in range(1, 13):
        name = calendar.month_name[m]
        out.append(("month number", f"Month: {name}", MONTH, {"month": m}))
        out.append(("ISO date", f"Date: {name} 14, 2026", DATE, {"date": f"2026-{m:02d}-14"}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    C.add_model_args(ap)
    args = ap.parse_args()
    model = C.load_probed_model(args)
    import structgen as sg

    gen = sg.Generator(model)
    rows, right, seen, pointed, looked = [], {}, {}, {}, {}
    with C.progress() as bar:
        task = bar.add_task("probes", total=24)
        for kind, prompt, schema, want in probes():
            r = gen.generate(prompt, sg.JsonSchema(schema), max_tokens=24)
            ok = r.value == want
            right[kind] = right.get(kind, 0) + ok
            seen.setdefault(kind, set()).add(json.dumps(r.value, sort_keys=True))
            w = weights_on_word(model, prompt, schema, PREFIX[kind], prompt.split()[1])
            if w is not None:
                pointed.setdefault(kind, []).append(w[0])
                if w[1] is not None:
                    looked.setdefault(kind, []).append(w[1])
            rows.append([kind, prompt, r.text, "yes" if ok else "no", "-" if w is None else f"{w[0]:.2f}",
                         "-" if w is None or w[1] is None else f"{w[1]:.2f}"])
            bar.advance(task)
    title = f"Month probes ({args.model or 'embedded model'})"
    caption = "; ".join(f"{k}: {right[k]}/12 right, {len(seen[k])} distinct answers"
                        + (f", pointer on the month word {sum(pointed[k]) / 12:.2f}" if k in pointed else "")
                        + (f", lookup {sum(looked[k]) / 12:.2f}" if k in looked else "")
                        for k in right)
    C.console.print(C.table(title, ["probe", "prompt", "answer", "right", "pointer on the month",
                                    "lookup on the month"], rows, caption=caption))
    C.write_json(args.json, {"env": C.environment(args), "model": args.model or "default",
                             "right": right, "distinct": {k: len(v) for k, v in seen.items()},
                             "pointer_on_month": {k: sum(v) / len(v) for k, v in pointed.items()},
                             "lookup_on_month": {k: sum(v) / len(v) for k, v in looked.items()},
                             "answers": [{"prompt": p, "answer": a} for _, p, a, *_ in rows]})


if __name__ == "__main__":
    main()
