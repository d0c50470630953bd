"""Conformance of structgen's constraints (plus validators) on MaskBench and the JSON-Schema-Test-Suite.

For every schema (a MaskBench file, or one case of a JSON-Schema-Test-Suite file) and every test instance:

* **structgen**: ``sg.compile(sg.JsonSchema(schema), tok)`` (engine ``auto``); each instance is serialised
  (``json.dumps`` with the default and the compact separators, non-ASCII kept or escaped, and with object
  keys put in the schema's ``properties`` order), tokenised, fed through ``Constraint.accepts`` and checked
  by the spec's validators. An instance is *accepted* when some serialisation is accepted by the constraint
  **and** passes the validators — what a generation with validation and repair can release.
* **llguidance** (the anchor), in the same run with the same tokenizer and serialisations: a strict
  ``grammar_from_json_schema`` (no ``lenient``), one ``LLMatcher`` per schema, a fresh copy per instance
  (``validate_tokens``, ``consume_tokens``, ``is_accepting``).

Counts per source: schemas compiled (structgen by engine, llguidance), valid instances accepted, invalid
instances rejected (only a compiled schema can reject), invalid instances accepted (must be 0 for
structgen), and per-schema compile times (median/p95).

**Isolation.** Compiles cannot be interrupted and a Rust abort (out of memory inside outlines-core or
llguidance) would kill the process, so schemas run in worker subprocesses under an address-space limit.
A worker reports each stage before it starts; if it dies or overruns its time limit, the parent records
that stage as not compiled (with the reason), restarts a worker and re-runs the schema without that stage.
A compile slower than ``--compile-limit`` seconds (default 30) counts as not compiled: the worker is stopped
there and the schema is listed; the instance checks of one schema stop after ``--check-limit`` seconds (the
rest count as unchecked). The tokenizer (``train_bpe(default_corpus(), vocab)``, deterministic) is trained
once and loaded by every worker.

It also hunts engine bugs and lists them (``bugs`` in the JSON): exceptions other than ``StructgenError``
from compile/accepts, an invalid instance the constraint accepts that the validators miss, a valid instance
the validators reject (``format-asserted`` when only format assertion rejects it: structgen asserts formats
by design, draft 2020-12 does not), a prefix of an accepted output that ``accepts_prefix`` refuses,
non-monotone prefix answers, and ``min_tokens()`` above the length of an accepted output.

The parts: ``conformance_data`` (the cases, an instance's serialisations), ``conformance_checks`` (one schema
in a worker, the bugs it hunts), ``conformance_figures`` (counts, times, the table and the JSON); this module
runs them in isolated workers and keeps the baseline.

Run: ``python benchmarks/conformance.py [--data ../shared/data] [--vocab 4096] [--limit N] [--json out.json]``;
``--record-baseline`` (full run only) also runs the test subset and rewrites ``conformance_baseline.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue as queue_mod
import resource
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
# the repo root (for ``structgen``) and this folder (its parts, and spawned workers re-import this module by
# name: import it as ``conformance`` when loading it by path, as tests/test_conformance.py does)
for _p in (str(ROOT), str(Path(__file__).resolve().parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

# the parts, re-exported: the cases, one schema's checks, the figures
from conformance_checks import LL_OPTIONS, STAGES, Engines, _engine_result, check_case  # noqa: E402,F401
from conformance_data import Case, default_data_dir, load_cases, maskbench_source, serialisations  # noqa: E402,F401
from conformance_figures import (COUNT_KEYS, figures, print_report, slow_schemas, summarise,  # noqa: E402,F401
                                 timing)

#: findings that are not bugs: structgen asserts formats by design; the test label disagrees with jsonschema
NOT_BUGS = ("format-asserted", "label-disagrees")


# ------------------------------------------------------------------------------------------------------
# isolated runner
# ------------------------------------------------------------------------------------------------------


def _worker(wid: int, tokenizer_dir: str, mem_bytes: int | None, inbox, outbox, opts: dict) -> None:
    if mem_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import torch

        torch.set_num_threads(1)
        eng = Engines.load(tokenizer_dir)
    except Exception as e:
        outbox.put(("fatal", wid, None, f"{type(e).__name__}: {e}"))
        return
    outbox.put(("ready", wid, None, None))
    while True:
        task = inbox.get()
        if task is None:
            return
        idx, case, stages = task
        res = check_case(eng, case, stages=stages, report=lambda st: outbox.put(("stage", wid, idx, st)), **opts)
        outbox.put(("done", wid, idx, res))


def save_tokenizer(vocab_size: int, directory: str) -> None:
    """Train the benchmark tokenizer (a byte-level BPE on the default corpus) and save it."""
    from structgen.tokenizers import default_corpus, train_bpe

    train_bpe(default_corpus(), vocab_size).save_pretrained(directory)


@dataclass
class _Slot:
    proc: Any
    inbox: Any
    task: tuple | None = None
    stage: str | None = None
    since: float = 0.0
    ready: bool = False


@dataclass
class RunConfig:
    vocab: int = 4096
    workers: int = 2
    mem_gb: float | None = 4.0
    compile_limit: float | None = 30.0
    check_limit: float | None = 30.0
    hard_limit: float = 120.0  # a stage that runs longer than this is killed
    progress: bool = True
    extra: dict = field(default_factory=dict)


def run_cases(cases: Sequence[Case], cfg: RunConfig) -> list[dict]:
    """Check every case in worker subprocesses, surviving crashes and hangs; results in case order."""
    ctx = mp.get_context("spawn")
    outbox = ctx.Queue()
    results: list[dict | None] = [None] * len(cases)
    partial: dict[int, dict] = {}  # stage results recorded for crashed/killed stages
    pending: list[tuple[int, tuple[str, ...]]] = [(i, STAGES) for i in range(len(cases))][::-1]
    opts = {"compile_limit": cfg.compile_limit, "check_limit": cfg.check_limit}
    mem = int(cfg.mem_gb * (1 << 30)) if cfg.mem_gb else None
    n_workers = max(1, min(cfg.workers, len(cases))) if cases else 0
    with tempfile.TemporaryDirectory(prefix="structgen-conformance-") as tokdir:
        save_tokenizer(cfg.vocab, tokdir)
        slots: dict[int, _Slot] = {}
        next_wid = [0]

        def start() -> None:
            wid = next_wid[0]
            next_wid[0] += 1
            inbox = ctx.Queue()
            p = ctx.Process(target=_worker, args=(wid, tokdir, mem, inbox, outbox, opts), daemon=True)
            p.start()
            slots[wid] = _Slot(p, inbox, since=time.monotonic())

        def give(slot: _Slot) -> None:
            if pending:
                idx, stages = pending.pop()
                slot.task, slot.stage, slot.since = (idx, stages), None, time.monotonic()
                slot.inbox.put((idx, cases[idx], stages))
            else:
                slot.task = None

        def failed(wid: int, why: str) -> None:
            slot = slots.pop(wid)
            if slot.proc.is_alive():
                slot.proc.kill()
            slot.proc.join(5)
            if slot.task is None:
                return
            idx, stages = slot.task
            stage = (slot.stage or f"{stages[0]}-compile").split("-")[0]
            r = partial.setdefault(idx, {})
            er = _engine_result()
            if stage == "sg":
                er.update(engine=None, lenient=False, constraint_invalid_accepted=0, validator_rejects_valid=0,
                          format_asserted=0, validator_accepts_invalid=0)
            er["reason"] = f"{why} during {slot.stage or 'start'}"
            er["compile_s"] = time.monotonic() - slot.since if (slot.stage or "").endswith("compile") else None
            r[stage] = er
            if slot.stage and slot.stage.endswith("check"):
                er["compiled"] = True  # it compiled; the instance checks never finished
                er["unchecked"] = cases[idx].n_valid + cases[idx].n_invalid
                if stage == "sg":
                    r["bug"] = {"case": cases[idx].id, "kind": "check-crash", "detail": er["reason"], "text": None}
            rest = tuple(s for s in stages if s not in r)
            if rest:
                pending.append((idx, rest))
            else:
                results[idx] = _merge(cases[idx], None, partial.pop(idx))

        for _ in range(n_workers):
            start()
        progress = _progress(cfg.progress, len(cases))
        done = 0
        with progress:
            task = progress.add_task("schemas", total=len(cases))
            while done < len(cases):
                try:
                    kind, wid, idx, payload = outbox.get(timeout=0.5)
                except queue_mod.Empty:
                    kind = None
                if kind == "fatal":
                    raise RuntimeError(f"conformance worker could not start: {payload}")
                if kind is not None and wid in slots:
                    slot = slots[wid]
                    if kind == "ready":
                        slot.ready = True
                        give(slot)
                    elif kind == "stage":
                        slot.stage, slot.since = payload, time.monotonic()
                    elif kind == "done":
                        results[idx] = _merge(cases[idx], payload, partial.pop(idx, None))
                        done += 1
                        progress.update(task, completed=done)
                        give(slot)
                now = time.monotonic()
                for wid, slot in list(slots.items()):
                    if not slot.proc.is_alive():
                        code = slot.proc.exitcode
                        failed(wid, f"worker crashed (exit code {code})")
                    elif slot.task is not None and now - slot.since > _stage_limit(cfg, slot.stage):
                        failed(wid, f"killed after {_stage_limit(cfg, slot.stage):.0f} s")
                    else:
                        continue
                    done = sum(r is not None for r in results)
                    progress.update(task, completed=done)
                    if len(slots) < n_workers and pending:
                        start()
                if pending:
                    for slot in slots.values():
                        if slot.ready and slot.task is None:
                            give(slot)
        for slot in slots.values():
            slot.inbox.put(None)
        for slot in slots.values():
            slot.proc.join(10)
            if slot.proc.is_alive():
                slot.proc.kill()
    return [r for r in results if r is not None]


def _stage_limit(cfg: RunConfig, stage: str | None) -> float:
    """Seconds a stage may run before the worker is killed: a compile past ``compile_limit`` counts as not
    compiled anyway, so it is stopped there; other stages get ``hard_limit``."""
    if stage and stage.endswith("compile") and cfg.compile_limit is not None:
        return min(cfg.hard_limit, cfg.compile_limit + 1.0)
    return cfg.hard_limit


def _merge(case: Case, res: dict | None, part: dict | None) -> dict:
    res = dict(res) if res else {"id": case.id, "source": case.source, "n_valid": case.n_valid,
                                 "n_invalid": case.n_invalid, "bugs": [], "rejects": []}
    if part:
        for s in STAGES:
            if s in part:
                res[s] = part[s]
        if "bug" in part:
            res["bugs"] = res.get("bugs", []) + [part["bug"]]
    return res


def _progress(enabled: bool, total: int):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
        TimeRemainingColumn

    return Progress(TextColumn("[bold]conformance"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), disable=not enabled, transient=False)


#: the deterministic subset tests/test_conformance.py runs: every 10th MaskBench file and a few keyword files
#: of the test suite; schemas slow to compile (> SLOW_S, or stopped) in the recorded full run are excluded,
#: so the test's counts do not depend on the machine's load.
SUBSET: dict = {"maskbench_every": 10, "suite_files": ["anyOf.json", "const.json", "enum.json", "format.json",
                                                       "maxLength.json", "minLength.json", "minimum.json",
                                                       "multipleOf.json", "oneOf.json", "pattern.json",
                                                       "required.json", "uniqueItems.json"]}
SLOW_S = 5.0
BASELINE = Path(__file__).resolve().parent / "conformance_baseline.json"
RECORDED = ("schemas", "valid", "invalid", "sg_compiled", "sg_automaton", "sg_grammar", "sg_valid_accepted",
            "sg_invalid_rejected", "sg_invalid_accepted", "ll_compiled", "ll_valid_accepted", "ll_invalid_rejected",
            "ll_invalid_accepted")


def _slow(r: dict) -> bool:
    for e in STAGES:
        er = r.get(e) or {}
        why = er.get("reason") or ""
        if (er.get("compile_s") or 0) > SLOW_S or "killed" in why or "compile took" in why or "crashed" in why:
            return True
    return False


def record_baseline(data: Path, cfg: RunConfig, full_results: Sequence[dict], full_figs: dict,
                    path: Path = BASELINE) -> dict:
    """Run the test subset and write the full-run and subset figures to ``path``."""
    ids = {c.id for c in load_cases(data, **SUBSET)}
    select = {**SUBSET, "exclude": sorted(r["id"] for r in full_results if r["id"] in ids and _slow(r))}
    _, sub = run(data, cfg, **select)
    keep = lambda g: {k: g[k] for k in RECORDED}  # noqa: E731
    doc = {
        "about": "Figures of benchmarks/conformance.py that tests/test_conformance.py must not fall below "
                 "(structgen's counts; llguidance's are the anchor, recorded for reference). Re-record with "
                 "`python benchmarks/conformance.py --record-baseline` after an intended change.",
        "vocab": cfg.vocab,
        "config": full_figs["config"],
        "full": {"select": {}, "wall_s": full_figs["wall_s"], "total": keep(full_figs["total"]),
                 "sources": {k: keep(v) for k, v in full_figs["sources"].items()},
                 "compile_time_ms": full_figs["compile_time"]},
        "subset": {"select": select, "wall_s": sub["wall_s"], "total": keep(sub["total"])},
    }
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return doc


def run(data: Path, cfg: RunConfig, **load_kw) -> tuple[list[dict], dict]:
    """Load the cases, check them, and return (per-schema results, figures)."""
    cases = load_cases(data, **load_kw)
    t0 = time.monotonic()
    results = run_cases(cases, cfg)
    return results, figures(results, cfg, time.monotonic() - t0)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=default_data_dir(), help="the shared data folder")
    ap.add_argument("--vocab", type=int, default=4096, help="BPE vocabulary size (default 4096)")
    ap.add_argument("--limit", type=int, default=None, help="first N maskbench files and first N suite cases")
    ap.add_argument("--every", type=int, default=1, help="take every k-th maskbench file")
    ap.add_argument("--suite-files", default=None, help="comma-separated JSON-Schema-Test-Suite files only")
    ap.add_argument("--no-maskbench", action="store_true")
    ap.add_argument("--no-suite", action="store_true")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--mem-gb", type=float, default=4.0, help="address-space limit per worker (0: none)")
    ap.add_argument("--compile-limit", type=float, default=30.0, help="a slower compile counts as not compiled")
    ap.add_argument("--check-limit", type=float, default=30.0, help="seconds of instance checks per schema")
    ap.add_argument("--hard-limit", type=float, default=120.0, help="kill a stage running longer than this")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    ap.add_argument("--record-baseline", action="store_true",
                    help=f"after a full run, run the test subset and write both figures to {BASELINE.name}")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)
    if a.record_baseline and (a.limit or a.every != 1 or a.suite_files or a.no_maskbench or a.no_suite):
        print("--record-baseline needs a full run (no --limit, --every, --suite-files, --no-*)", file=sys.stderr)
        return 2
    if not a.data.is_dir():
        print(f"data folder {a.data} not found; pass --data or set STRUCTGEN_SHARED", file=sys.stderr)
        return 2
    cfg = RunConfig(vocab=a.vocab, workers=a.workers, mem_gb=a.mem_gb or None, compile_limit=a.compile_limit,
                    check_limit=a.check_limit, hard_limit=a.hard_limit, progress=not a.quiet,
                    extra={"limit": a.limit, "every": a.every, "suite_files": a.suite_files})
    suite_files = a.suite_files.split(",") if a.suite_files else None
    results, figs = run(a.data, cfg, limit=a.limit, maskbench_every=a.every, suite_files=suite_files,
                        maskbench=not a.no_maskbench, suite=not a.no_suite)
    print_report(results, summarise(results), figs["compile_time"], figs["wall_s"])
    if figs["slow"]:
        print("slowest compiles (> 5 s):", ", ".join(f"{s['case']} {s['engine']} {s['compile_s']} s"
                                                     for s in figs["slow"][:10]))
    kinds = figs["finding_counts"]
    bugs = {k: v for k, v in kinds.items() if k not in NOT_BUGS}
    notes = {k: v for k, v in kinds.items() if k in NOT_BUGS}
    if bugs:
        print("possible engine/validator bugs:", ", ".join(f"{k}: {v}" for k, v in sorted(bugs.items())),
              "(examples in --json 'bugs')")
    if notes:
        print("not bugs:", ", ".join(f"{k}: {v}" for k, v in sorted(notes.items())))
    if a.json:
        a.json.write_text(json.dumps(figs, indent=1, default=str))
        print(f"figures written to {a.json}")
    if a.record_baseline:
        doc = record_baseline(a.data, cfg, results, figs)
        t = doc["subset"]["total"]
        n_ex = len(doc["subset"]["select"]["exclude"])
        print(f"baseline written to {BASELINE}: subset of {t['schemas']} schemas ({n_ex}"
              f" slow ones excluded): structgen compiled {t['sg_compiled']}, valid accepted {t['sg_valid_accepted']}"
              f" of {t['valid']}, invalid rejected {t['sg_invalid_rejected']} of {t['invalid']}; llguidance "
              f"{t['ll_compiled']} / {t['ll_valid_accepted']} / {t['ll_invalid_rejected']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
