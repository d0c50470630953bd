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

Run: ``python benchmarks/conformance.py [--data ../shared/data] [--vocab 4096] [--limit N] [--json out.json]``;
``--record-baseline`` (full run only) also runs the test subset and rewrites ``conformance_baseline.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import queue as queue_mod
import resource
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
# the repo root (for ``structgen``) and this folder (spawned workers re-import this module by name: import it
# as ``conformance`` when loading it by path, as tests/test_conformance.py does)
for _p in (str(ROOT), str(Path(__file__).resolve().parent)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

#: strict llguidance options for the anchor: no flexible whitespace, the same separators as structgen
#: (one optional space after ``,`` and ``:``); never ``lenient``.
LL_OPTIONS: dict = {"whitespace_flexible": False, "item_separator": ",[ ]?", "key_separator": ":[ ]?"}
STAGES = ("sg", "ll")
MAX_BUG_EXAMPLES = 25  # examples kept per kind of finding
MAX_REJECT_EXAMPLES = 150
#: findings that are not bugs: structgen asserts formats by design; the test label disagrees with jsonschema
NOT_BUGS = ("format-asserted", "label-disagrees")


# ------------------------------------------------------------------------------------------------------
# the data
# ------------------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One schema with its labelled instances."""

    id: str  # "maskbench/<file>" or "suite/<file>#<case index>"
    source: str  # group shown in the table
    schema: Any
    tests: list[dict]  # [{"description", "valid", "data"}]

    @property
    def n_valid(self) -> int:
        return sum(1 for t in self.tests if t["valid"])

    @property
    def n_invalid(self) -> int:
        return sum(1 for t in self.tests if not t["valid"])


def default_data_dir() -> Path:
    """``$STRUCTGEN_SHARED/data``, else ``<repo>/../shared/data``."""
    shared = os.environ.get("STRUCTGEN_SHARED")
    return Path(shared) / "data" if shared else ROOT.parent / "shared" / "data"


def maskbench_source(name: str) -> str:
    """The MaskBench subset of a file name: the part before ``---``, ``BFCL`` or ``JME``."""
    if "---" in name:
        return name.split("---", 1)[0]
    for prefix in ("BFCL", "JME"):
        if name.startswith(prefix):
            return prefix
    return Path(name).stem


def load_cases(data: Path, *, limit: int | None = None, maskbench_every: int = 1,
               suite_files: Sequence[str] | None = None, maskbench: bool = True, suite: bool = True,
               exclude: Iterable[str] = (),
               ) -> list[Case]:
    """MaskBench files (every ``maskbench_every``-th in name order) then test-suite cases, deterministic.

    ``suite_files`` restricts the JSON-Schema-Test-Suite to those file names; ``limit`` keeps the first
    ``limit`` cases of each of the two sets; ``exclude`` drops cases by id (after the selection).
    """
    skip = set(exclude)
    cases: list[Case] = []
    mb_dir, ts_dir = data / "maskbench", data / "json-schema-test-suite"
    if maskbench and mb_dir.is_dir():
        files = sorted(p for p in mb_dir.glob("*.json"))[::maskbench_every]
        mb = []
        for p in files:
            d = json.loads(p.read_text())
            mb.append(Case(f"maskbench/{p.name}", maskbench_source(p.name), d["schema"], d.get("tests", [])))
        cases += mb[:limit] if limit else mb
    if suite and ts_dir.is_dir():
        ts = []
        for p in sorted(ts_dir.glob("*.json")):
            if suite_files is not None and p.name not in suite_files:
                continue
            for i, c in enumerate(json.loads(p.read_text())):
                ts.append(Case(f"suite/{p.name}#{i}", "JSON-Schema-Test-Suite", c["schema"], c.get("tests", [])))
        cases += ts[:limit] if limit else ts
    return [c for c in cases if c.id not in skip]


# ------------------------------------------------------------------------------------------------------
# serialisations of an instance
# ------------------------------------------------------------------------------------------------------


def _resolve_local(ref: str, root: Any) -> Any:
    """The subschema a local ``$ref`` points at, or None."""
    from structgen.constraints.json_regex import AutomatonUnsupported, resolve_ref

    try:
        return resolve_ref(ref, root)
    except AutomatonUnsupported:
        return None


def _property_order(schema: Any, root: Any, depth: int = 0) -> tuple[list[str], dict]:
    """Property names in schema order and their subschemas, following local $refs and allOf."""
    order: list[str] = []
    subs: dict = {}
    if not isinstance(schema, dict) or depth > 8:
        return order, subs
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        o, s = _property_order(_resolve_local(ref, root), root, depth + 1)
        order += o
        subs.update(s)
    props = schema.get("properties")
    if isinstance(props, dict):
        for k, v in props.items():
            if k not in subs:
                order.append(k)
            subs[k] = v
    for part in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
        o, s = _property_order(part, root, depth + 1)
        for k in o:
            if k not in subs:
                order.append(k)
        subs.update(s)
    return order, subs


def _items_schema(schema: Any, root: Any, index: int, depth: int = 0) -> Any:
    if not isinstance(schema, dict) or depth > 8:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        return _items_schema(_resolve_local(ref, root), root, index, depth + 1)
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def reorder(value: Any, schema: Any, root: Any, depth: int = 0) -> Any:
    """``value`` with object keys in the schema's ``properties`` order (others after, as they were)."""
    if depth > 32:
        return value
    if isinstance(value, dict):
        order, subs = _property_order(schema, root)
        if not order:
            return {k: reorder(v, None, root, depth + 1) for k, v in value.items()}
        keys = [k for k in order if k in value] + [k for k in value if k not in subs]
        return {k: reorder(value[k], subs.get(k), root, depth + 1) for k in keys}
    if isinstance(value, list):
        return [reorder(v, _items_schema(schema, root, i), root, depth + 1) for i, v in enumerate(value)]
    return value


def serialisations(data: Any, schema: Any) -> list[str]:
    """The texts tried for one instance, most common first, without duplicates."""
    values = [data]
    if isinstance(schema, dict):
        r = reorder(data, schema, schema)
        if json.dumps(r) != json.dumps(data):
            values.append(r)
    out: list[str] = []
    for v in values:
        for seps in ((", ", ": "), (",", ":")):
            for ascii_ in (True, False):
                s = json.dumps(v, separators=seps, ensure_ascii=ascii_)
                if s not in out:
                    out.append(s)
    return out


# ------------------------------------------------------------------------------------------------------
# one schema, in a worker
# ------------------------------------------------------------------------------------------------------


@dataclass
class Engines:
    """What a worker holds: the tokenizer, structgen's vocabulary and llguidance's tokenizer."""

    tok: Any
    vocab: Any
    lltok: Any

    @classmethod
    def load(cls, tokenizer_dir: str) -> "Engines":
        from transformers import PreTrainedTokenizerFast

        from structgen.constraints.vocab import TokenVocab

        tok = PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
        vocab = TokenVocab.of(tok)
        return cls(tok, vocab, vocab.ll)

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))


