"""Constraint work per sampler step, beside a model forward pass over the same canvas, in the same run.

For each vocabulary (4k: ``train_bpe(default_corpus(), 4096)``; 128k: ``synthetic_bpe(131072)``), canvas size
(64, 256 positions after a ~32-token prompt) and schema (a tool call, an object with six typed fields), the
real sampler (``Generator``: LLaDA-style blocks of 32, Fast-dLLM threshold 0.9, greedy) fills the canvas
with a randomly initialised ModernBERT of the untrained default's config (hidden 128, 4 layers) built
in-process with that vocabulary (at 128k the tied embedding / output projection is 95% of its 17.6M
parameters and dominates the forward pass). Constraint work per step is everything the sampler asks of
the constraint around one model call: ``session.forced(canvas, window=block)`` (repeated while it commits
tokens) and ``session.propose(canvas, logprobs, window=block)`` for the automaton engine; ``forced`` +
``propose`` for the grammar engine (``engine="grammar"``) on the same schema. Measured two ways:

* every constraint call timed around the session method (device synchronised), per model step (median
  and mean over the steps of the generation);
* the ``Result``'s own ``timings["constraint_s"] / nfe`` (this also counts the final jsonschema validation
  and the cached compile lookup; only for generations that ran to the end).

The forward pass is ``model.logits`` over prompt + canvas (all canvas positions masked), median of
``--reps``; ``x/fwd`` is constraint ms per step / forward ms. Where the automaton's time goes: a few sampled
steps are replayed on a fresh session under a line tracer (its own per-line cost calibrated and removed),
which splits the time into prefix walk, alpha (forward live sets), the Viterbi backward pass, the
allowed-class collection, the decode walk, and the [positions x vocabulary] work (class scores, token pick
within the chosen class, confidence). The grammar engine's time is split by timers around its methods.

Defaults keep the run near a minute on two CPU cores: at 128k only the tool-call schema (compiling the
object schema there takes one to two minutes) and at most 16 model steps per generation (one step of the
model costs 0.1-0.5 s there); ``--full`` runs both schemas everywhere with no step limit. Torch uses one
thread unless ``--threads`` / ``$STRUCTGEN_BENCH_THREADS`` says otherwise (the engines' work is single-
threaded; several threads on a busy shared machine make CPU timings erratic).

    python benchmarks/constraint_cost.py                  # 4k and 128k, canvases 64 and 256, CPU
    python benchmarks/constraint_cost.py --device cuda --full --max-steps 48   # on a GPU
    python benchmarks/constraint_cost.py --vocabs 4k --sizes 64 --json out.json
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

import torch  # noqa: E402

# ------------------------------------------------------------------------------------------------------
# timers around the sessions' methods
# ------------------------------------------------------------------------------------------------------

# inner methods timed when the engine has them (the engines evolve: missing names are skipped)
AUTOMATON_INNER = ["_canvas", "_prefix_walk", "_sweep", "_decode", "_feasibility",
                   "_reach", "_forward", "_backward", "_allowed_classes"]
GRAMMAR_INNER = ["_scan", "_fast_forward", "_steer", "_fitting_candidates", "_bitmask", "_rows", "_fits"]


class StopRun(Exception):
    """Raised by the probe to end a generation after ``max_steps`` model steps."""


class Probe:
    """Wraps session methods with timers; nested calls are keyed by their caller ("propose/_sweep").

    Also cuts the top-level calls into model steps (the forced() calls before a propose(), and that
    propose()) and keeps a reservoir sample of steps (their call arguments) for the line-traced replay.
    """

    def __init__(self, device):
        self.device = device
        self.total: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.stack: list[str] = []
        self._undo: list = []
        self.steps: list[float] = []  # constraint seconds per model step
        self._open = 0.0
        self.keep = 0  # steps to sample for the replay
        self.sampled: list[list] = []
        self._calls: list = []
        self._seen = 0
        self._rng = random.Random(0)
        self.max_steps = 0  # end the generation after this many model steps (0: never)

    def wrap(self, cls, name: str) -> None:
        orig = cls.__dict__.get(name)
        if orig is None:
            return
        probe = self

        @functools.wraps(orig)
        def timed(*a, **kw):
            top = not probe.stack
            if top and probe.max_steps and len(probe.steps) >= probe.max_steps:
                raise StopRun()
            if top and probe.keep:
                probe._record(name, a, kw)
            key = "/".join(probe.stack + [name])
            probe.stack.append(name)
            C.sync(probe.device)
            t0 = time.perf_counter()
            try:
                return orig(*a, **kw)
            finally:
                C.sync(probe.device)
                dt = time.perf_counter() - t0
                probe.total[key] += dt
                probe.count[key] += 1
                probe.stack.pop()
                if top:
                    probe._open += dt
                    if name == "propose":
                        probe.steps.append(probe._open)
                        probe._open = 0.0
                        probe._end_step()

        setattr(cls, name, timed)
        self._undo.append((cls, name, orig))

    def _record(self, name, a, kw) -> None:
        canvas = a[1].clone()
        win = kw.get("window")
        if name == "propose":
            lp = a[2]
            T = canvas.shape[0]
            w0, w1 = win if win is not None else (0, T)
            self._calls.append(("propose", canvas, win, (w0, w1, lp[w0:w1].clone())))
        elif name == "forced":
            self._calls.append(("forced", canvas, win, None))

    def _end_step(self) -> None:
        if not self.keep:
            return
        calls, self._calls = self._calls, []
        self._seen += 1
        if len(self.sampled) < self.keep:
            self.sampled.append(calls)
        else:
            j = self._rng.randrange(self._seen)
            if j < self.keep:
                self.sampled[j] = calls

    def reset(self, keep: int = 0, max_steps: int = 0) -> None:
        self.max_steps = max_steps
        self.total.clear()
        self.count.clear()
        self.steps.clear()
        self._open = 0.0
        self.keep, self.sampled, self._calls, self._seen = keep, [], [], 0
        self._rng = random.Random(0)

    def close(self) -> None:
        """Add the forced calls after the last model step to that step."""
        if self.steps:
            self.steps[-1] += self._open
        self._open = 0.0
        self._calls = []

    def restore(self) -> None:
        for cls, name, orig in reversed(self._undo):
            setattr(cls, name, orig)
        self._undo.clear()

from constraint_cost_report import report  # noqa: E402
from constraint_cost_trace import LineTracer, replay_sections  # noqa: E402


# ------------------------------------------------------------------------------------------------------
# one configuration
# ------------------------------------------------------------------------------------------------------


def forward_ms(model, ids: torch.Tensor, device, reps: int) -> tuple[float, float]:
    """Median ms of ``model.logits`` over ``ids`` and of the log-softmax the sampler applies after it."""
    model.logits(ids[None])  # warm-up
    fw, ls = [], []
    for _ in range(reps):
        logits, dt = C.timed(model.logits, ids[None], device=device)
        fw.append(dt)
        _, dt = C.timed(torch.log_softmax, logits[0].float(), -1, device=device)
        ls.append(dt)
    return 1e3 * C.median(fw), 1e3 * C.median(ls)


def run_engine(gen_cls, model, spec, prompt, T, engine, args, probe, keep_steps: int, max_steps: int) -> dict:
    """Generate with ``engine`` (``args.seeds`` seeds), timing every constraint call. Returns figures.

    With ``max_steps`` a generation is ended after that many model steps (the steps so far are kept)."""
    nfe = steps = n_out = forced = completed = capped = 0
    model_s = constraint_s = 0.0
    valid = True
    errors: list[str] = []
    all_steps: list[float] = []
    probe.reset(keep_steps, max_steps)
    for seed in range(args.seeds):
        gen = gen_cls(model, block_length=args.block, threshold=args.threshold, seed=seed, engine=engine)
        try:
            r = gen.generate(prompt, spec, max_tokens=T, strict=False)
        except StopRun:
            probe.close()
            capped += 1
            probe.max_steps = len(probe.steps) + max_steps
            continue
        except Exception as e:  # a failed generation is a finding, not a crash of the benchmark
            errors.append(f"{type(e).__name__}: {e}")
            probe.close()
            if max_steps:
                probe.max_steps = len(probe.steps) + max_steps
            continue
        probe.close()
        if max_steps:
            probe.max_steps = len(probe.steps) + max_steps
        completed += 1
        nfe += r.nfe
        steps += r.steps
        n_out += r.n_output_tokens
        forced += r.n_forced
        model_s += r.timings["model_s"]
        constraint_s += r.timings["constraint_s"]
        valid &= r.valid
    all_steps = list(probe.steps)
    top = probe.total.get("forced", 0.0) + probe.total.get("propose", 0.0)
    n_steps = max(1, len(all_steps))
    return {
        "completed": completed, "capped": capped, "nfe": nfe, "steps": steps, "output_tokens": n_out,
        "forced_tokens": forced, "valid": valid and not errors, "errors": errors, "model_steps_timed": len(all_steps),
        "mean_ms_per_step": 1e3 * top / n_steps,
        "median_ms_per_step": 1e3 * C.median(all_steps),
        "p90_ms_per_step": 1e3 * C.percentile(all_steps, 90),
        "sampler_ms_per_step": 1e3 * constraint_s / nfe if nfe else None,
        "model_ms_per_step": 1e3 * model_s / nfe if nfe else None,
        "calls": {k: {"ms_per_step": 1e3 * v / n_steps, "n": probe.count[k]} for k, v in probe.total.items()},
        "_sampled": probe.sampled,
    }


# ------------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--vocabs", default="4k,128k", help="comma list of 4k, 32k, 128k (default 4k,128k)")
    ap.add_argument("--sizes", default="64,256", help="canvas sizes (default 64,256)")
    ap.add_argument("--schemas", default="tool_call,object", help="comma list of tool_call, object")
    ap.add_argument("--schemas-128k", default="tool_call",
                    help="schemas at the 128k vocabulary (default tool_call: compiling the object schema at 128k "
                         "takes minutes on two cores; --full runs every schema)")
    ap.add_argument("--engines", default="automaton,grammar", help="comma list of automaton, grammar")
    ap.add_argument("--prompt-tokens", type=int, default=32, help="prompt length in tokens (default 32)")
    ap.add_argument("--block", type=int, default=32, help="block length (default 32)")
    ap.add_argument("--threshold", type=float, default=0.9, help="commit threshold (default 0.9)")
    ap.add_argument("--seeds", type=int, default=1, help="generations per configuration (default 1)")
    ap.add_argument("--max-steps", type=int, default=None,
                    help="end a generation after this many model steps (default: none at 4k/32k, 16 at 128k, where "
                         "one step of the model costs about a second on two cores; 0: never)")
    ap.add_argument("--reps", type=int, default=5, help="forward-pass repetitions (default 5)")
    ap.add_argument("--trace-steps", type=int, default=6,
                    help="sampled model steps replayed under a line tracer to say where the automaton's time "
                         "goes (default 6; 0: off)")
    ap.add_argument("--full", action="store_true", help="every schema at every vocabulary, no step limit")
    C.add_common_args(ap)
    args = ap.parse_args(argv)
    C.quiet_warnings()
    C.setup_torch(args)
    device = torch.device(args.device)

    import structgen as sg
    from structgen.constraints.automaton_session import AutomatonSession
    from structgen.constraints.grammar import GrammarSession

    def names(text):
        return [x.strip() for x in text.split(",") if x.strip()]

    vocabs, sizes, engines = names(args.vocabs), [int(x) for x in names(args.sizes)], names(args.engines)
    for v in vocabs:
        if v not in C.VOCABS:
            ap.error(f"unknown vocabulary {v!r}; use {', '.join(C.VOCABS)}")
    plan = {}
    for v in vocabs:
        plan[v] = names(args.schemas_128k) if v == "128k" and not args.full else names(args.schemas)
        for s in plan[v]:
            if s not in C.SCHEMAS:
                ap.error(f"unknown schema {s!r}; use {', '.join(C.SCHEMAS)}")

    def step_cap(v: str) -> int:
        if args.max_steps is not None:
            return args.max_steps
        return 0 if args.full or v != "128k" else 16

    probe = Probe(device)
    from structgen.constraints import automaton as automaton_module
    from structgen.constraints import automaton_session as session_module

    # the automaton's tables live in automaton.py, its per-canvas work (propose, the sweeps) in
    # automaton_session.py: trace both (tracing only the first put every step's time in "other")
    tracer = LineTracer([automaton_module.__file__, session_module.__file__], device)
    tracer.calibrate()
    for name in ["forced", "propose"] + AUTOMATON_INNER:
        probe.wrap(AutomatonSession, name)
    for name in ["forced", "propose"] + GRAMMAR_INNER:
        probe.wrap(GrammarSession, name)

    results: list[dict] = []
    models: list[dict] = []
    n_tasks = sum(len(plan[v]) * (len(engines) + len(sizes) * len(engines)) for v in vocabs)
    t_start = time.time()
    try:
        with C.progress() as prog:
            task = prog.add_task("constraint cost", total=n_tasks)
            for vname in vocabs:
                prog.update(task, description=f"{vname}: tokenizer and model")
                tok = C.tokenizer(vname)
                model, info = C.build_model(tok, str(device))
                pids = C.prompt_ids(tok, args.prompt_tokens)
                prompt_text = tok.decode(pids)
                prompt_len = len(model.encode_prompt(prompt_text))
                fw = {}
                for T in sizes:
                    ids = torch.tensor(model.encode_prompt(prompt_text) + [model.mask_id] * T, device=device)
                    fw[T] = forward_ms(model, ids, device, args.reps)
                models.append({"vocab": vname, "vocab_size": len(tok), "tokenizer": C.vocab_recipe(vname), **info,
                               "prompt_tokens": prompt_len, "forward_ms": {T: fw[T][0] for T in sizes},
                               "log_softmax_ms": {T: fw[T][1] for T in sizes}})
                prog.console.print(f"{vname}: {info['params']:,} parameters ({info['embedding_params']:,} in the "
                                   "embedding), forward " + ", ".join(f"T={T} {fw[T][0]:.1f} ms" for T in sizes))
                for sname in plan[vname]:
                    spec = sg.JsonSchema(C.SCHEMAS[sname])
                    compiled = {}
                    for eng in engines:
                        prog.update(task, description=f"{vname} {sname}: compile {eng}")
                        t0 = time.perf_counter()
                        try:
                            compiled[eng] = (sg.compile(spec, model.vocab(), engine=eng), time.perf_counter() - t0)
                        except sg.StructgenError as e:
                            compiled[eng] = (None, str(e))
                        prog.advance(task)
                    auto = compiled.get("automaton", (None,))[0]
                    prog.console.print(f"{vname} {sname}: compiled " + ", ".join(
                        f"{e} {c[1]:.1f} s" if c[0] is not None else f"{e} failed" for e, c in compiled.items())
                        + (f" ({auto.n_states} states, {auto.n_classes} classes)" if auto is not None else ""))
                    for T in sizes:
                        row = {"vocab": vname, "T": T, "schema": sname, "prompt_tokens": prompt_len,
                               "forward_ms": fw[T][0], "log_softmax_ms": fw[T][1],
                               "states": auto.n_states if auto is not None else None,
                               "classes": auto.n_classes if auto is not None else None}
                        for eng in engines:
                            prog.update(task, description=f"{vname} {sname} T={T}: generate ({eng})")
                            c, ct = compiled[eng]
                            if c is None:
                                row[eng] = {"error": ct}
                                prog.advance(task)
                                continue
                            keep = args.trace_steps if eng == "automaton" else 0
                            fig = run_engine(sg.Generator, model, spec, prompt_text, T, eng, args, probe, keep,
                                             step_cap(vname))
                            fig["compile_s"] = ct
                            sampled = fig.pop("_sampled")
                            if sampled:
                                prog.update(task, description=f"{vname} {sname} T={T}: line-traced replay")
                                probe.reset()  # the replay goes through the wrapped methods: no caps, no sampling
                                tracer.time.clear()
                                tracer.events.clear()
                                fig["sections"] = replay_sections(c, T, sampled, device, tracer)
                            fig["ratio"] = fig["median_ms_per_step"] / fw[T][0]
                            row[eng] = fig
                            prog.console.print(
                                f"{vname} T={T} {sname} {eng}: {fig['median_ms_per_step']:.2f} ms/step median, "
                                f"{fig['mean_ms_per_step']:.2f} mean over {fig['model_steps_timed']} steps "
                                f"({100 * fig['ratio']:.0f}% of the forward pass)"
                                + (f"; {len(fig['errors'])} failed" if fig["errors"] else ""))
                            prog.advance(task)
                        results.append(row)
                del model
    finally:
        probe.restore()
    wall = time.time() - t_start
    report(models, results, engines, args, wall)
    C.write_json(args.json, {"benchmark": "constraint_cost", "env": C.environment(args), "settings": vars(args),
                             "wall_s": wall, "models": models, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
