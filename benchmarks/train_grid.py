"""Train several recipes side by side on one device, then score each on the held-out split.

    python benchmarks/train_grid.py --device cuda --recipes gpu --minutes 6     # one recipe alone on a GPU
    python benchmarks/train_grid.py --recipes "run 11" notes --minutes 3 -n 8  # two at once, quickly
    python benchmarks/train_grid.py --tiny --minutes 0.5 -n 2                  # the pipeline in a minute (CPU)

Each recipe (``RECIPES``: a ``structgen train`` preset with some settings changed) trains in a process of
its own, all at once, for ``--minutes`` (data and tokenizer included) or its steps, whichever comes first,
and saves its model to ``OUT/NAME``. Runs at once share the device: on an H200 four of them ran 12-14 steps
a second each, launch-bound, so give a recipe the GPU alone when its figures matter (training log, runs
41-44). Then every model is scored per family and decoding mode (``structgen.train.evaluate``), ``--jobs``
scorings at a time on one CPU thread each, on ``--eval-device``.

Prints two tables (per recipe: steps, training tokens/s, held-out loss, the weights kept, size; then
accuracy, validity and nfe per token per family and decoding mode) and writes ``OUT/grid.json`` with every
figure and each scoring's decoded examples. Asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

RUN_11_STEPS = 10_021  # the shipped model's steps (docs/training-log.md, run 11)

#: name -> (preset, TrainConfig overrides); the grid's --device and --minutes apply on top
RECIPES: dict[str, tuple[str, dict]] = {
    "run 11": ("small", {"steps": RUN_11_STEPS}),  # the shipped recipe, as `structgen train` runs it
    "notes": ("small", {"steps": RUN_11_STEPS, "request_notes": True}),  # run 39's command at run 11's steps
    "notes, dropout, best": ("small", {"steps": RUN_11_STEPS, "request_notes": True, "dropout": 0.1,
                                       "attention_dropout": 0.0, "keep": "best"}),
    # runs 41-44's capacity probe: three times the parameters (53 MB in fp32: too large to ship), wider batches
    "6x384, notes, dropout, best": ("small", {"request_notes": True, "dropout": 0.1, "attention_dropout": 0.0,
                                              "keep": "best", "hidden_size": 384, "num_layers": 6, "num_heads": 6,
                                              "intermediate_size": 1152, "lr": 1e-3, "batch_size": 64,
                                              "max_batch_tokens": 16384}),
    "gpu": ("gpu", {}),  # the probe made a preset: 6 x 384 with a narrower MLP, stored in bfloat16 (23 MB)
    # the gpu preset on composed SQL version 2 (HAVING, anti-joins, shares, spreads: training log, "Composed
    # SQL, version 2"), the SQL experiment a CPU hour could not run: RECIPES="gpu gpu-sql2" in device_grid.sh
    "gpu-sql2": ("gpu", {"sql_shapes": 2}),
}
SHAPE = {"hidden_size", "num_layers", "num_heads", "intermediate_size", "batch_size", "max_batch_tokens", "lr",
         "steps"}  # what --tiny leaves at the tiny preset's values
FAMILIES = ("tool", "json", "sql", "alert")
MODES = ("constrained", "grounded")


def slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name).strip("-")


def train_one(name: str, tiny: bool, device: str, minutes: float, steps: int | None, out: Path) -> None:
    """Worker: train recipe ``name`` and write ``OUT/NAME.train.json`` (the trainer's report)."""
    from structgen.train.config import TrainConfig
    from structgen.train.trainer import train

    preset, overrides = RECIPES[name]
    settings = {**TrainConfig.preset(preset).to_dict(), **overrides, "device": device, "minutes": minutes}
    if steps:
        settings["steps"] = steps
    if tiny:  # the pipeline check: the recipe's switches on the tiny model, not its sizes
        shape = TrainConfig.tiny().to_dict()
        settings = {**settings, **{k: shape[k] for k in SHAPE}, "examples_per_family": 24, "heldout_per_family": 4,
                    "vocab_size": 600, "tokenizer_corpus": 400, "eval_every": 10, "curriculum": 0.0}
    cfg = TrainConfig(**settings).validated()
    report = train(cfg, out / slug(name), progress=True)
    print(report.summary(), flush=True)
    (out / f"{slug(name)}.train.json").write_text(json.dumps(dataclasses.asdict(report), default=str))


def eval_one(model_dir: Path, family: str, mode: str, n: int, device: str, out: Path) -> None:
    """Worker: score ``model_dir`` on ``n`` held-out examples of ``family`` under ``mode``; write the row."""
    import structgen as sg
    from structgen.train.evaluate import evaluate

    def score(on: str):
        return evaluate(sg.load_model(str(model_dir), device=on), families=[family], modes=[mode], n=n)

    try:
        rows = score(device)
    except Exception:  # a device fault must not cost the grid its figures: say so, and score on the CPU
        if device == "cpu":
            raise
        traceback.print_exc()
        print(f"scoring on {device} failed; scoring on the CPU instead", flush=True)
        device = "cpu"
        rows = score(device)
    payload = [{**r.as_dict(), "device": device, "examples": [vars(s) for s in r.examples]} for r in rows]
    out.write_text(json.dumps(payload, default=str))


def _run(args: list[str], log: Path, threads: int) -> int:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "PYTHONUNBUFFERED": "1", "COLUMNS": "160"}
    with open(log, "w") as fh:
        return subprocess.run([sys.executable, __file__, *args], stdout=fh, stderr=subprocess.STDOUT,
                              env=env).returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recipes", nargs="*", default=list(RECIPES), help=f"names from {list(RECIPES)}")
    ap.add_argument("--tiny", action="store_true", help="the recipes' switches on the tiny preset's model and data "
                    "(a check of the pipeline in a minute)")
    ap.add_argument("--device", default="cpu", help="where the recipes train")
    ap.add_argument("--eval-device", default="cpu", help="where the models are scored: the CPU by default, one "
                    "core per scoring (fifteen scorings shared one H200 more slowly than fifteen cores ran them)")
    ap.add_argument("--minutes", type=float, default=5.5, help="each run's wall-clock budget")
    ap.add_argument("--steps", type=int, default=None, help="each run's steps (default: the recipe's)")
    ap.add_argument("-n", type=int, default=50, help="held-out examples per family")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1), help="scorings at a time")
    ap.add_argument("--deadline", type=float, default=None, help="seconds from the start after which no "
                    "further scoring starts (those skipped are listed); the grid still writes its figures")
    ap.add_argument("--out", type=Path, default=Path("train-grid"))
    ap.add_argument("--train-one", help=argparse.SUPPRESS)
    ap.add_argument("--eval-one", nargs=4, help=argparse.SUPPRESS)  # MODEL_DIR FAMILY MODE OUT_FILE
    a = ap.parse_args()
    if a.train_one:
        return train_one(a.train_one, a.tiny, a.device, a.minutes, a.steps, a.out)
    if a.eval_one:
        d, fam, mode, dest = a.eval_one
        return eval_one(Path(d), fam, mode, a.n, a.eval_device, Path(dest))
    unknown = [r for r in a.recipes if r not in RECIPES]
    if unknown:
        sys.exit(f"unknown recipe(s) {unknown}; choose from {list(RECIPES)}")
    a.out.mkdir(parents=True, exist_ok=True)
    common = ["--device", a.device, "--minutes", str(a.minutes), "--out", str(a.out)] + (["--tiny"] if a.tiny else [])
    if a.steps:
        common += ["--steps", str(a.steps)]
    t0 = time.perf_counter()
    C.console.print(f"training {len(a.recipes)} recipes at once on {a.device} (logs: {a.out}/*.train.log)")
    with ThreadPoolExecutor(len(a.recipes)) as pool:
        codes = dict(zip(a.recipes, pool.map(
            lambda r: _run(["--train-one", r, *common], a.out / f"{slug(r)}.train.log", 2), a.recipes)))
    t_train = time.perf_counter() - t0
    trained = [r for r in a.recipes if codes[r] == 0 and (a.out / f"{slug(r)}.train.json").is_file()]
    for r in a.recipes:
        if r not in trained:
            C.console.print(f"[red]{r}: training failed (exit {codes[r]}); see {a.out}/{slug(r)}.train.log[/]")
    from structgen.train.evaluate import GROUNDED_FAMILIES, MODES as EVAL_MODES

    fams = [f for f in a.families.split(",") if f]
    modes = [m for m in a.modes.split(",") if m]
    jobs = [(r, f, m) for m in modes for f in sorted(fams, key=lambda f: f != "sql") for r in trained
            if not (EVAL_MODES[m].get("ground") and f not in GROUNDED_FAMILIES)]  # the slowest first
    C.console.print(f"trained in {t_train:.0f}s; scoring {len(jobs)} (recipe, family, mode) at {a.jobs} at a time")

    def score(job):
        r, f, m = job
        if a.deadline and time.perf_counter() - t0 > a.deadline:
            skipped.append(job)
            return []
        dest = a.out / f"{slug(r)}.{f}.{m}.eval.json"
        _run(["--eval-one", str(a.out / slug(r)), f, m, str(dest), "-n", str(a.n), "--eval-device", a.eval_device],
             a.out / f"{slug(r)}.{f}.{m}.eval.log", 1)
        return json.loads(dest.read_text()) if dest.is_file() else []

    skipped: list[tuple[str, str, str]] = []
    with ThreadPoolExecutor(a.jobs) as pool:
        scored = dict(zip(jobs, pool.map(score, jobs)))
    grid = {"device": a.device, "eval_device": a.eval_device, "tiny": a.tiny, "minutes": a.minutes, "n": a.n,
            "train_seconds": round(t_train, 1), "eval_seconds": round(time.perf_counter() - t0 - t_train, 1),
            "skipped": [list(j) for j in skipped], "recipes": {}}
    for r in a.recipes:
        rep = json.loads((a.out / f"{slug(r)}.train.json").read_text()) if r in trained else None
        rows = [row for (rr, _, _), got in scored.items() if rr == r for row in got]
        grid["recipes"][r] = {"preset": RECIPES[r][0], "overrides": RECIPES[r][1], "report": rep, "rows": rows}
    (a.out / "grid.json").write_text(json.dumps(grid, indent=1, default=str))
    print_table(grid, fams, modes)
    if skipped:
        C.console.print(f"[yellow]not scored (past --deadline): {skipped}[/]")