def _short(s: str, n: int = 300) -> str:
    s = str(s)
    return s if len(s) <= n else s[: n - 3] + "..."


def _tail(s: str, n: int) -> str:
    return s if len(s) <= n else "..." + s[-(n - 3):]


def _engine_result() -> dict:
    return {"compiled": False, "reason": None, "compile_s": None, "valid_accepted": 0, "invalid_rejected": 0,
            "invalid_accepted": 0, "unchecked": 0}


def _prefix_points(n: int, k: int = 24) -> list[int]:
    if n <= k:
        return list(range(n + 1))
    return sorted({round(i * n / k) for i in range(k + 1)})


class _Checker:
    """Runs the stages of one case and collects results, bug reports and rejection examples."""

    def __init__(self, eng: Engines, case: Case, compile_limit: float | None, check_limit: float | None,
                 report=lambda stage: None):
        self.eng, self.case = eng, case
        self.compile_limit, self.check_limit = compile_limit, check_limit
        self.report = report
        self.bugs: list[dict] = []
        self.rejects: list[dict] = []
        self._tokens: dict[str, list[int]] = {}
        self._texts = [serialisations(t["data"], case.schema) for t in case.tests]

    def ids(self, text: str) -> list[int]:
        hit = self._tokens.get(text)
        if hit is None:
            hit = self._tokens[text] = self.eng.encode(text)
        return hit

    def bug(self, kind: str, detail: str, text: str | None = None) -> None:
        self.bugs.append({"case": self.case.id, "kind": kind, "detail": _short(detail, 600),
                          "text": None if text is None else _short(text, 600)})

    # -- structgen -----------------------------------------------------------------------------------
    def structgen(self) -> dict:
        import structgen as sg
        from structgen.constraints import clear_cache
        from structgen.validators import run_validators, validators_for

        res = {**_engine_result(), "engine": None, "lenient": False, "constraint_invalid_accepted": 0,
               "validator_rejects_valid": 0, "format_asserted": 0, "validator_accepts_invalid": 0}
        self.report("sg-compile")
        t0 = time.perf_counter()
        try:
            spec = sg.JsonSchema(self.case.schema)
            c = sg.compile(spec, self.eng.tok)
            res["compile_s"] = time.perf_counter() - t0
            validators = validators_for(spec)
        except sg.StructgenError as e:
            res["compile_s"] = time.perf_counter() - t0
            res["reason"] = f"{type(e).__name__}: {_short(e)}"
            return res
        except Exception as e:  # not part of the error hierarchy: a bug
            res["compile_s"] = time.perf_counter() - t0
            res["reason"] = f"BUG {type(e).__name__}: {_short(e)}"
            self.bug("compile-exception", f"{type(e).__name__}: {e}\n{_tail(traceback.format_exc(), 500)}",
                     json.dumps(self.case.schema)[:600])
            return res
        finally:
            clear_cache()
        res["engine"] = c.engine
        res["lenient"] = bool(getattr(c, "lenient", False))
        if self.compile_limit is not None and res["compile_s"] > self.compile_limit:
            res["reason"] = f"compile took {res['compile_s']:.1f} s (limit {self.compile_limit:.0f} s)"
            return res
        res["compiled"] = True
        self.report("sg-check")
        try:
            min_tokens = c.min_tokens()
        except Exception as e:
            min_tokens = None
            self.bug("min_tokens-exception", f"{type(e).__name__}: {e}")
        t0 = time.perf_counter()
        prefix_checked = {"acc": False, "rej": False}
        for test, texts in zip(self.case.tests, self._texts):
            if self.check_limit is not None and time.perf_counter() - t0 > self.check_limit:
                res["unchecked"] += 1
                continue
            valid = bool(test["valid"])
            try:
                issues = run_validators(validators, texts[0])
            except Exception as e:
                self.bug("validator-exception", f"{type(e).__name__}: {e}", texts[0])
                issues = [e]
            if valid and issues:
                kind = self._why_rejected(test["data"])
                res["format_asserted" if kind == "format-asserted" else "validator_rejects_valid"] += 1
                self.bug(kind, "; ".join(map(str, issues))[:600], texts[0])
            if not valid and not issues:
                res["validator_accepts_invalid"] += 1
            accepted_text = None
            for text in texts:
                ids = self.ids(text)
                try:
                    ok = c.accepts(ids)
                except Exception as e:
                    self.bug("accepts-exception", f"{type(e).__name__}: {e}", text)
                    ok = False
                if ok:
                    accepted_text = text
                    if min_tokens is not None and min_tokens > len(ids):
                        self.bug("min_tokens-too-large", f"min_tokens()={min_tokens} but an accepted output has "
                                 f"{len(ids)} tokens", text)
                    if not prefix_checked["acc"]:
                        prefix_checked["acc"] = True
                        self._check_prefixes(c, ids, text, accepted=True)
                    break
            if accepted_text is None and not prefix_checked["rej"]:
                prefix_checked["rej"] = True
                self._check_prefixes(c, self.ids(texts[0]), texts[0], accepted=False)
            if not valid and accepted_text is not None:
                res["constraint_invalid_accepted"] += 1
            sg_ok = accepted_text is not None and not issues
            if valid and sg_ok:
                res["valid_accepted"] += 1
            elif valid and accepted_text is None and not self.rejects:
                self.rejects.append({"case": self.case.id, "engine": c.engine, "text": _short(texts[0], 300)})
            if not valid:
                if sg_ok:
                    res["invalid_accepted"] += 1
                    self.bug("invalid-accepted", "constraint and validators both accept an invalid instance: "
                             + _short(test.get("description", ""), 200), accepted_text)
                else:
                    res["invalid_rejected"] += 1
        return res

    def _why_rejected(self, data: Any) -> str:
        """Classify a valid-labelled instance that structgen's validators reject, against plain jsonschema.

        ``format-asserted``: valid without format assertion (structgen asserts formats by design; draft 2020-12
        makes ``format`` an annotation); ``label-disagrees``: jsonschema rejects it too; otherwise a validator
        bug (``validator-rejects-valid``)."""
        from jsonschema import Draft202012Validator
        from referencing import Registry

        try:
            schema = self.case.schema
            if Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER,
                                    registry=Registry()).is_valid(data):
                return "validator-rejects-valid"
            if Draft202012Validator(schema, registry=Registry()).is_valid(data):
                return "format-asserted"
            return "label-disagrees"
        except Exception:
            return "validator-rejects-valid"

    def _check_prefixes(self, c, ids: list[int], text: str, accepted: bool) -> None:
        """Prefixes of an accepted output are live; for any output, liveness never comes back once lost."""
        try:
            answers = [(k, c.accepts_prefix(ids[:k])) for k in _prefix_points(len(ids))]
        except Exception as e:
            self.bug("accepts_prefix-exception", f"{type(e).__name__}: {e}", text)
            return
        if accepted:
            bad = [k for k, a in answers if not a]
            if bad:
                self.bug("prefix-of-accepted-rejected", f"accepts() is True but accepts_prefix() is False for "
                         f"the first {bad[0]} of {len(ids)} tokens", text)
        else:
            lost = False
            for k, a in answers:
                if lost and a:
                    self.bug("prefix-not-monotone", f"accepts_prefix() is False for a shorter prefix but True "
                             f"for the first {k} of {len(ids)} tokens", text)
                    break
                lost = lost or not a

    # -- llguidance ----------------------------------------------------------------------------------
    def llguidance(self) -> dict:
        import llguidance

        M = llguidance.LLMatcher
        res = _engine_result()
        self.report("ll-compile")
        t0 = time.perf_counter()
        try:
            grammar = M.grammar_from_json_schema(json.dumps(self.case.schema), overrides=dict(LL_OPTIONS))
            root = M(self.eng.lltok, grammar, log_level=0)
            res["compile_s"] = time.perf_counter() - t0
        except Exception as e:  # ValueError when the schema is not a JSON object
            res["compile_s"] = time.perf_counter() - t0
            res["reason"] = f"{type(e).__name__}: {_short(e)}"
            return res
        is_err, msgs = M.validate_grammar_with_warnings(grammar, self.eng.lltok)
        if is_err or root.is_error():
            res["reason"] = _short((msgs[0] if msgs else root.get_error()).split("\n<state>")[0])
            return res
        if self.compile_limit is not None and res["compile_s"] > self.compile_limit:
            res["reason"] = f"compile took {res['compile_s']:.1f} s (limit {self.compile_limit:.0f} s)"
            return res
        res["compiled"] = True
        self.report("ll-check")
        t0 = time.perf_counter()
        for test, texts in zip(self.case.tests, self._texts):
            if self.check_limit is not None and time.perf_counter() - t0 > self.check_limit:
                res["unchecked"] += 1
                continue
            ok = False
            for text in texts:
                ids = self.ids(text)
                m = root.deep_copy()
                if m.validate_tokens(ids) == len(ids) and m.consume_tokens(ids) and m.is_accepting():
                    ok = True
                    break
            if test["valid"]:
                res["valid_accepted"] += ok
            elif ok:
                res["invalid_accepted"] += 1
            else:
                res["invalid_rejected"] += 1
        return res


