"""Can the copy head learn to *convert* a value, not only copy it, under the LLaDA objective?

The embedded model copies values from a request well and converts almost none ("July" -> ``07``: one
month for every month name, runs 16-17 in docs/training-log.md). This benchmark isolates that skill. The
prompt is random filler, a key token, a "month" token ``w`` (one of 12) and more filler; the answer is
``MAPS[0][w]``, a token that never appears in the prompt, then EOS. Small copy-head ModernBERTs are
trained on it with ``structgen.train.objective.llada_loss`` (``mask_power`` 0.5, as the small recipe) for
the same number of steps and seeds:

- ``no copy head``: a plain ModernBERT masked LM, the map through its layers alone;
- ``copy head``: the pointer copies, the generator must do the map through its layers;
- ``+ conversion path``: the pointer may also emit a token read off the source (``copy_head_convert``);
- ``+ pointer loss``: the same, with the pointer's own loss beside the mixture's (``copy_head_pointer_loss``),
  not on the EOS tail, as ``structgen train`` trains it; ``, EOS too``: on every masked position;
- ``+ source loss``: the pointer loss and the *source loss* (``structgen train --source-loss``): the pointer
  is told which prompt position the answer comes from. With ``--distractors N`` the prompt also holds N
  other month words (no key before them), as a real request holds several candidates: matching alone
  then cannot say which word a slot reads.
- ``+ two maps``: the source loss and two conversion maps per source that the slot chooses among
  (``copy_head_convert_maps`` 2). With ``--forms 2`` each month has two conversions (as "January" is
  ``01`` in a date and ``1`` as an integer) and a form token at the end of the prompt says which one the
  answer takes: one map per source cannot write both.
- ``, on sources``: the pointer's own loss only at the value (``structgen train --pointer-loss-on
  sources``), not at every non-EOS token. It matters with ``--structure``: the answer is then wrapped in
  structural tokens (a prefix that depends on the form, as ``{"date": "2026-`` or ``{"month": ``, and a
  closing token). The prompt names the form's key, as a real prompt names its schema's keys, but no
  punctuation: a pointer loss on every token then asks the conversion path to write the punctuation too,
  since nothing can be copied for it (run 23 in docs/training-log.md).

- ``+ lookup``: no conversion path; the generator reads the prompt's tokens themselves before its
  projection (``copy_head_lookup``, ``structgen train --lookup``); ``+ lookup, source loss``: with the
  source loss, which trains the lookup's weights and the pointer's.

``--topk K`` gives every variant with the conversion path ``copy_head_convert_topk`` K: each slot converts
through its K heaviest sources only (``structgen train --convert-topk``).

Each then writes the answer for every month from an empty canvas (several fillers each); the script prints
the share right and how many distinct answers it gave (1 = a constant). Figures only; nothing is asserted.

    python benchmarks/conversion_task.py                       # every variant x 3 seeds x 1,000 steps
    python benchmarks/conversion_task.py --canvas 16           # a longer EOS tail, as real canvases have
    python benchmarks/conversion_task.py --canvas 16 --distractors 2 --variants "+ pointer loss" "+ source loss"
    python benchmarks/conversion_task.py --canvas 16 --forms 2 --variants "+ source loss" "+ two maps"
    python benchmarks/conversion_task.py --canvas 16 --forms 2 --structure --steps 2000 \
        --variants "+ two maps" "+ two maps, on sources"
    python benchmarks/conversion_task.py --canvas 16 --distractors 2 --variants "+ source loss" --topk 2
    python benchmarks/conversion_task.py --seeds 2 --steps 1500 --lr 1e-3 --variants "no copy head"
    python benchmarks/conversion_task.py --seeds 2 --steps 1500 --hidden 256 --layers 4 --lr 5e-4 --variants "copy head"
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (puts a source checkout on sys.path too)

from structgen.models.copy_head import ModernBertWithCopyHead  # noqa: E402
from structgen.train.objective import llada_loss  # noqa: E402

V, PAD, EOS, MASK, KEY = 256, 0, 1, 2, 3
FORM_TOKENS = (4, 5)  # which conversion the answer takes (--forms 2)
MONTHS = list(range(10, 22))  # the source words
#: their conversions in each form: never in any prompt
MAPS = ({w: 60 + (5 * i) % 12 for i, w in enumerate(MONTHS)}, {w: 80 + (7 * i) % 12 for i, w in enumerate(MONTHS)})
#: --structure: the tokens before the value in each form (as ``{"date": "2026-`` and ``{"month": ``), and after it;
#: the prompt lists only each form's key (31, 34), as a prompt names a schema's keys but not JSON's punctuation
PREFIXES, CLOSE, KEYS = ((30, 31, 32, 33), (30, 34, 32)), 35, (31, 34)
FILLER = range(100, V)
#: name -> (conversion path, pointer loss weight, pointer loss on EOS targets too, source loss weight, maps,
#: pointer loss only at the value, lookup)
#: ``None``: no copy head at all (a plain ``ModernBertForMaskedLM``)
VARIANTS = {"no copy head": None,
            "copy head": (False, 0.0, False, 0.0, 1, False, False),
            "+ conversion path": (True, 0.0, False, 0.0, 1, False, False),
            "+ pointer loss": (True, 0.3, False, 0.0, 1, False, False),
            "+ pointer loss, EOS too": (True, 0.3, True, 0.0, 1, False, False),
            "+ source loss": (True, 0.3, False, 1.0, 1, False, False),
            "+ two maps": (True, 0.3, False, 1.0, 2, False, False),
            "+ source loss, on sources": (True, 0.3, False, 1.0, 1, True, False),
            "+ two maps, on sources": (True, 0.3, False, 1.0, 2, True, False),
            "+ lookup": (False, 0.0, False, 0.0, 1, False, True),
            "+ lookup, source loss": (False, 0.0, False, 1.0, 1, False, True)}


def build(convert: bool, pointer_loss: float, seed: int, hidden: int, layers: int,
          maps: int = 1, topk: int = 0, lookup: bool = False, copy_head: bool = True):
    """A ``ModernBertWithCopyHead`` with these settings, or with ``copy_head=False`` a plain
    ``ModernBertForMaskedLM`` of the same config and seed."""
    from transformers import ModernBertConfig, ModernBertForMaskedLM

    torch.manual_seed(seed)
    cfg = ModernBertConfig(vocab_size=V, hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers,
                           num_attention_heads=max(1, hidden // 64), layer_types=["full_attention"] * layers,
                           pad_token_id=PAD, eos_token_id=EOS, sep_token_id=EOS, bos_token_id=None, cls_token_id=None,
                           attn_implementation="sdpa", copy_head_mask_id=MASK, copy_head_neighbours=True,
                           copy_head_convert=convert, copy_head_pointer_loss=pointer_loss,
                           copy_head_convert_maps=maps, copy_head_convert_topk=topk if convert else 0,
                           copy_head_lookup=lookup)
    return ModernBertWithCopyHead(cfg) if copy_head else ModernBertForMaskedLM(cfg)


def prompt(rng: random.Random, w: int, filler: int, distractors: int = 0,
           form: int | None = None, structure: bool = False) -> tuple[list[int], int]:
    """Filler, ``KEY w``, filler, with ``distractors`` other month words among the filler (then the form's
    token when ``form`` is given, then the form's key with ``structure``, as a prompt lists its schema's
    keys); and where ``w`` is."""
    before = [rng.choice(FILLER) for _ in range(rng.randint(0, filler))]
    after = [rng.choice(FILLER) for _ in range(rng.randint(0, filler))]
    for _ in range(distractors):
        side = before if rng.random() < 0.5 else after
        side.insert(rng.randint(0, len(side)), rng.choice([m for m in MONTHS if m != w]))
    tail = [] if form is None else [FORM_TOKENS[form]]
    if structure:
        tail += [KEYS[form or 0]]
    return before + [KEY, w] + after + tail, len(before) + 1


def answer(w: int, form: int, canvas_len: int, structure: bool) -> tuple[list[int], int]:
    """The canvas for month ``w`` in ``form`` (the value, or with ``structure`` the form's prefix, the value
    and the closing token; then EOS) and where the value is."""
    head = list(PREFIXES[form]) if structure else []
    body = head + [MAPS[form][w]] + ([CLOSE] if structure else [])
    if len(body) > canvas_len:
        raise SystemExit(f"--canvas {canvas_len} is too short for the answer ({len(body)} tokens); use --canvas 16")
    return body + [EOS] * (canvas_len - len(body)), len(head)


def batch(rng: random.Random, n: int, filler: int, canvas_len: int, distractors: int = 0, forms: int = 1,
          structure: bool = False):
    """``(ids, attention mask, canvas, sources)``: ``sources[i, a, j]`` marks row ``i``'s value ``a`` and
    the position ``j`` of its month word (the source loss's target)."""
    rows = []
    for _ in range(n):
        w, f = rng.choice(MONTHS), rng.randrange(forms)
        p, at = prompt(rng, w, filler, distractors, f if forms > 1 else None, structure)
        c, v = answer(w, f, canvas_len, structure)
        rows.append((p, c, at, v))
    L = max(len(p) + len(c) for p, c, _, _ in rows)
    ids = torch.full((n, L), PAD)
    att = torch.zeros(n, L, dtype=torch.long)
    canvas = torch.zeros(n, L, dtype=torch.bool)
    sources = torch.zeros(n, L, L, dtype=torch.bool)
    for i, (p, c, at, v) in enumerate(rows):
        ids[i, :len(p) + len(c)] = torch.tensor(p + c)
        att[i, :len(p) + len(c)] = 1
        canvas[i, len(p):len(p) + len(c)] = True
        sources[i, len(p) + v, at] = True
    return ids, att, canvas, sources


@torch.no_grad()
def decode(model, p: list[int], canvas_len: int) -> list[int]:
    """The canvas after ``p`` filled from all masks, one position per model call, the most confident first."""
    ids = torch.tensor([p + [MASK] * canvas_len])
    for _ in range(canvas_len):
        masked = ids[0, len(p):] == MASK
        probs = model(input_ids=ids).logits[0, len(p):].float().softmax(-1)
        conf, tok = probs.max(-1)
        i = int(torch.where(masked, conf, conf.new_tensor(-1.0)).argmax())
        ids[0, len(p) + i] = tok[i]
    return ids[0, len(p):].tolist()


@torch.no_grad()
def answers(model, rng: random.Random, filler: int, canvas_len: int, per_month: int,
            distractors: int = 0, forms: int = 1, structure: bool = False) -> list[tuple[int, int]]:
    """(wanted, written) for every month in every form, ``per_month`` fillers each, decoded from an empty
    canvas: the argmax at the answer's slot, or with ``structure`` the whole canvas decoded (a wrong
    structure counts as a wrong answer)."""
    out = []
    for w in MONTHS:
        for f in range(forms):
            for _ in range(per_month):
                p, _ = prompt(rng, w, filler, distractors, f if forms > 1 else None, structure)
                want, v = answer(w, f, canvas_len, structure)
                if structure:
                    got = decode(model, p, canvas_len)
                    out.append((want[v], got[v] if got[:v + 2] == want[:v + 2] else -1))
                else:
                    ids = torch.tensor([p + [MASK] * canvas_len])
                    out.append((want[v], int(model(input_ids=ids).logits[0, len(p)].argmax())))
    return out


def run(name: str, seed: int, args) -> tuple[float, int, float]:
    copy_head = VARIANTS[name] is not None  # "no copy head" trains as "copy head" does, without its modules
    convert, pointer_loss, eos_too, source_loss, maps, on_sources, lookup = VARIANTS[name] or VARIANTS["copy head"]
    model = build(convert, pointer_loss, seed, args.hidden, args.layers, maps, args.topk, lookup, copy_head).train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    rng, noise = random.Random(seed), torch.Generator().manual_seed(seed)
    t0 = time.time()
    for _ in range(args.steps):
        ids, att, canvas, sources = batch(rng, args.batch, args.filler, args.canvas, args.distractors, args.forms,
                                          args.structure)
        # eos_id only tells the pointer loss to skip the EOS tail here (no prefix or frontier rows)
        loss, _ = llada_loss(model, ids, att, canvas, MASK, generator=noise, eos_id=None if eos_too else EOS,
                             mask_power=0.5, sources=sources, source_loss=source_loss,
                             pointer_on_sources=on_sources)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    got = answers(model, random.Random(seed + 1000), args.filler, args.canvas, 5, args.distractors, args.forms,
                  args.structure)
    right = sum(a == b for a, b in got) / len(got)
    return right, len({b for _, b in got}), time.time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--filler", type=int, default=8, help="most filler tokens on each side of the month")
    ap.add_argument("--canvas", type=int, default=4, help="canvas length: the answer, then EOS")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3, help="AdamW's learning rate (default 3e-3; at --hidden 256 "
                    "--layers 4 the map needs about 5e-4: training log, run 35)")
    ap.add_argument("--distractors", type=int, default=0, help="other month words in each prompt")
    ap.add_argument("--forms", type=int, choices=(1, 2), default=1, help="conversions per month; 2: a form "
                    "token in the prompt says which one the answer takes")
    ap.add_argument("--structure", action="store_true", help="wrap the answer in structural tokens that the "
                    "prompt lists too (a prefix per form and a closing token), as JSON wraps a value")
    ap.add_argument("--topk", type=int, default=0, help="the conversion path reads each slot's K heaviest "
                    "sources only (default 0: every source)")
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    jobs = [(name, seed) for name in args.variants for seed in range(args.seeds)]
    results: dict[str, list[tuple[float, int, float]]] = {name: [] for name in args.variants}
    with C.progress() as bar:
        task = bar.add_task("training", total=len(jobs))
        for name, seed in jobs:
            results[name].append(run(name, seed, args))
            bar.advance(task)
    print(f"{args.steps} steps x {args.batch} rows, {args.layers} x {args.hidden}, filler <= {args.filler} per side, "
          f"canvas {args.canvas}{' with structure' if args.structure else ''}, {args.distractors} distractor months, "
          f"{args.forms} form(s), {f'conversion through the top {args.topk} sources, ' if args.topk else ''}"
          f"{args.seeds} seeds; months right from an empty canvas (distinct answers, 1 = a constant)")
    for name, rs in results.items():
        cells = ", ".join(f"{r:.0%} ({d})" for r, d, _ in rs)
        print(f"  {name:<24} {cells}   ({sum(s for *_, s in rs) / len(rs):.0f} s per run)")


if __name__ == "__main__":
    main()
