"""AgentRuntime.run_turn end to end with random logits through the real constraint and a real SQLite log:
shapes, draft events, the audit trail, execution, approvals and cancellation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, field_validator

import structgen as sg
from structgen.agent import (AgentRuntime, ApprovalError, ApprovalExpiredError, AuditLog, CallState, Executor,
                             Policy, ReleasedCall, TurnCancelled, load_tools)

ROOT = Path(__file__).resolve().parent.parent
TOOLS = load_tools(ROOT / "examples" / "tools.py")
BY = {t.name: t for t in TOOLS}
pytestmark = pytest.mark.usefixtures("one_torch_thread")
USER = [{"role": "user", "content": "Please help."}]


class Clock:
    def __init__(self):
        self.now = 5000.0

    def __call__(self):
        return self.now


class Spy:
    def __init__(self):
        self.calls = []

    def __call__(self, **kw):
        self.calls.append(kw)
        return {"ok": True}


def runtime(tok, tmp_path, seed=0, **kw):
    gen = sg.Generator(sg.models.RandomLogits(tok, seed=seed))
    audit = kw.pop("audit", None) or AuditLog(tmp_path / "audit.db")
    return AgentRuntime(gen, audit=audit, **kw)


def kinds(audit, rid):
    return [e["kind"] for e in audit.events(rid) if e["kind"] != "draft"]


def test_required_turn_end_to_end(tok4k, tmp_path):
    spy = Spy()
    rt = runtime(tok4k, tmp_path, executor=Executor({"get_weather": spy, "search_flights": spy}))
    events = []
    tools = [BY["get_weather"], BY["search_flights"]]
    r = rt.run_turn(USER, tools, tool_choice="required", on_event=events.append, execute=True, request_id="r1")
    assert r.request_id == "r1" and r.finish_reason == "tool_calls" and r.content is None
    (c,) = r.calls
    assert isinstance(c, ReleasedCall) and c.name in ("get_weather", "search_flights")
    assert BY[c.name].problems(c.arguments) == [] and json.loads(r.text) == c.to_dict()
    assert r.executions[0].ok and spy.calls and r.nfe > 0 and r.prompt_tokens > 0 and r.completion_tokens > 0
    assert c.openai()["id"] == c.id and json.loads(c.openai()["function"]["arguments"]) == c.arguments
    audit = rt.audit
    assert kinds(audit, "r1") == ["request", "final", "final", "validated", "decided", "released", "executed",
                                  "completed"]
    drafts = audit.events("r1", kind="draft")
    assert len(drafts) >= r.steps and all(set(d["data"]) == {"step", "kind", "nfe", "masked", "forced", "committed",
                                                             "new"} for d in drafts)
    assert drafts[-1]["data"]["masked"] == 0 and drafts[0]["data"]["masked"] > 0
    # the events the caller saw: draft payloads in the wire format, then the boundary's steps
    payloads = [e.data for e in events if e.kind == "draft"]
    assert payloads[-1]["kind"] == "final" and payloads[-1]["text"] == r.text
    for p in payloads:
        assert set(p) == {"step", "kind", "nfe", "cells", "text"} and len(p["cells"]) == 96
        assert all(cell["s"] in "mfc" and (cell["t"] == "" if cell["s"] == "m" else True) for cell in p["cells"])
    assert not any(cell["s"] == "m" for cell in payloads[-1]["cells"])
    assert any(cell["s"] == "f" for cell in payloads[-1]["cells"])  # the envelope is forced
    assert "".join(cell["t"] for cell in payloads[-1]["cells"]) == r.text
    call_kinds = [e.kind for e in events if e.call_id]
    assert call_kinds == ["final", "validated", "decided", "released", "executed"]
    json.dumps([e.to_dict() for e in events])


def test_text_only_turn(tok4k, tmp_path):
    rt = runtime(tok4k, tmp_path, seed=2)
    r = rt.run_turn("Say hi.", TOOLS, tool_choice="none", max_tokens=24)
    assert r.calls == [] and isinstance(r.content, str) and r.finish_reason == "stop"
    assert json.loads(r.text) == {"content": r.content}
    r2 = rt.run_turn("Say hi.", None, max_tokens=24)
    assert r2.calls == [] and isinstance(r2.content, str)


@pytest.mark.parametrize("seed", range(3))
def test_parallel_turn_calls_all_validate(tok4k, tmp_path, seed):
    tools = [BY["get_weather"], BY["convert_currency"]]
    rt = runtime(tok4k, tmp_path, seed=seed)
    r = rt.run_turn(USER, tools, tool_choice="required", parallel_tool_calls=True, max_tokens=120, seed=seed,
                    temperature=1.0)
    assert r.calls and r.finish_reason == "tool_calls"
    for c in r.calls:
        assert BY[c.name].problems(c.arguments) == []
    assert len({c.id for c in r.calls}) == len(r.calls)
    parsed = json.loads(r.text)
    assert (parsed if isinstance(parsed, list) else [parsed]) == [c.to_dict() for c in r.calls]


def test_denied_and_parked_calls_do_not_run(tok4k, tmp_path):
    spy = Spy()
    rt = runtime(tok4k, tmp_path, executor=Executor({"delete_file": spy, "send_email": spy}))
    r = rt.run_turn(USER, TOOLS, tool_choice={"type": "function", "function": {"name": "delete_file"}},
                    execute=True)
    assert r.calls == [] and r.finish_reason == "stop" and len(r.denied) == 1 and spy.calls == []
    assert r.denied[0]["decision"]["rule"] == "default:destructive" and r.denied[0]["state"] == "denied"
    r2 = rt.run_turn(USER, TOOLS, tool_choice={"type": "function", "function": {"name": "send_email"}},
                     execute=True, max_tokens=160)
    assert r2.calls == [] and len(r2.parked) == 1 and spy.calls == []
    assert r2.pending[0]["approval_id"] == r2.parked[0] and rt.pending()[0]["name"] == "send_email"
    assert "denied" in kinds(rt.audit, r.request_id) and "parked" in kinds(rt.audit, r2.request_id)


def test_approve_runs_once_reject_never(tok4k, tmp_path):
    spy = Spy()
    rt = runtime(tok4k, tmp_path, executor=Executor({"send_email": spy}))
    choice = {"type": "function", "function": {"name": "send_email"}}
    a = rt.run_turn(USER, TOOLS, tool_choice=choice, execute=True, max_tokens=160)
    b = rt.run_turn(USER, TOOLS, tool_choice=choice, execute=True, max_tokens=160, seed=4, temperature=1.0)
    assert spy.calls == [] and len(rt.pending()) == 2
    out = rt.approve(a.parked[0])
    assert out.execution.ok and len(spy.calls) == 1 and out.call.name == "send_email"
    assert spy.calls[0]["to"] == out.call.arguments["to"]
    with pytest.raises(ApprovalError, match="already decided"):
        rt.approve(a.parked[0])
    summary = rt.reject(b.parked[0], reason="not today")
    assert summary["state"] == "rejected"
    with pytest.raises(ApprovalError, match="already decided"):
        rt.approve(b.parked[0])
    with pytest.raises(ApprovalError, match="unknown approval id"):
        rt.approve("appr_made_up")
    assert len(spy.calls) == 1 and rt.pending() == []
    rows = rt.audit.events()
    assert [e["data"].get("via") for e in rows if e["kind"] == "released"] == ["approval"]
    assert [e["data"]["reason"] for e in rows if e["kind"] == "rejected"] == ["not today"]


def test_expired_approval_cannot_be_approved(tok4k, tmp_path):
    spy = Spy()
    clock = Clock()
    rt = runtime(tok4k, tmp_path, executor=Executor({"send_email": spy}), approval_ttl_s=60, clock=clock)
    choice = {"type": "function", "function": {"name": "send_email"}}
    a = rt.run_turn(USER, TOOLS, tool_choice=choice, execute=True, max_tokens=160)
    b = rt.run_turn(USER, TOOLS, tool_choice=choice, execute=True, max_tokens=160, seed=1, temperature=1.0)
    clock.now += 61
    with pytest.raises(ApprovalExpiredError):
        rt.approve(a.parked[0])
    assert [p["approval_id"] for p in rt.pending()] == []  # b expired too, recorded by the sweep
    with pytest.raises(ApprovalExpiredError):
        rt.approve(b.parked[0])
    assert spy.calls == [] and len(rt.audit.events(kind="expired")) == 2


def test_cancel_mid_generation(tok4k, tmp_path):
    spy = Spy()
    rt = runtime(tok4k, tmp_path, executor=Executor({"get_weather": spy}))
    seen = []
    with pytest.raises(TurnCancelled, match="nothing was released") as e:
        rt.run_turn(USER, [BY["get_weather"]], tool_choice="required", execute=True, request_id="rc",
                    on_event=seen.append, cancelled=lambda: sum(ev.kind == "draft" for ev in seen) >= 3)
    assert e.value.request_id == "rc" and spy.calls == []
    assert kinds(rt.audit, "rc") == ["request", "cancelled"]
    assert rt.audit.events("rc", kind="cancelled")[0]["data"]["step"] == 3
    assert seen[-1].kind == "cancelled" and not rt.boundary._records


def test_cancel_after_the_canvas_is_final_cancels_the_decided_calls(tok4k, tmp_path):
    spy = Spy()
    rt = runtime(tok4k, tmp_path, executor=Executor({"get_weather": spy}))
    seen = []
    with pytest.raises(TurnCancelled):
        rt.run_turn(USER, [BY["get_weather"]], tool_choice="required", execute=True, request_id="rf",
                    on_event=seen.append, cancelled=lambda: any(ev.kind == "decided" for ev in seen))
    assert spy.calls == []
    ks = kinds(rt.audit, "rf")
    assert ks[-3:] == ["decided", "cancelled", "cancelled"] and "released" not in ks  # the call's, then the turn's


def test_a_failing_listener_cancels_the_turn(tok4k, tmp_path):
    spy = Spy()
    rt = runtime(tok4k, tmp_path, executor=Executor({"get_weather": spy}))

    def broken(ev):
        if ev.kind == "draft":
            raise BrokenPipeError("client went away")

    with pytest.raises(TurnCancelled, match="BrokenPipeError"):
        rt.run_turn(USER, [BY["get_weather"]], tool_choice="required", execute=True, on_event=broken)
    assert spy.calls == [] and rt.audit.events(kind="released") == []


def test_invalid_call_is_not_released(tok4k, tmp_path):
    class Odd(BaseModel):
        """The schema allows only 1; the model's own check refuses odd numbers."""
        n: int = Field(ge=1, le=1)

        @field_validator("n")
        @classmethod
        def even(cls, v):
            if v % 2:
                raise ValueError("n must be even")
            return v

    rt = runtime(tok4k, tmp_path, policy=Policy(defaults={"other": "allow"}))
    r = rt.run_turn(USER, [Odd], tool_choice="required", max_tokens=24)
    assert r.calls == [] and r.finish_reason == "stop" and "n must be even" in r.invalid[0]["errors"][0]
    assert kinds(rt.audit, r.request_id) == ["request", "final", "final", "invalid", "completed"]