def check_case(eng: Engines, case: Case, *, stages: Iterable[str] = STAGES, compile_limit: float | None = 30.0,
               check_limit: float | None = 30.0, report=lambda stage: None) -> dict:
    """All figures for one schema: ``{"id", "source", "n_valid", "n_invalid", "sg", "ll", "bugs", ...}``."""
    ch = _Checker(eng, case, compile_limit, check_limit, report)
    out = {"id": case.id, "source": case.source, "n_valid": case.n_valid, "n_invalid": case.n_invalid}
    stages = set(stages)
    if "sg" in stages:
        out["sg"] = ch.structgen()
    if "ll" in stages:
        out["ll"] = ch.llguidance()
    out["bugs"], out["rejects"] = ch.bugs, ch.rejects
    return out


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


# ------------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------------

COUNT_KEYS = ("schemas", "valid", "invalid", "sg_compiled", "sg_automaton", "sg_grammar", "sg_lenient",
              "sg_valid_accepted", "sg_invalid_rejected", "sg_invalid_accepted", "sg_constraint_invalid_accepted",
              "sg_unchecked", "sg_format_asserted", "ll_compiled", "ll_valid_accepted", "ll_invalid_rejected",
              "ll_invalid_accepted",
              "ll_unchecked")


def summarise(results: Sequence[dict]) -> dict:
    """Counts per source and in total: ``{"sources": {name: counts}, "total": counts}``."""
    groups: dict[str, dict] = {}
    for r in results:
        for name in (r["source"], "total"):
            g = groups.setdefault(name, dict.fromkeys(COUNT_KEYS, 0))
            g["schemas"] += 1
            g["valid"] += r["n_valid"]
            g["invalid"] += r["n_invalid"]
            for e in STAGES:
                er = r.get(e)
                if not er:
                    continue
                g[f"{e}_compiled"] += bool(er["compiled"])
                for k in ("valid_accepted", "invalid_rejected", "invalid_accepted", "unchecked"):
                    g[f"{e}_{k}"] += er[k]
            sg = r.get("sg") or {}
            if sg.get("compiled"):
                g["sg_automaton"] += sg.get("engine") == "automaton"
                g["sg_grammar"] += sg.get("engine") == "grammar"
                g["sg_lenient"] += bool(sg.get("lenient"))
                g["sg_constraint_invalid_accepted"] += sg.get("constraint_invalid_accepted", 0)
                g["sg_format_asserted"] += sg.get("format_asserted", 0)
    total = groups.pop("total", dict.fromkeys(COUNT_KEYS, 0))
    return {"sources": dict(sorted(groups.items(), key=lambda kv: (kv[0] == "JSON-Schema-Test-Suite", kv[0]))),
            "total": total}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return math.nan
    k = min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))
    return xs[k]


