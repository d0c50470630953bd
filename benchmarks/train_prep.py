"""The time ``structgen train`` spends before its first step: data, tokenizer, rows.

The trainer's budget (``--minutes``) starts with the run, so every second of preparation is a second less
of training. This times the trainer's own phases for a recipe (``TrainConfig.small`` with ``--drill-examples``
and, for ``--pointers``, the pointer targets the source loss needs), one after the other as ``train`` runs
them: ``load_data`` (the templates rendered), ``build_tokenizer`` (BPE trained and round-trip checked),
``encode_examples`` for the training rows (with or without pointer targets) and for the held-out rows.
``--examples-per-family`` scales the data down for a quick look; the default is the preset's.

    python benchmarks/train_prep.py                       # run 11's recipe
    python benchmarks/train_prep.py --drill-examples 40000 --pointers   # the conversion path's recipe
    python benchmarks/train_prep.py --examples-per-family 4000 --pointers --json prep.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="small", help="small | gpu (its request notes cost time too)")
    ap.add_argument("--examples-per-family", type=int, default=None, help="default: the preset's")
    ap.add_argument("--drill-examples", type=int, default=0)
    ap.add_argument("--pointers", action="store_true", help="the pointer targets of --source-loss too")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()

    import torch

    from structgen.train.batches import encode_examples
    from structgen.train.config import TrainConfig
    from structgen.train.tokenizer import build_tokenizer
    from structgen.train.trainer import corpus_of, load_data

    torch.set_num_threads(a.threads)
    over = {"drill_examples": a.drill_examples}
    if a.examples_per_family:
        over["examples_per_family"] = a.examples_per_family
    cfg = TrainConfig.preset(a.preset, device="cpu", **over)
    times: dict[str, float] = {}

    def timed(name, fn):
        t0 = time.perf_counter()
        out = fn()
        times[name] = time.perf_counter() - t0
        C.console.print(f"{name}: {times[name]:.1f} s")
        return out

    data = timed("load_data (templates rendered)", lambda: load_data(cfg))
    corpus = data.corpus if data.corpus is not None else corpus_of(data.train)
    tok = timed("build_tokenizer (BPE + round trip)", lambda: build_tokenizer(cfg, corpus))
    rows, _ = timed(f"encode_examples, {len(data.train):,} training rows"
                    + (" with pointer targets" if a.pointers else ""),
                    lambda: encode_examples(data.train, tok, cfg, pointers=a.pointers))
    timed(f"encode_examples, {len(data.heldout):,} held-out rows", lambda: encode_examples(data.heldout, tok, cfg))
    total = sum(times.values())
    n_pointed = sum(bool(r.pointers) for r in rows)
    C.console.print(C.table(f"preparation of {len(rows):,} rows ({n_pointed:,} with pointer targets): {total:.0f} s",
                            ["phase", "seconds", "share"],
                            [[k, f"{v:.1f}", f"{100 * v / total:.0f}%"] for k, v in times.items()]))
    if a.json:
        C.write_json(a.json, {"config": over, "pointers": a.pointers, "seconds": times, "rows": len(rows)})


if __name__ == "__main__":
    main()
