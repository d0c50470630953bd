"""Per-step figures of the two engines in one run: SQL (and the alert DSL) on the grammar engine beside
regular specs (JSON schemas) on the automaton engine.

For every spec, model and commit policy, ``Generator.generate`` runs over the prompts and seeds and the step
events are counted. Figures per configuration:

* validity (``Result.valid``) and repair rounds;
* output tokens, model calls (``nfe``) and steps (a step is a model call or a free commit of forced tokens);
* **tokens committed per step** (output positions committed, forced or by the model, divided by steps) and
  output tokens per model call;
* **constraint milliseconds per step** (``timings["constraint_s"]`` — masks, proposals, commits and
  validation — divided by steps), beside model milliseconds per model call.

Compilation is done once before timing (constraints are cached), so it is not in the per-step figures.

    python benchmarks/step_cost.py
    python benchmarks/step_cost.py --models random --seeds 5 --json step_cost.json
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

SQL_QUESTIONS = [
    "How many customers are from Germany?",
    "What are the five most expensive products in the electronics category?",
    "Total revenue per country from delivered orders, highest first.",
    "Which customers have never placed an order?",
]
ALERT_REQUESTS = [
    "Page the ops channel when average CPU usage is above 90% for 5 minutes on web-1 or web-2.",
    "Notify #db with high severity when p99 query latency exceeds 500 ms for 10 minutes.",
]


def _shop_db() -> Path:
    import importlib.util

    spec = importlib.util.spec_from_file_location("shop_build", C.ROOT / "examples" / "shop" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ensure()


def specs(names: list[str]) -> list[tuple[str, object, str, list[str], int]]:
    """(label, spec, engine, prompts, max_tokens) for each requested spec name."""
    import structgen as sg

    out = []
    for name in names:
        if name == "sql":
            out.append(("sql (shop)", sg.Sql(_shop_db()), "grammar", SQL_QUESTIONS, 64))
        elif name == "alerts":
            from structgen.validators.alerts import AlertCatalog, alerts_spec

            catalog = AlertCatalog.load(C.ROOT / "examples" / "alerts" / "catalog.json")
            out.append(("alert rule", alerts_spec(catalog), "grammar", ALERT_REQUESTS, 48))
        elif name in C.SCHEMAS:
            out.append((f"{name} (json)", sg.JsonSchema(C.SCHEMAS[name]), "automaton", [C.PROMPTS[name]], 64))
        else:
            raise SystemExit(f"unknown spec {name!r}; choose from sql, alerts, {', '.join(C.SCHEMAS)}")
    return out


def models(names: list[str], tok):
    import structgen as sg

    for name in names:
        if name == "random":
            yield "random logits", sg.models.RandomLogits(tok, seed=0)
        elif name == "default":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield "default model", sg.load_model()
        else:
            yield name, sg.load_model(name)


def run_one(gen, spec, engine, prompts, seeds, max_tokens, policy) -> dict:
    steps = nfe = out_tokens = committed = valid = runs = repairs = 0
    model_s = constraint_s = 0.0

    for prompt in prompts:
        for seed in range(seeds):
            counted: dict[int, int] = {}

            def on_step(ev):
                if ev.kind in ("forced", "model"):
                    for p in ev.positions:
                        counted[p] = 1
                elif ev.kind == "remask":
                    for p in ev.positions:
                        counted.pop(p, None)

            r = gen.generate(prompt, spec, max_tokens=max_tokens, strict=False, on_step=on_step, engine=engine,
                             seed=seed, temperature=0.0 if seed == 0 else 0.7, **policy)
            runs += 1
            valid += r.valid
            repairs += r.repair_rounds
            steps += r.steps
            nfe += r.nfe
            out_tokens += r.n_output_tokens
            committed += sum(1 for p in counted if p < r.n_output_tokens)
            model_s += r.timings["model_s"]
            constraint_s += r.timings["constraint_s"]
    return {
        "runs": runs, "valid": valid / runs, "repair_rounds": repairs / runs,
        "output_tokens": out_tokens / runs, "nfe": nfe / runs, "steps": steps / runs,
        "tokens_per_step": committed / max(steps, 1), "tokens_per_model_call": out_tokens / max(nfe, 1),
        "constraint_ms_per_step": 1000 * constraint_s / max(steps, 1),
        "model_ms_per_call": 1000 * model_s / max(nfe, 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--specs", default="sql,alerts,tool_call,object", help="sql, alerts, tool_call, object")
    ap.add_argument("--models", default="random,default", help="random, default, or a model directory")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per prompt (seed 0 greedy, others T=0.7)")
    ap.add_argument("--block-length", type=int, default=32)
    C.add_common_args(ap, device=False)
    args = ap.parse_args(argv)
    C.setup_torch(args)
    C.quiet_warnings()
    import structgen as sg

    tok = C.tokenizer("4k")
    policies = {"threshold 0.9": {"threshold": 0.9, "tokens_per_step": None},
                "1 token/step": {"threshold": None, "tokens_per_step": 1}}
    todo = specs([s.strip() for s in args.specs.split(",") if s.strip()])
    rows, figures = [], []
    with C.progress() as bar:
        task = None
        for mname, model in models([m.strip() for m in args.models.split(",") if m.strip()], tok):
            gen = sg.Generator(model, block_length=args.block_length)
            if task is None:
                task = bar.add_task("step cost", total=len(todo) * len(policies) * len(args.models.split(",")))
            for label, spec, engine, prompts, max_tokens in todo:
                gen.compile(spec, engine)  # compile once, outside the timed runs
                for pname, policy in policies.items():
                    f = run_one(gen, spec, engine, prompts, args.seeds, max_tokens, policy)
                    figures.append({"model": mname, "spec": label, "engine": engine, "policy": pname, **f})
                    rows.append([label, engine, mname, pname, f"{f['valid']:.0%}", f["output_tokens"], f["nfe"],
                                 f["steps"], f["tokens_per_step"], f["tokens_per_model_call"],
                                 f["constraint_ms_per_step"], f["model_ms_per_call"]])
                    bar.advance(task)
    C.console.print(C.table(
        "Per-step cost: grammar engine (SQL, DSL) vs automaton engine (JSON)",
        ["spec", "engine", "model", "policy", "valid", "out tok", "nfe", "steps", "tok/step", "tok/call",
         "constraint ms/step", "model ms/call"], rows,
        caption=f"block length {args.block_length}; {args.seeds} seeds per prompt; averages per run"))
    C.write_json(args.json, {"environment": C.environment(args), "figures": figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