def timing(results: Sequence[dict], source_prefix: str = "maskbench/") -> dict:
    """Median and p95 compile time (ms) per engine over the schemas whose id starts with ``source_prefix``."""
    out = {}
    for e in STAGES:
        xs = [r[e]["compile_s"] * 1e3 for r in results
              if r["id"].startswith(source_prefix) and r.get(e) and r[e].get("compile_s") is not None]
        out[e] = {"n": len(xs), "median_ms": statistics.median(xs) if xs else math.nan, "p95_ms": _pct(xs, 0.95),
                  "max_ms": max(xs) if xs else math.nan}
    return out


def slow_schemas(results: Sequence[dict], threshold_s: float = 5.0) -> list[dict]:
    out = []
    for r in results:
        for e in STAGES:
            er = r.get(e) or {}
            if er.get("compile_s") is not None and er["compile_s"] > threshold_s:
                out.append({"case": r["id"], "engine": e if e == "ll" else f"sg/{er.get('engine')}",
                            "compile_s": round(er["compile_s"], 2), "compiled": er["compiled"]})
    return sorted(out, key=lambda x: -x["compile_s"])


def print_report(results: Sequence[dict], summary: dict, times: dict, wall_s: float, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=max(Console().width, 132))
    t = Table(title=f"Conformance on {summary['total']['schemas']} schemas ({wall_s:.0f} s): structgen (constraint + "
                    "validators) | llguidance (strict)")
    for col in ("source", "schemas", "compiled sg", "automaton", "grammar", "compiled ll", "valid accepted sg | ll",
                "invalid rejected sg | ll", "invalid accepted sg | ll"):
        t.add_column(col, justify="left" if col == "source" else "right")

    def row(name: str, g: dict, style: str | None = None) -> None:
        t.add_row(name, str(g["schemas"]), str(g["sg_compiled"]), str(g["sg_automaton"]), str(g["sg_grammar"]),
                  str(g["ll_compiled"]), f"{g['sg_valid_accepted']} | {g['ll_valid_accepted']} of {g['valid']}",
                  f"{g['sg_invalid_rejected']} | {g['ll_invalid_rejected']} of {g['invalid']}",
                  f"{g['sg_invalid_accepted']} | {g['ll_invalid_accepted']}", style=style)

    mb = dict.fromkeys(COUNT_KEYS, 0)
    for name, g in summary["sources"].items():
        row(name, g)
        if name != "JSON-Schema-Test-Suite":
            for k in COUNT_KEYS:
                mb[k] += g[k]
    t.add_section()
    if mb["schemas"] and mb["schemas"] != summary["total"]["schemas"]:
        row("maskbench (all)", mb, "bold")
    row("total", summary["total"], "bold")
    console.print(t)
    tot = summary["total"]
    console.print(f"structgen: {tot['sg_lenient']} grammar-engine schemas compiled leniently (validators enforce "
                  f"the rest); the constraint alone accepts {tot['sg_constraint_invalid_accepted']} invalid "
                  f"instances, the validators let {tot['sg_invalid_accepted']} of them through. "
                  f"{tot['sg_format_asserted']} valid-labelled instances are rejected only because structgen asserts "
                  f"string formats (draft 2020-12 leaves format an annotation). "
                  f"Unchecked (time guard): sg {tot['sg_unchecked']}, "
                  f"ll {tot['ll_unchecked']}.")
    for e, name in (("sg", "structgen"), ("ll", "llguidance")):
        x = times[e]
        console.print(f"compile time per maskbench schema, {name}: median {x['median_ms']:.1f} ms, "
                      f"p95 {x['p95_ms']:.1f} ms, max {x['max_ms']:.0f} ms (n={x['n']})")


