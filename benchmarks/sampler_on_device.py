"""The whole sampler on one device (CPU or CUDA): validity, nfe and where the time goes, per schema.

    python benchmarks/sampler_on_device.py                 # CPU
    python benchmarks/sampler_on_device.py --device cuda   # the same on a GPU

Models: ``RandomLogits`` and the default model (``sg.load_model()``, untrained until the embedded one
ships), both on ``--device``. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import structgen as sg  # noqa: E402

SPECS = {
    "tool_call": lambda: sg.JsonSchema(C.TOOL_CALL_SCHEMA),
    "object": lambda: sg.JsonSchema(C.OBJECT_SCHEMA),
    "regex": lambda: sg.Regex(r"[A-Z]{3}-[0-9]{4}"),
    "grammar": lambda: sg.Grammar('start: e\ne: NUM | e "+" e | "(" e ")"\nNUM: /[0-9]+/\n'),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import warnings

    warnings.simplefilter("ignore")
    models = {"random": sg.models.RandomLogits(sg.load_model("random").tokenizer, device=args.device),
              "default": sg.load_model(device=args.device)}
    rows = []
    for mname, model in models.items():
        gen = sg.Generator(model)
        for sname, make in SPECS.items():
            spec = make()
            for seed in range(args.seeds):
                t0 = time.perf_counter()
                try:
                    r = gen.generate("Fill this in.", spec, args.max_tokens, temperature=0.7, seed=seed)
                    ok, nfe, n, eng = r.valid, r.nfe, r.n_output_tokens, r.engine
                    m_ms = 1000 * r.timings["model_s"] / max(1, nfe)
                    c_ms = 1000 * r.timings["constraint_s"] / max(1, nfe)
                except sg.StructgenError as e:
                    ok, nfe, n, eng, m_ms, c_ms = False, 0, 0, type(e).__name__, 0.0, 0.0
                rows.append(dict(model=mname, spec=sname, seed=seed, valid=ok, engine=eng, nfe=nfe, tokens=n,
                                 model_ms_per_step=m_ms, constraint_ms_per_step=c_ms,
                                 total_s=time.perf_counter() - t0))
    t = Table(title=f"sampler on {args.device}" + (f" ({torch.cuda.get_device_name()})"
                                                    if args.device.startswith("cuda") else ""))
    for col in ("model", "spec", "engine", "valid", "nfe/token", "model ms/step", "constraint ms/step", "s"):
        t.add_column(col)
    for mname in models:
        for sname in SPECS:
            rs = [r for r in rows if r["model"] == mname and r["spec"] == sname]
            t.add_row(mname, sname, rs[0]["engine"], f"{sum(r['valid'] for r in rs)}/{len(rs)}",
                      f"{sum(r['nfe'] for r in rs) / max(1, sum(r['tokens'] for r in rs)):.2f}",
                      f"{sum(r['model_ms_per_step'] for r in rs) / len(rs):.2f}",
                      f"{sum(r['constraint_ms_per_step'] for r in rs) / len(rs):.2f}",
                      f"{sum(r['total_s'] for r in rs):.1f}")
    Console().print(t)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
