"""Conformance regression test: benchmarks/conformance.py on a fixed subset of ../shared/data.

The subset (``SUBSET`` in the benchmark: every 10th MaskBench file in name order plus every case of a few
JSON-Schema-Test-Suite files, minus the schemas that were slow to compile in the recorded full run) goes
through the same isolated runner and limits as the benchmark. structgen must accept no invalid instance, and
compile, accept and reject at least as many schemas and instances as ``benchmarks/conformance_baseline.json``
records (``python benchmarks/conformance.py --record-baseline`` re-records both figures).

The full run is marked ``slow`` and runs only with ``STRUCTGEN_SLOW=1``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "conformance.py"
BASELINE = ROOT / "benchmarks" / "conformance_baseline.json"
#: counts that may only go up (structgen's); llguidance's are reported, not asserted
MONOTONE = ("sg_compiled", "sg_valid_accepted", "sg_invalid_rejected")


def load_bench():
    """benchmarks/conformance.py as the module ``conformance`` (its workers re-import it by that name)."""
    mod = sys.modules.get("conformance")
    if mod is not None and Path(getattr(mod, "__file__", "")).resolve() == BENCH:
        return mod
    spec = importlib.util.spec_from_file_location("conformance", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["conformance"] = mod
    spec.loader.exec_module(mod)
    return mod


def baseline() -> dict:
    return json.loads(BASELINE.read_text())


def _run(data_dir: Path, part: dict) -> tuple[list[dict], dict]:
    bench = load_bench()
    cfg = bench.RunConfig(vocab=baseline()["vocab"], progress=False)
    return bench.run(data_dir, cfg, **part["select"])


def _check(results: list[dict], figs: dict, expected: dict) -> None:
    total = figs["total"]
    bad = [b for b in figs["bugs"] if b["kind"] == "invalid-accepted"]
    assert total["sg_invalid_accepted"] == 0, f"structgen accepted invalid instances: {bad[:5]}"
    assert total["schemas"] == expected["schemas"], "the subset changed; re-record the baseline"
    drops = {k: (total[k], expected[k]) for k in MONOTONE if total[k] < expected[k]}
    assert not drops, f"conformance regressed (now, recorded): {drops}"


def test_serialisations():
    bench = load_bench()
    schema = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}}
    texts = bench.serialisations({"a": "é", "b": 1}, schema)
    assert texts[0] == json.dumps({"a": "é", "b": 1})
    assert '{"b": 1, "a": "\\u00e9"}' in texts and '{"b":1,"a":"é"}' in texts
    assert len(texts) == len(set(texts))
    assert bench.maskbench_source("Github_easy---o1.json") == "Github_easy"
    assert bench.maskbench_source("BFCL_simple_4.json") == "BFCL"


@pytest.mark.timeout(900)
def test_conformance_subset(data_dir: Path):
    part = baseline()["subset"]
    results, figs = _run(data_dir, part)
    _check(results, figs, part["total"])


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("STRUCTGEN_SLOW") != "1", reason="full conformance run: set STRUCTGEN_SLOW=1")
@pytest.mark.timeout(3600)
def test_conformance_full(data_dir: Path):
    part = baseline()["full"]
    results, figs = _run(data_dir, part)
    _check(results, figs, part["total"])
