"""Compile time per schema over the maskbench files, structgen beside llguidance, in the same run.

Vocabulary: ``synthetic_bpe(32768)``, a byte-level BPE of exactly 32,768 tokens (``train_bpe`` on the default
corpus stops near 9.6k tokens, so it cannot give 32k). For every schema file:

* structgen: ``sg.compile(sg.JsonSchema(schema), tok)`` with the cache cleared first
  (``structgen.constraints.clear_cache()``), ``engine="auto"``; the engine it chose (automaton or grammar)
  is recorded, and a second call on a fresh ``JsonSchema`` of the same schema times the cached path;
* llguidance: ``LLMatcher.grammar_from_json_schema(schema)`` + ``LLMatcher(lltok, grammar)`` with
  ``lltok = TokenVocab.of(tok).ll`` (llguidance's defaults). llguidance builds its lexer lazily, so the
  first token mask (``compute_bitmask``) is timed as well. structgen's grammar engine is lazy in the
  same way; its automaton engine is built eagerly (the whole token DFA).

Files run in a worker subprocess, one after the other; a file that takes longer than ``--timeout`` seconds
or kills the worker (outlines-core can abort the process on some huge schemas) is reported by name and the
run goes on with a fresh worker. A full run took 12.3 minutes on two shared cores (1,222 files, three of
them stopped at the 120 s timeout; most of the rest of the time goes to a few automata with thousands of
states), so by default a deterministic sample runs: every ``--every``-th file (4) of each subset, all
subsets represented, 307 files (80 s on a quiet machine, 4.3 minutes on a busy one); ``--full`` runs every
file, ``--limit N`` cuts the selection to N files.

    python benchmarks/compile_time.py                 # the default sample
    python benchmarks/compile_time.py --full --json compile.json
    python benchmarks/compile_time.py --limit 50      # the first 50 files of the selection
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

VOCAB = "32k"


# ------------------------------------------------------------------------------------------------------
# the worker: compiles the files it is given, one JSON line per event, flushed
# ------------------------------------------------------------------------------------------------------


def worker(files: list[str], out_path: str) -> int:
    C.quiet_warnings()
    import torch

    torch.set_num_threads(1)
    import llguidance

    import structgen as sg
    from structgen.constraints import TokenVocab, clear_cache

    tok = C.tokenizer(VOCAB)
    vocab = TokenVocab.of(tok)
    lltok = vocab.ll
    # warm both engines once so the first file does not pay one-off set-up (the outlines-core vocabulary,
    # imports): those are per tokenizer, not per schema
    sg.compile(sg.JsonSchema({"type": "object", "properties": {"a": {"type": "integer"}}}), tok)
    llguidance.LLMatcher(lltok, llguidance.LLMatcher.grammar_from_json_schema({"type": "integer"}))
    with open(out_path, "a", buffering=1) as out:
        def emit(rec):
            out.write(json.dumps(rec) + "\n")
            out.flush()

        for path in files:
            name = Path(path).name
            emit({"start": name, "t": time.time()})
            rec: dict = {"file": name}
            try:
                schema = C.load_case(Path(path))["schema"]
            except Exception as e:  # pragma: no cover - data error
                rec["read_error"] = str(e)
                emit(rec)
                continue
            # structgen, cold: the spec (JsonSchema checks the schema) and the compile
            clear_cache()
            t0 = time.perf_counter()
            try:
                spec = sg.JsonSchema(schema)
                rec["sg_spec_s"] = time.perf_counter() - t0
                c = sg.compile(spec, tok)
                rec["sg_s"] = time.perf_counter() - t0
                rec["sg_engine"] = c.engine
                if c.engine == "automaton":
                    rec["states"], rec["classes"] = c.n_states, c.n_classes
                # cached: the same call again, and the cache lookup alone
                t0 = time.perf_counter()
                spec = sg.JsonSchema(schema)
                t1 = time.perf_counter()
                sg.compile(spec, tok)
                t2 = time.perf_counter()
                rec["sg_cached_s"], rec["sg_lookup_s"] = t2 - t0, t2 - t1
            except sg.StructgenError as e:
                rec["sg_s"] = time.perf_counter() - t0
                rec["sg_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            except Exception as e:  # an engine bug: report it, keep going
                rec["sg_s"] = time.perf_counter() - t0
                rec["sg_error"] = f"UNEXPECTED {type(e).__name__}: {str(e)[:200]}"
            # llguidance
            t0 = time.perf_counter()
            try:
                grammar = llguidance.LLMatcher.grammar_from_json_schema(schema)
                m = llguidance.LLMatcher(lltok, grammar, log_level=0)
                rec["ll_s"] = time.perf_counter() - t0
                if m.is_error():
                    rec["ll_error"] = m.get_error()[:200]
                else:
                    t1 = time.perf_counter()
                    m.compute_bitmask()
                    rec["ll_mask_s"] = time.perf_counter() - t1
            except Exception as e:
                rec["ll_s"] = time.perf_counter() - t0
                rec["ll_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            emit(rec)
        clear_cache()
    return 0


# ------------------------------------------------------------------------------------------------------
# the parent: runs workers over the files, with a timeout per file and crash recovery
# ------------------------------------------------------------------------------------------------------


def run_all(files: list[Path], timeout: float, prog, task) -> tuple[list[dict], list[dict]]:
    """Records for ``files`` (in order) and the files that timed out or crashed a worker."""
    records: dict[str, dict] = {}
    problems: list[dict] = []
    todo = [str(p) for p in files]
    tmpdir = tempfile.mkdtemp(prefix="structgen-compile-")
    n_worker = 0
    while todo:
        n_worker += 1
        out_path = os.path.join(tmpdir, f"w{n_worker}.jsonl")
        list_path = os.path.join(tmpdir, f"w{n_worker}.files")
        Path(list_path).write_text("\n".join(todo))
        err_path = os.path.join(tmpdir, f"w{n_worker}.err")
        with open(err_path, "wb") as err_fh:
            proc = subprocess.Popen([sys.executable, __file__, "--worker", list_path, out_path],
                                    stdout=subprocess.DEVNULL, stderr=err_fh)
        pos, current, started = 0, None, None

        def read_new() -> None:
            nonlocal pos, current, started
            if not os.path.exists(out_path):
                return
            with open(out_path) as fh:
                fh.seek(pos)
                chunk = fh.read()
            cut = chunk.rfind("\n") + 1  # complete lines only
            pos += cut
            for line in chunk[:cut].splitlines():
                rec = json.loads(line)
                if "start" in rec:
                    current, started = rec["start"], time.time()
                else:
                    records[rec["file"]] = rec
                    current = None
                    prog.advance(task)

        while True:
            time.sleep(0.2)
            read_new()
            rc = proc.poll()
            if rc is not None:
                break
            if current is not None and time.time() - started > timeout:
                proc.kill()
                proc.wait()
                problems.append({"file": current, "problem": f"timed out after {timeout:.0f} s"})
                prog.advance(task)
                break
        read_new()
        if rc is not None and rc != 0 and current is not None:
            err = Path(err_path).read_text(errors="replace").strip().splitlines()
            problems.append({"file": current, "problem": f"worker died (exit {rc}): {' | '.join(err[-3:])[:300]}"})
            prog.advance(task)
        elif rc is not None and rc != 0:
            err = Path(err_path).read_text(errors="replace")
            raise SystemExit(f"the compile worker failed before its first file (exit {rc}):\n{err[-2000:]}")
        done = set(records) | {p["file"] for p in problems}
        todo = [p for p in todo if Path(p).name not in done]
    shutil.rmtree(tmpdir, ignore_errors=True)
    order = {p.name: i for i, p in enumerate(files)}
    return sorted(records.values(), key=lambda r: order[r["file"]]), problems


def select(files: list[Path], every: int, limit: int | None) -> list[Path]:
    """Every ``every``-th file of each subset (name before '---' or the trailing number), then ``limit``."""
    if every > 1:
        by_subset: dict[str, list[Path]] = {}
        for p in files:
            sub = p.name.split("---")[0] if "---" in p.name else p.stem.rstrip("0123456789").rstrip("_")
            by_subset.setdefault(sub, []).append(p)
        files = sorted(p for group in by_subset.values() for p in group[::every])
    return files[:limit] if limit else files


def stats_ms(xs: list[float]) -> list:
    xs = [1e3 * x for x in xs]
    return [len(xs), C.median(xs), C.percentile(xs, 95), max(xs) if xs else float("nan"), sum(xs) / 1e3]


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker(Path(sys.argv[2]).read_text().splitlines(), sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--full", action="store_true", help="every maskbench file (default: a sample, see --every)")
    ap.add_argument("--every", type=int, default=4,
                    help="without --full: every N-th file of each subset (default 4, about 300 files)")
    ap.add_argument("--limit", type=int, default=None, help="at most this many files of the selection")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds one file may take (both compilers) before it is reported and skipped (default 120)")
    C.add_common_args(ap, device=False)
    args = ap.parse_args(argv)
    C.setup_torch(args)

    all_files = C.maskbench_files()
    files = select(all_files, 1 if args.full else args.every, args.limit)
    C.console.print(f"{len(files)} of {len(all_files)} maskbench files from {all_files[0].parent}; vocabulary "
                    f"{C.vocab_recipe(VOCAB)}")
    t0 = time.time()
    with C.progress() as prog:
        task = prog.add_task("compiling", total=len(files))
        records, problems = run_all(files, args.timeout, prog, task)
    wall = time.time() - t0
    report(records, problems, files, wall, args)
    C.write_json(args.json, {"benchmark": "compile_time", "env": C.environment(args), "settings": vars(args),
                             "vocab": C.vocab_recipe(VOCAB), "n_files": len(files), "wall_s": wall,
                             "records": records, "problems": problems})
    return 0


def report(records, problems, files, wall, args) -> None:
    con = C.console
    sg_ok = [r for r in records if "sg_engine" in r]
    auto = [r for r in sg_ok if r["sg_engine"] == "automaton"]
    gram = [r for r in sg_ok if r["sg_engine"] == "grammar"]
    ll_ok = [r for r in records if "ll_s" in r and "ll_error" not in r]
    both = [r for r in sg_ok if "ll_s" in r and "ll_error" not in r]
    cols = ["compiler", "compiled", "median ms", "p95 ms", "max ms", "total s"]
    rows = [
        ["structgen, cold (auto)", *stats_ms([r["sg_s"] for r in sg_ok])],
        ["  engine = automaton", *stats_ms([r["sg_s"] for r in auto])],
        ["  engine = grammar", *stats_ms([r["sg_s"] for r in gram])],
        ["  of which JsonSchema() (schema check)", *stats_ms([r["sg_spec_s"] for r in sg_ok if "sg_spec_s" in r])],
        ["structgen, cached (JsonSchema + compile)", *stats_ms([r["sg_cached_s"] for r in sg_ok if "sg_cached_s" in r])],
        ["  cache lookup alone (compile(spec))", *stats_ms([r["sg_lookup_s"] for r in sg_ok if "sg_lookup_s" in r])],
        ["llguidance (grammar + LLMatcher)", *stats_ms([r["ll_s"] for r in ll_ok])],
        ["llguidance + first mask", *stats_ms([r["ll_s"] + r.get("ll_mask_s", 0.0) for r in ll_ok])],
        ["both compiled: structgen", *stats_ms([r["sg_s"] for r in both])],
        ["both compiled: llguidance + first mask", *stats_ms([r["ll_s"] + r.get("ll_mask_s", 0.0) for r in both])],
    ]
    con.print(C.table(
        f"Compile time per schema: {len(records)} maskbench files, vocabulary {C.vocab_recipe(VOCAB)} "
        f"({'all files' if args.full else f'every {args.every}th file of each subset'})",
        cols, rows,
        caption=f"structgen cold = sg.compile(sg.JsonSchema(schema), tok) after clear_cache() (JsonSchema() checks the "
                f"schema against its metaschema); cached = the same call again; lookup = compile() of a spec already "
                f"built. llguidance with its default JSON options. Failed compiles: structgen "
                f"{len(records) - len(sg_ok)}, llguidance {len(records) - len(ll_ok)}; timed out or crashed: "
                f"{len(problems)}. Wall time {wall:.0f} s."))
    if auto:
        q = [r["states"] for r in auto]
        k = [r["classes"] for r in auto]
        con.print(f"automaton sizes: states median {C.median(q):.0f} (max {max(q)}), token classes median "
                  f"{C.median(k):.0f} (max {max(k)})")
    slow = sorted(sg_ok + [r for r in records if "sg_error" in r], key=lambda r: -r["sg_s"])[:5]
    con.print(C.table("Slowest 5 files for structgen", ["file", "engine", "structgen ms", "states", "classes",
                                                         "llguidance ms"],
                      [[r["file"], r.get("sg_engine", "error"), 1e3 * r["sg_s"], r.get("states"), r.get("classes"),
                        1e3 * r["ll_s"] if "ll_s" in r else None] for r in slow]))
    slow = sorted([r for r in records if "ll_s" in r], key=lambda r: -(r["ll_s"] + r.get("ll_mask_s", 0.0)))[:5]
    con.print(C.table("Slowest 5 files for llguidance", ["file", "llguidance + first mask ms", "structgen ms",
                                                         "structgen engine"],
                      [[r["file"], 1e3 * (r["ll_s"] + r.get("ll_mask_s", 0.0)), 1e3 * r["sg_s"],
                        r.get("sg_engine", "error")] for r in slow]))
    unexpected = [r for r in records if r.get("sg_error", "").startswith("UNEXPECTED")]
    for r in unexpected:
        con.print(f"[red]structgen raised a non-structgen error on {r['file']}: {r['sg_error']}[/red]")
    for p in problems:
        con.print(f"[red]{p['file']}: {p['problem']}[/red]")


if __name__ == "__main__":
    raise SystemExit(main())