def print_table(grid: dict, fams: list[str], modes: list[str]) -> None:
    """Two tables: each recipe's training, then its scores per family (rows) and decoding mode (columns)."""
    runs = []
    for name, rec in grid["recipes"].items():
        rep = rec["report"] or {}
        runs.append([name, rec["preset"], f"{rep.get('steps', 0):,}", f"{rep.get('tokens_per_s', 0):,.0f}",
                     "-" if rep.get("heldout_loss") is None else f"{rep['heldout_loss']:.3f}",
                     str(rep.get("kept_step", "-")), f"{rep.get('params', 0) / 1e6:.1f}M",
                     f"{rep.get('dir_mb', 0):.1f}"])
    C.console.print(C.table(f"training on {grid['device']}", ["recipe", "preset", "steps", "tokens/s",
                                                              "held-out loss", "kept step", "parameters", "MB"],
                            runs))
    body = []
    for name, rec in grid["recipes"].items():
        by = {(row["family"], row["mode"]): row for row in rec["rows"]}
        for f in fams:
            cells = [name, f]
            for m in modes:
                row = by.get((f, m))
                cells.append("-" if row is None else f"{row['accuracy']:.1%} ({row['valid']:.0%} valid, nfe/token "
                                                     f"{row['nfe_per_token']:.2f})")
            body.append(cells)
    C.console.print(C.table(f"held-out accuracy, n={grid['n']} per family (scored on {grid['eval_device']})",
                            ["recipe", "family", *modes], body))


if __name__ == "__main__":
    main()