def _brief(er: dict) -> dict:
    out = {k: er[k] for k in ("compiled", "engine", "reason", "valid_accepted", "invalid_rejected",
                              "invalid_accepted") if k in er}
    out["compile_s"] = None if er.get("compile_s") is None else round(er["compile_s"], 5)
    return out


def figures(results: Sequence[dict], cfg: RunConfig, wall_s: float) -> dict:
    """Everything ``--json`` writes."""
    summary = summarise(results)
    found = [b for r in results for b in r.get("bugs", [])]
    counts: dict[str, int] = {}
    bugs = []
    for b in found:
        counts[b["kind"]] = counts.get(b["kind"], 0) + 1
        if counts[b["kind"]] <= MAX_BUG_EXAMPLES:
            bugs.append(b)
    reasons: dict[str, dict[str, int]] = {"sg": {}, "ll": {}}
    for r in results:
        for e in STAGES:
            er = r.get(e) or {}
            if not er.get("compiled") and er.get("reason"):
                key = er["reason"].split(":")[0][:80] if e == "sg" else er["reason"][:80]
                reasons[e][key] = reasons[e].get(key, 0) + 1
    return {
        "config": {"vocab": cfg.vocab, "workers": cfg.workers, "mem_gb": cfg.mem_gb,
                   "compile_limit_s": cfg.compile_limit, "check_limit_s": cfg.check_limit, **cfg.extra},
        "wall_s": round(wall_s, 1),
        "total": summary["total"],
        "sources": summary["sources"],
        "compile_time": timing(results),
        "slow": slow_schemas(results),
        "not_compiled_reasons": {e: dict(sorted(v.items(), key=lambda kv: -kv[1])[:40]) for e, v in reasons.items()},
        "finding_counts": counts,
        "bugs": bugs,
        "valid_rejected_examples": [x for r in results for x in r.get("rejects", [])][:MAX_REJECT_EXAMPLES],
        "schemas": [{"id": r["id"], **{e: _brief(r[e]) for e in STAGES if r.get(e)}} for r in results],
    }


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
