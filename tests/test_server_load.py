"""The load test, run tiny: ``structgen serve`` in a child process, 4 concurrent clients x 3 requests from
the test process over loopback. Asserts what must hold under load (no 5xx, every completed request
audited, the server still up), never a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parent.parent


def test_tiny_load_run_has_no_5xx_and_every_request_audited(tmp_path):
    out = tmp_path / "load.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "load_test.py"), "--clients", "4",
                           "--requests", "3", "--max-tokens", "64", "--json", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    assert figures["sent"] == 12 and figures["completed"] == 12, figures["errors"]
    assert figures["status_5xx"] == 0 and figures["connection_errors"] == 0
    assert figures["audit_missing"] == 0 and figures["server_alive"]
    assert figures["batching"]["sequences"] >= figures["batching"]["batches"] > 0
    assert "req/s" in proc.stdout and "p95" in proc.stdout
