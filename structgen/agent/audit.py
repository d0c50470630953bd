"""``AuditLog``: the append-only record of every agent turn, in SQLite.

One table, one row per event, one transaction per row (committed before the event is reported), WAL
journal (readers in other processes see every committed row while the server writes), ``synchronous=FULL``
by default so even a power cut keeps what was committed; a killed process loses nothing it reported.
Triggers refuse ``UPDATE`` and ``DELETE``: rows are never changed, only appended.

Schema::

    CREATE TABLE events (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,  -- order of appends
        ts         REAL NOT NULL,                      -- Unix time (seconds)
        request_id TEXT NOT NULL,                      -- the turn
        call_id    TEXT,                               -- the call, for call events; NULL for turn events
        kind       TEXT NOT NULL,                      -- see below
        data       TEXT NOT NULL                       -- a JSON object
    )

Turn events: ``request`` (tools, tool_choice, sizes), ``draft`` (one per sampler step: ``step``, ``kind``,
``nfe`` and the counts of ``masked``, ``forced`` and ``committed`` cells — never the whole canvas),
``final`` (the decoded text), ``cancelled``, ``completed`` (finish reason and the call ids by outcome).
Call events carry the state the call entered: ``final``, ``validated`` / ``invalid`` (with the errors),
``decided`` (action, rule, reason), ``released`` / ``parked`` (approval id, expiry) / ``denied``,
``rejected`` / ``expired`` (approvals), ``executed`` / ``failed`` (result or error, duration), ``cancelled``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["AuditLog"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    ts         REAL NOT NULL,
    request_id TEXT NOT NULL,
    call_id    TEXT,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_request ON events (request_id, seq);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: rows cannot be updated'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: rows cannot be deleted'); END;
"""
_SYNC = ("OFF", "NORMAL", "FULL", "EXTRA")
MAX_DATA_CHARS = 65_536  # a larger event payload is cut (``"truncated": true``)


class AuditLog:
    """An append-only event log in the SQLite file ``path`` (created with its folder if missing).

    ``append(kind, request_id, call_id=None, data=None)`` writes one row in its own transaction and returns
    its ``seq``; ``events(request_id=None, kind=None)`` reads rows back as dicts. Thread-safe; several
    processes may write the same file (SQLite serialises them)."""

    def __init__(self, path: str | Path, *, synchronous: str = "FULL", timeout_s: float = 30.0):
        if synchronous.upper() not in _SYNC:
            raise ConfigError(f"synchronous must be one of {', '.join(_SYNC)}, got {synchronous!r}")
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            self._conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error as e:
            raise ConfigError(f"cannot open the audit log {self.path}: {e}; pass a writable file path") from None
        if str(mode).lower() != "wal":
            raise ConfigError(f"the audit log {self.path} cannot use WAL (journal mode {mode}); put it on a local "
                              "file system")
        self._lock = threading.Lock()

    def append(self, kind: str, request_id: str, call_id: str | None = None, data: dict | None = None) -> int:
        """Append one event in its own transaction; returns its ``seq`` once it is committed."""
        text = json.dumps(data or {}, ensure_ascii=False, default=str, separators=(",", ":"))
        if len(text) > MAX_DATA_CHARS:
            text = json.dumps({"truncated": True, "head": text[: MAX_DATA_CHARS - 200]}, ensure_ascii=False)
        with self._lock:
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
                cur.execute("INSERT INTO events (ts, request_id, call_id, kind, data) VALUES (?, ?, ?, ?, ?)",
                            (time.time(), str(request_id), call_id, kind, text))
                seq = cur.lastrowid
                cur.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    cur.execute("ROLLBACK")
                raise
        return int(seq)

    def events(self, request_id: str | None = None, *, kind: str | None = None, after: int = 0) -> list[dict]:
        """Rows as ``{"seq", "ts", "request_id", "call_id", "kind", "data"}`` (``data`` parsed), in order;
        filtered by request, kind, and ``seq > after``."""
        sql = "SELECT seq, ts, request_id, call_id, kind, data FROM events WHERE seq > ?"
        args: list[Any] = [after]
        if request_id is not None:
            sql += " AND request_id = ?"
            args.append(request_id)
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY seq", args).fetchall()
        return [{"seq": r[0], "ts": r[1], "request_id": r[2], "call_id": r[3], "kind": r[4],
                 "data": json.loads(r[5])} for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AuditLog({str(self.path)!r})"
