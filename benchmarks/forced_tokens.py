"""Forced tokens: the share of output tokens committed without a model call, and model calls per token.

For the tool-call and object schemas and two maskbench schemas from BFCL (a simple call and a choice among
three functions), ``Generator.generate`` runs with two models over several seeds, two commit policies and
several block lengths:

* models: ``RandomLogits`` (random logits over the default tokenizer) and the untrained default model
  (``sg.load_model()``, a small ModernBERT; until the embedded model ships it is untrained);
* policies: Fast-dLLM threshold 0.9, and ``tokens_per_step=1`` (one token per model call, the baseline);
* block lengths: ``--blocks`` (default 8 and 32).

Figures per configuration: validity (jsonschema-checked ``Result.valid``), output tokens, the share of
output tokens committed as forced tokens (no model call) — counted from the step events, only positions
before the first EOS — beside ``Result.n_forced / n_output_tokens`` (which also counts the forced EOS tail
and so can exceed 1), model calls per output token (``nfe / n_output_tokens``), and milliseconds per model
step (model and constraint, from ``Result.timings``).

    python benchmarks/forced_tokens.py
    python benchmarks/forced_tokens.py --seeds 5 --blocks 4,8,32 --json forced.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

MASKBENCH_DEFAULT = "BFCL_simple_181.json,BFCL_multiple_28.json"


class ForcedCounter:
    """Step-event callback: which canvas positions were last committed by the constraint alone."""

    def __init__(self):
        self.kind: dict[int, str] = {}

    def __call__(self, ev) -> None:
        if ev.kind in ("forced", "model"):
            for p in ev.positions:
                self.kind[p] = ev.kind
        elif ev.kind == "remask":
            for p in ev.positions:
                self.kind.pop(p, None)

    def forced_before(self, n: int) -> int:
        return sum(1 for p, k in self.kind.items() if k == "forced" and p < n)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--schemas", default="tool_call,object", help="built-in schemas (tool_call, object)")
    ap.add_argument("--maskbench", default=MASKBENCH_DEFAULT,
                    help=f"comma list of maskbench files to add (default {MASKBENCH_DEFAULT}; '' for none)")
    ap.add_argument("--models", default="random,default", help="random (RandomLogits) and/or default (load_model())")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per configuration (default 3)")
    ap.add_argument("--blocks", default="8,32", help="block lengths (default 8,32)")
    ap.add_argument("--threshold", type=float, default=0.9, help="threshold of the threshold policy (default 0.9)")
    ap.add_argument("--max-tokens", type=int, default=96, help="canvas size (default 96)")
    C.add_common_args(ap, device=False)
    args = ap.parse_args(argv)
    C.quiet_warnings()
    C.setup_torch(args)

    import structgen as sg
    from structgen.models import RandomLogits

    specs: dict[str, dict] = {}
    for s in [x.strip() for x in args.schemas.split(",") if x.strip()]:
        if s not in C.SCHEMAS:
            ap.error(f"unknown schema {s!r}; use {', '.join(C.SCHEMAS)}")
        specs[s] = C.SCHEMAS[s]
    for f in [x.strip() for x in args.maskbench.split(",") if x.strip()]:
        path = C.data_dir() / "maskbench" / f
        if not path.is_file():
            ap.error(f"maskbench file {path} not found (set STRUCTGEN_SHARED)")
        specs[Path(f).stem] = C.load_case(path)["schema"]
    blocks = [int(b) for b in args.blocks.split(",")]
    policies = [("threshold", dict(threshold=args.threshold, tokens_per_step=None)),
                ("1 token/step", dict(threshold=None, tokens_per_step=1))]
    default_model = sg.load_model(device="cpu")
    models = {}
    for m in [x.strip() for x in args.models.split(",") if x.strip()]:
        if m == "random":
            models[m] = RandomLogits(default_model.tokenizer, seed=0)
        elif m == "default":
            models[m] = default_model
        else:
            ap.error(f"unknown model {m!r}; use random, default")

    rows: list[dict] = []
    total = len(specs) * len(models) * len(policies) * len(blocks) * args.seeds
    t_start = time.time()
    with C.progress() as prog:
        task = prog.add_task("generating", total=total)
        for sname, schema in specs.items():
            spec = sg.JsonSchema(schema)
            for mname, model in models.items():
                for pname, pol in policies:
                    for block in blocks:
                        prog.update(task, description=f"{sname} {mname} {pname} block {block}")
                        acc = {"schema": sname, "model": mname, "policy": pname, "block": block, "runs": 0,
                               "valid": 0, "failed": 0, "errors": [], "output_tokens": 0, "forced_output": 0,
                               "n_forced": 0, "nfe": 0, "model_s": 0.0, "constraint_s": 0.0, "engine": None}
                        for seed in range(args.seeds):
                            if isinstance(model, RandomLogits):
                                model.reseed(seed)
                            gen = sg.Generator(model, block_length=block, seed=seed, **pol)
                            counter = ForcedCounter()
                            acc["runs"] += 1
                            try:
                                r = gen.generate(C.PROMPTS.get(sname, "Call the right function."), spec,
                                                 max_tokens=args.max_tokens, strict=False, on_step=counter)
                            except Exception as e:  # a failed generation is a finding
                                acc["failed"] += 1
                                acc["errors"].append(f"seed {seed}: {type(e).__name__}: {str(e)[:200]}")
                                prog.advance(task)
                                continue
                            acc["engine"] = r.engine
                            acc["valid"] += int(r.valid)
                            acc["output_tokens"] += r.n_output_tokens
                            acc["forced_output"] += counter.forced_before(r.n_output_tokens)
                            acc["n_forced"] += r.n_forced
                            acc["nfe"] += r.nfe
                            acc["model_s"] += r.timings["model_s"]
                            acc["constraint_s"] += r.timings["constraint_s"]
                            prog.advance(task)
                        rows.append(acc)
    wall = time.time() - t_start
    report(rows, args, wall)
    C.write_json(args.json, {"benchmark": "forced_tokens", "env": C.environment(args), "settings": vars(args),
                             "wall_s": wall, "rows": rows})
    return 0


def report(rows: list[dict], args, wall: float) -> None:
    out = []
    for a in rows:
        n = max(1, a["output_tokens"])
        ok = a["runs"] - a["failed"]
        out.append([a["schema"], a["model"], a["policy"], a["block"], a["engine"] or "-",
                    f"{a['valid']}/{a['runs']}", a["output_tokens"] / max(1, ok),
                    f"{100 * a['forced_output'] / n:.0f}%", f"{100 * a['n_forced'] / n:.0f}%",
                    a["nfe"] / n, 1e3 * a["model_s"] / max(1, a["nfe"]), 1e3 * a["constraint_s"] / max(1, a["nfe"])])
    C.console.print(C.table(
        f"Forced tokens and model calls per output token ({args.seeds} seeds, canvas {args.max_tokens})",
        ["schema", "model", "policy", "block", "engine", "valid", "out tokens", "forced share",
         "n_forced/n_out", "nfe/token", "model ms/step", "constraint ms/step"], out,
        caption="forced share = output positions (before the first EOS) last committed by the constraint alone, over "
                "all output tokens; n_forced/n_out = Result.n_forced / Result.n_output_tokens, which also counts the "
                "forced EOS tail; nfe/token = model calls per output token; ms/step = Result.timings / nfe. "
                f"random = RandomLogits; default = sg.load_model() (untrained until the embedded model ships). "
                f"Wall time {wall:.0f} s."))
    for a in rows:
        for e in a["errors"]:
            C.console.print(f"[yellow]{a['schema']} {a['model']} {a['policy']} block {a['block']}: {e}[/yellow]")


if __name__ == "__main__":
    raise SystemExit(main())
