"""The tables ``benchmarks/constraint_cost.py`` prints: the models (vocabulary, parameters, forward pass),
the constraint's cost per step beside it, per engine and canvas, and where the automaton's time goes."""

from __future__ import annotations

import _common as C
from constraint_cost_trace import SECTIONS


def _ms(fig: dict, key: str) -> float:
    return fig.get("calls", {}).get(key, {}).get("ms_per_step", 0.0)


def report(models, results, engines, args, wall: float) -> None:
    con = C.console
    rows = []
    for m in models:
        rows.append([m["vocab"], m["vocab_size"], m["params"], m["embedding_params"],
                     f"{100 * m['embedding_params'] / m['params']:.0f}%",
                     *[m["forward_ms"][T] for T in m["forward_ms"]],
                     *[m["log_softmax_ms"][T] for T in m["log_softmax_ms"]]])
    sizes = list(models[0]["forward_ms"]) if models else []
    con.print(C.table(
        f"Model: random ModernBERT, hidden {models[0]['hidden']}, {models[0]['layers']} layers, intermediate "
        f"{models[0]['intermediate']}, {models[0]['heads']} heads ({args.device}, {C.environment(args)['threads']} "
        "threads)" if models else "Model",
        ["vocab", "V", "params", "embedding", "emb share", *[f"fwd ms T={T}" for T in sizes],
         *[f"log_softmax ms T={T}" for T in sizes]], rows,
        caption=f"forward = model.logits over ~{models[0]['prompt_tokens'] if models else 32} prompt tokens + T masked "
                "canvas positions (median); the input embedding is tied to the output layer, so at 128k the "
                "vocabulary projection dominates both parameters and the forward pass."))

    rows = []
    for r in results:
        line = [r["vocab"], r["T"], r["schema"], r["states"], r["classes"], r["forward_ms"]]
        for eng in engines:
            f = r.get(eng, {})
            if "error" in f or not f:
                line += ["compile error", "-", "-", "-", "-"]
                continue
            nfe = f"{f['model_steps_timed']}"
            if f.get("capped"):
                nfe += f" ({f['capped']} capped)"
            if f.get("errors"):
                nfe += f" ({len(f['errors'])} failed)"
            line += [f["median_ms_per_step"], f["mean_ms_per_step"], f["sampler_ms_per_step"],
                     f"{100 * f['ratio']:.0f}%", nfe]
        rows.append(line)
    cols = ["vocab", "T", "schema", "states", "classes", "fwd ms"]
    short = {"automaton": "auto", "grammar": "gram"}
    for eng in engines:
        e = short.get(eng, eng)
        cols += [f"{e} median", f"{e} mean", f"{e} (Result)", f"{e}/fwd", f"{e} steps"]
    con.print(C.table("Constraint ms per model step vs one forward pass", cols, rows,
                      caption="per model step = all forced() calls + the propose() after one model call, timed around "
                              "the session methods (median and mean over the steps); (Result) = "
                              "timings['constraint_s'] / nfe, which also counts the final validation; "
                              "x/fwd = median ms per step / median forward ms. "
                              f"Block {args.block}, threshold {args.threshold}, greedy, {args.seeds} seed(s); "
                              "'capped' = generations ended after --max-steps model steps. "
                              f"Wall time {wall:.0f} s."))
    for r in results:
        for eng in engines:
            for err in (r.get(eng) or {}).get("errors", []) + ([r[eng]["error"]] if "error" in (r.get(eng) or {}) else []):
                con.print(f"[yellow]{r['vocab']} T={r['T']} {r['schema']} {eng}: {err[:300]}[/yellow]")

    if "automaton" in engines:
        rows = []
        for r in results:
            f = r.get("automaton")
            if not f or "error" in f or "sections" not in f:
                continue
            mean = f["mean_ms_per_step"]
            rows.append([r["vocab"], r["T"], r["schema"], _ms(f, "forced"), _ms(f, "propose"),
                         *[mean * f["sections"][k] for k in SECTIONS]])
        con.print(C.table(
            "Where the automaton's time goes (ms per model step)",
            ["vocab", "T", "schema", "forced()", "propose()", *SECTIONS], rows,
            caption="forced() and propose(): mean ms per model step in the run, timed around the calls. The "
                    "sections split their sum by a line tracer (its own cost per line calibrated and removed) "
                    "over sampled steps replayed on a fresh session: prefix walk (DFA state after the committed "
                    "prefix), alpha (live state sets, forward), viterbi (best-completion scores, backward), allowed "
                    "classes (which classes keep a completion, per scored row), decode (walk of the Viterbi path), "
                    "class scores (per-class max of the logprobs: a scatter over V, then to the host), token pick "
                    "(best token in the chosen class, over V), confidence (renormalisation over the allowed tokens, "
                    "over V), other (canvas copies, bookkeeping, forced-token count)."))
    if "grammar" in engines:
        rows = []
        for r in results:
            f = r.get("grammar")
            if not f or "error" in f:
                continue
            depth1 = [k for k in f.get("calls", {}) if k.count("/") == 1]
            inner = sum(_ms(f, k) for k in depth1)

            def both(m):
                return _ms(f, f"forced/{m}") + _ms(f, f"propose/{m}")

            rows.append([r["vocab"], r["T"], r["schema"], _ms(f, "forced"), _ms(f, "propose"), both("_scan"),
                         both("_fast_forward"), both("_steer"), both("_fitting_candidates"), both("_bitmask"),
                         both("_rows"), both("_fits"), _ms(f, "forced") + _ms(f, "propose") - inner])
        con.print(C.table(
            "Where the grammar engine's time goes (ms per model step)",
            ["vocab", "T", "schema", "forced()", "propose()", "scan+sync", "fast-forward", "endgame steer",
             "fitting search", "bitmask", "bitmask→tensor", "fits", "other"], rows,
            caption="timed around the session's methods called directly by forced()/propose(): scan+sync (read the "
                    "canvas, bring the llguidance matcher to the committed prefix), fast-forward (compute_ff_tokens), "
                    "endgame steer (search for a completion that fits before the canvas ends), fitting search (try "
                    "allowed tokens in score order before a committed segment), bitmask (compute_bitmask per "
                    "proposed position), bitmask→tensor, fits; other: the run's Python loop, argmax and "
                    "renormalisation."))
