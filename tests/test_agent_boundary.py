"""The commit boundary's state machine and the executor gate: only a released call can run."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from structgen.agent import (AuditLog, BoundaryError, CallState, Decision, Executor, ReleasedCall, ToolCall,
                             load_tools)
from structgen.agent.boundary import TRANSITIONS, Boundary
from structgen.errors import ApprovalError, ApprovalExpiredError, ApprovalNotFoundError

ROOT = Path(__file__).resolve().parent.parent
TOOLS = load_tools(ROOT / "examples" / "tools.py")
S = CallState
RAW = {"name": "delete_file", "arguments": {"path": "/tmp/x"}}
ALLOW, ASK, DENY = (Decision(a, "test", a) for a in ("allow", "ask", "deny"))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _to_decided(b: Boundary, decision: Decision = ALLOW, raw=RAW):
    rec = b.draft("req", raw)
    b.advance(rec, S.FINAL)
    rec.call = ToolCall.parse(raw, TOOLS)
    b.advance(rec, S.VALIDATED)
    rec.decision = decision
    b.advance(rec, S.DECIDED)
    return rec


def _released(b: Boundary, raw=RAW):
    return b.advance(_to_decided(b, ALLOW, raw), S.RELEASED)


class Spy:
    """A tool implementation that counts its calls."""

    def __init__(self, result=None, sleep=0.0, error=None):
        self.calls, self.result, self.sleep, self.error = [], result, sleep, error

    def __call__(self, **kw):
        self.calls.append(kw)
        if self.sleep:
            time.sleep(self.sleep)
        if self.error:
            raise self.error
        return self.result


# -- the state machine ------------------------------------------------------------------------------------
def test_transition_table_is_the_documented_one():
    assert TRANSITIONS[S.DRAFT] == {S.FINAL, S.CANCELLED}
    assert TRANSITIONS[S.FINAL] == {S.VALIDATED, S.INVALID, S.CANCELLED}
    assert TRANSITIONS[S.DECIDED] == {S.RELEASED, S.PARKED, S.DENIED, S.CANCELLED}
    assert TRANSITIONS[S.PARKED] == {S.RELEASED, S.REJECTED, S.EXPIRED}
    assert TRANSITIONS[S.RELEASED] == {S.EXECUTED, S.FAILED}
    terminal = {S.INVALID, S.DENIED, S.REJECTED, S.EXPIRED, S.EXECUTED, S.FAILED, S.CANCELLED}
    assert all(not TRANSITIONS.get(s) for s in terminal)
    assert set(TRANSITIONS) | terminal == set(S)


@pytest.mark.parametrize("start", list(S))
def test_every_illegal_transition_raises(start):
    """From each state, every target outside the table raises and leaves the record unchanged."""
    for to in S:
        if to in TRANSITIONS.get(start, ()):
            continue
        b = Boundary()
        rec = b.draft("req", RAW)
        rec.state = start
        with pytest.raises(BoundaryError, match="illegal transition"):
            b.advance(rec, to)
        assert rec.state is start and rec.released is None


def test_happy_path_history_and_audit(tmp_path):
    audit = AuditLog(tmp_path / "a.db")
    seen = []
    b = Boundary(audit, listener=lambda kind, rec, data: seen.append(kind))
    rel = _released(b)
    assert isinstance(rel, ReleasedCall) and rel.id.startswith("call_") and rel.arguments == RAW["arguments"]
    rec = b.record(rel.id)
    assert [h[0] for h in rec.history] == ["draft", "final", "validated", "decided", "released"]
    assert seen == ["final", "validated", "decided", "released"]
    assert [e["kind"] for e in audit.events("req")] == seen
    assert rel.openai()["id"] == rel.id


def test_preconditions():
    b = Boundary()
    rec = b.draft("req", RAW)
    b.advance(rec, S.FINAL)
    with pytest.raises(BoundaryError, match="without a checked ToolCall"):
        b.advance(rec, S.VALIDATED)
    rec.call = ToolCall.parse(RAW, TOOLS)
    b.advance(rec, S.VALIDATED)
    with pytest.raises(BoundaryError, match="without a policy decision"):
        b.advance(rec, S.DECIDED)
    for decision, wrong in ((DENY, S.RELEASED), (ASK, S.RELEASED), (ALLOW, S.DENIED), (DENY, S.PARKED)):
        r = _to_decided(b, decision)
        with pytest.raises(BoundaryError, match="cannot become"):
            b.advance(r, wrong)
    with pytest.raises(BoundaryError, match="approval id"):
        b.advance(_to_decided(b, ASK), S.PARKED)


def test_audit_failure_blocks_the_transition(tmp_path):
    audit = AuditLog(tmp_path / "a.db")
    b = Boundary(audit)
    rec = _to_decided(b)
    audit.close()  # every write now fails
    with pytest.raises(sqlite3.ProgrammingError):
        b.advance(rec, S.RELEASED)
    assert rec.state is S.DECIDED and rec.released is None


# -- only released calls execute --------------------------------------------------------------------------
def test_released_call_cannot_be_built_by_hand():
    with pytest.raises(BoundaryError, match="only by the commit boundary"):
        ReleasedCall("delete_file", {"path": "/etc/passwd"})
    with pytest.raises(BoundaryError):
        ReleasedCall.parse(RAW, TOOLS)


def test_executor_refuses_everything_but_a_released_call():
    spy = Spy()
    ex = Executor({"delete_file": spy})
    b = Boundary()
    draft = b.draft("req", RAW)
    final = b.draft("req", RAW)
    b.advance(final, S.FINAL)
    denied = _to_decided(b, DENY)
    b.advance(denied, S.DENIED)
    parked = _to_decided(b, ASK)
    b.park(parked, 60)
    for obj in (RAW, ToolCall.parse(RAW, TOOLS), draft, final, denied, parked, parked.call, "delete_file"):
        with pytest.raises(BoundaryError, match="only a ReleasedCall"):
            ex.run(obj)
    rel = _released(b)
    forged = dataclasses.replace(rel, arguments={"path": "/etc/passwd"})  # copies the mint token
    with pytest.raises(BoundaryError, match="not the one the boundary released"):
        ex.run(forged)
    rel.arguments["path"] = "/etc/passwd"  # mutated after the decision
    with pytest.raises(BoundaryError, match="arguments changed"):
        ex.run(rel)
    rel.arguments["path"] = "/tmp/x"
    assert spy.calls == []
    out = ex.run(rel)
    assert out.ok and spy.calls == [{"path": "/tmp/x"}] and b.record(rel.id).state is S.EXECUTED
    with pytest.raises(BoundaryError, match="only a released call that has not run yet"):
        ex.run(rel)
    assert len(spy.calls) == 1


def test_a_released_call_runs_once_under_concurrency():
    spy = Spy(sleep=0.05)
    ex = Executor({"delete_file": spy})
    rel = _released(Boundary())
    errors = []

    def go():
        try:
            ex.run(rel)
        except BoundaryError as e:
            errors.append(e)

    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(spy.calls) == 1 and len(errors) == 5


def test_another_boundarys_call_is_refused():
    rel = _released(Boundary())
    other = Boundary()
    with pytest.raises(BoundaryError, match="not released by this runtime's boundary"):
        other.claim(rel)


def test_executor_outcomes(tmp_path):
    audit = AuditLog(tmp_path / "a.db")
    b = Boundary(audit)
    raw = {"name": "create_event", "arguments": {"title": "Sync", "date": "2025-03-04", "start_time": "09:30"}}
    seen = {}

    def create_event(**kw):
        seen.update(kw)
        return {"when": kw["date"]}

    ok = Executor({"create_event": create_event}).run(_released(b, raw))
    assert ok.ok and ok.result == {"when": "2025-03-04"} and seen["duration_minutes"] == 30
    import datetime

    assert isinstance(seen["date"], datetime.date)  # typed by the tool's model, defaults filled in
    boom = Executor({"create_event": Spy(error=RuntimeError("calendar down"))}).run(_released(b, raw))
    assert not boom.ok and boom.error == "RuntimeError: calendar down"
    slow = Executor({"create_event": Spy(sleep=2)}, timeout_s=0.1).run(_released(b, raw))
    assert not slow.ok and slow.timed_out and slow.duration_s < 1.5
    missing = Executor({}).run(_released(b, raw))
    assert not missing.ok and "no implementation" in missing.error
    states = {e["call_id"]: e["kind"] for e in audit.events() if e["kind"] in ("executed", "failed")}
    assert sorted(states.values()) == ["executed", "failed", "failed", "failed"]
    row = next(e for e in audit.events(kind="failed") if e["data"]["timed_out"])
    assert row["data"]["error"].startswith("timed out")


# -- approvals at the boundary ----------------------------------------------------------------------------
def test_parking_approval_and_expiry():
    clock = Clock()
    b = Boundary(clock=clock)
    rec = _to_decided(b, ASK)
    aid = b.park(rec, 30)
    assert b.pending() == [rec] and b.parked(aid) is rec
    clock.now += 31
    with pytest.raises(ApprovalExpiredError):
        b.parked(aid)
    assert rec.state is S.EXPIRED and b.pending() == []
    with pytest.raises(ApprovalExpiredError):
        b.parked(aid)
    with pytest.raises(BoundaryError):
        b.advance(rec, S.RELEASED)
    with pytest.raises(ApprovalNotFoundError, match="unknown approval id"):
        b.parked("appr_nope")
    rec2 = _to_decided(b, ASK)
    aid2 = b.park(rec2, 30)
    b.advance(rec2, S.REJECTED)
    with pytest.raises(ApprovalError, match=r"already decided \(rejected\)") as e:
        b.parked(aid2)
    assert not isinstance(e.value, ApprovalNotFoundError)
    assert rec2.call_id not in b._records  # an ended approval's record is dropped; its outcome is remembered


def test_release_after_expiry_is_refused_even_without_a_sweep():
    clock = Clock()
    b = Boundary(clock=clock)
    rec = _to_decided(b, ASK)
    b.park(rec, 5)
    clock.now += 5
    with pytest.raises(BoundaryError, match="expired"):
        b.advance(rec, S.RELEASED)
    assert rec.state is S.PARKED and rec.released is None
