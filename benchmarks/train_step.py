"""The cost of one training step of ``structgen train``'s model under dropout and conversion-path settings.

Each setting builds the ``small`` preset's model (``structgen.train.model_init.build_model``, copy head
included) over the 4k test tokenizer and times the trainer's own step (``structgen.train.step.training_step``: the
LLaDA loss with the preset's noise settings, backward, gradient clipping and AdamW) on one fixed batch,
under the same bfloat16 autocast decision as the trainer (``use_bf16``). The settings take turns, one step each per
round, so a machine that slows down mid-run slows every setting alike. Printed per setting: the median
and 90th-percentile milliseconds per step, and the batch's tokens per second at the median.

Why: attention dropout moves PyTorch's scaled-dot-product attention off its fused CPU kernel (training
log, runs 12 and 14); ``--attention-dropout 0`` keeps it. The copy head's conversion path (``--convert-path``)
cost more than half of run 24's throughput; ``--convert-topk`` projects only the sources each position
reads most (training log, run 25).

    python benchmarks/train_step.py
    python benchmarks/train_step.py --settings "no dropout" "conversion path" "conversion path, top 4"
    python benchmarks/train_step.py --rounds 20 --rows 16 --length 256 --json train_step.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

#: name -> TrainConfig.small overrides
SETTINGS = {
    "no dropout": {},
    "dropout 0.1 (attention too)": {"dropout": 0.1},
    "dropout 0.1, attention 0": {"dropout": 0.1, "attention_dropout": 0.0},
    "conversion path": {"copy_convert": True},
    "conversion path, top 4": {"copy_convert": True, "convert_topk": 4},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=12, help="timed steps per setting (default 12)")
    ap.add_argument("--rows", type=int, default=16, help="rows per batch (the preset's batch_size)")
    ap.add_argument("--length", type=int, default=256, help="positions per row (default 256)")
    ap.add_argument("--settings", nargs="+", choices=tuple(SETTINGS), default=tuple(SETTINGS),
                    metavar="NAME", help=f"settings to time (default all: {', '.join(SETTINGS)})")
    C.add_common_args(ap)
    args = ap.parse_args()
    C.setup_torch(args)
    C.quiet_warnings()
    import torch

    from structgen.train.batches import Batch
    from structgen.train.config import TrainConfig
    from structgen.train.model_init import build_model, use_bf16
    from structgen.train.step import make_optimizer, training_step

    tok = C.tokenizer("4k")
    device = torch.device(args.device)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(300, len(tok), (args.rows, args.length), generator=g)
    att = torch.ones_like(ids)
    att[args.rows // 2:, args.length * 3 // 4:] = 0  # half the rows padded, as bucketing leaves them
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, args.length // 2:] = att[:, args.length // 2:].bool()  # the second half is the response
    batch = Batch(ids, att, canvas, ("bench",) * args.rows).to(device)
    runs = {}
    for name in args.settings:
        cfg = TrainConfig.small(**SETTINGS[name], device=args.device)
        torch.manual_seed(0)
        model = build_model(tok, cfg).to(device).train()
        runs[name] = (cfg, model, make_optimizer(model, cfg), [])
    bf16 = use_bf16(TrainConfig.small(device=args.device), device)
    noise = torch.Generator(device=device).manual_seed(0)

    with C.progress() as bar:
        task = bar.add_task("steps", total=(args.rounds + 2) * len(runs))
        for r in range(args.rounds + 2):  # two warm-up rounds, not timed
            for cfg, model, opt, times in runs.values():
                C.sync(device)
                t0 = time.perf_counter()
                training_step(model, opt, batch, cfg, tok.mask_token_id, tok.eos_token_id, noise, bf16)
                C.sync(device)
                if r >= 2:
                    times.append(time.perf_counter() - t0)
                bar.advance(task)
    n_tokens = batch.n_tokens
    rows, payload = [], {"env": C.environment(args), "bf16": bf16, "rows": args.rows, "length": args.length,
                         "settings": {}}
    for name, (cfg, _, _, times) in runs.items():
        med, p90 = C.median(times), C.percentile(times, 90)
        path = f"top {cfg.convert_topk}" if cfg.convert_topk else "every source"
        rows.append([name, cfg.dropout, cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout,
                     path if cfg.copy_convert else "off", med * 1e3, p90 * 1e3, n_tokens / med])
        payload["settings"][name] = {"ms_median": med * 1e3, "ms_p90": p90 * 1e3, "tokens_per_s": n_tokens / med}
    C.console.print(C.table(f"One training step of the small preset ({args.rows} x {args.length} positions, "
                            f"{'bfloat16 autocast' if bf16 else 'fp32'}, {args.device})",
                            ["setting", "dropout", "attention dropout", "conversion path", "ms / step (median)",
                             "ms / step (p90)",
                             "tokens / s"], rows))
    C.write_json(args.json, payload)


if __name__ == "__main__":
    main()