def test_bad_requests_fail_before_the_model(tok4k, tmp_path):
    rt = runtime(tok4k, tmp_path)
    with pytest.raises(sg.CanvasTooSmallError):
        rt.run_turn(USER, TOOLS, tool_choice="required", max_tokens=3, request_id="small")
    assert rt.generator.model.calls == 0 and kinds(rt.audit, "small") == ["request", "error"]
    with pytest.raises(sg.SpecError, match="not among the tools"):
        rt.run_turn(USER, TOOLS, tool_choice={"type": "function", "function": {"name": "rm"}})
    with pytest.raises(sg.ConfigError, match="needs an executor"):
        rt.run_turn(USER, TOOLS, execute=True)
    with pytest.raises(sg.ConfigError, match="approval_ttl_s"):
        AgentRuntime(rt.generator, approval_ttl_s=0)


def test_no_audit_log_still_enforces_the_boundary(tok4k):
    spy = Spy()
    rt = AgentRuntime(sg.Generator(sg.models.RandomLogits(tok4k, seed=0)), executor=Executor({"delete_file": spy}))
    r = rt.run_turn(USER, [BY["delete_file"]], tool_choice="required", execute=True)
    assert r.denied and spy.calls == []
    assert not any(rec.state is CallState.DENIED for rec in rt.boundary._records.values())


