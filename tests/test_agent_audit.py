"""The audit log: SQLite in WAL mode, one transaction per event, append-only, durable across a killed
process."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from structgen.agent import AuditLog
from structgen.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_wal_schema_and_reading_back(tmp_path):
    log = AuditLog(tmp_path / "sub" / "audit.db")
    s1 = log.append("request", "r1", None, {"tools": ["a"]})
    s2 = log.append("decided", "r1", "call_1", {"action": "deny", "nested": {"x": [1, 2]}})
    s3 = log.append("request", "r2")
    assert s1 < s2 < s3
    rows = log.events("r1")
    assert [(r["kind"], r["call_id"]) for r in rows] == [("request", None), ("decided", "call_1")]
    assert rows[1]["data"] == {"action": "deny", "nested": {"x": [1, 2]}} and rows[0]["ts"] > 0
    assert [r["request_id"] for r in log.events()] == ["r1", "r1", "r2"]
    assert [r["seq"] for r in log.events(kind="request")] == [s1, s3] and log.events(after=s2)[0]["seq"] == s3
    con = sqlite3.connect(tmp_path / "sub" / "audit.db")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_rows_cannot_be_changed_or_deleted(tmp_path):
    path = tmp_path / "audit.db"
    log = AuditLog(path)
    log.append("decided", "r1", "c1", {"action": "deny"})
    con = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("UPDATE events SET data = '{\"action\": \"allow\"}'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute("DELETE FROM events")
    con.close()
    assert log.events()[0]["data"] == {"action": "deny"}


def test_large_and_odd_payloads(tmp_path):
    log = AuditLog(tmp_path / "a.db")
    log.append("final", "r", None, {"text": "x" * 100_000})
    log.append("executed", "r", "c", {"result": {1, 2}})  # not JSON: kept as text
    rows = log.events()
    assert rows[0]["data"]["truncated"] is True and len(rows[0]["data"]["head"]) < 70_000
    assert rows[1]["data"]["result"] in ("{1, 2}", "{2, 1}")


def test_concurrent_writers_lose_nothing(tmp_path):
    log = AuditLog(tmp_path / "a.db", synchronous="NORMAL")
    other = AuditLog(tmp_path / "a.db", synchronous="NORMAL")  # a second connection to the same file

    def write(lg, tag):
        for i in range(50):
            lg.append("draft", tag, None, {"i": i})

    threads = [threading.Thread(target=write, args=(lg, f"r{k}")) for k, lg in enumerate([log, log, other, other])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = log.events()
    assert len(rows) == 200 and len({r["seq"] for r in rows}) == 200
    for k in range(4):
        assert [r["data"]["i"] for r in log.events(f"r{k}")] == list(range(50))


def test_a_killed_process_leaves_every_reported_event(tmp_path):
    """A child appends events, prints each seq once append() returned, then dies with os._exit (no close,
    no flush, no atexit). Every reported event must be readable afterwards."""
    path = tmp_path / "audit.db"
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from structgen.agent.audit import AuditLog
        log = AuditLog({str(path)!r})
        for i in range(40):
            seq = log.append("executed" if i % 2 else "decided", "req-%d" % (i % 3), "call-%d" % i, {{"i": i}})
            print(seq, flush=True)
        os._exit(9)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    reported = [int(x) for x in proc.stdout.split()]
    assert len(reported) == 40
    assert (tmp_path / "audit.db-wal").exists()  # the rows live in the WAL: no checkpoint happened
    rows = AuditLog(path).events()
    assert [r["seq"] for r in rows] == reported
    assert [r["data"]["i"] for r in rows] == list(range(40))


def test_bad_settings(tmp_path):
    with pytest.raises(ConfigError, match="synchronous"):
        AuditLog(tmp_path / "a.db", synchronous="SOMETIMES")
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(ConfigError, match="cannot open the audit log"):
        AuditLog(tmp_path / "dir.db")