def test_a_client_gone_after_release_gets_nothing_executed(tok4k, tmp_path):
    spy = Spy()
    rt = runtime(tok4k, tmp_path, executor=Executor({"get_weather": spy}))

    def gone_at_release(ev):
        if ev.kind == "released":
            raise ConnectionResetError("client went away")

    with pytest.raises(TurnCancelled, match="released but none was executed"):
        rt.run_turn(USER, [BY["get_weather"]], tool_choice="required", execute=True, on_event=gone_at_release,
                    request_id="rg")
    assert spy.calls == []
    ks = kinds(rt.audit, "rg")
    assert ks[-2:] == ["released", "cancelled"] and "executed" not in ks
    assert rt.audit.events("rg", kind="cancelled")[0]["data"]["released_not_executed"]


def test_generation_lock_is_skipped_for_thread_safe_models(tok4k, tmp_path):
    """A batching model (``thread_safe = True``) queues callers itself: run_turn must not serialise them."""
    import threading

    rt = runtime(tok4k, tmp_path)
    rt.generator.model.thread_safe = True
    done = []
    with rt._gen_lock:  # held elsewhere: a runtime that took it would wait forever
        th = threading.Thread(target=lambda: done.append(rt.run_turn(USER, [BY["get_weather"]],
                                                                     tool_choice="required")), daemon=True)
        th.start()
        th.join(300)
    assert done and done[0].calls
