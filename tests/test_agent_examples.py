"""examples/tool_impls.py (safe implementations of the example tools) under the example policy, run through
the executor the way the server runs them."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from structgen.agent import CallState, Decision, Executor, Policy, ToolCall, load_tools
from structgen.agent.boundary import Boundary

ROOT = Path(__file__).resolve().parent.parent
TOOLS = load_tools(ROOT / "examples" / "tools.py")


def _impls_module():
    spec = importlib.util.spec_from_file_location("structgen_example_impls", ROOT / "examples" / "tool_impls.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


IMPLS = _impls_module()
SAMPLE = {
    "get_weather": {"city": "Oslo", "days": 3},
    "create_event": {"title": "Sync", "date": "2025-03-04", "start_time": "09:30", "attendees": ["a@b.io"]},
    "send_email": {"to": ["team@example.com"], "subject": "Hi", "body": "See you."},
    "search_flights": {"origin": "OSL", "destination": "CDG", "date": "2025-05-01", "cabin": "business"},
    "set_reminder": {"text": "Call mum", "at": "2025-05-01T10:00:00+02:00"},
    "convert_currency": {"amount": 100, "from_currency": "EUR", "to_currency": "NOK"},
    "delete_file": {"path": "doomed.txt"},
}


def run(name, arguments, functions, policy=None):
    """Take one call through the boundary as AgentRuntime does; returns (decision, execution or None)."""
    b = Boundary()
    rec = b.draft("req", {"name": name, "arguments": arguments})
    b.advance(rec, CallState.FINAL)
    rec.call = ToolCall.parse(rec.raw, TOOLS)
    b.advance(rec, CallState.VALIDATED)
    rec.decision = (policy or Policy()).decide(rec.call)
    b.advance(rec, CallState.DECIDED)
    if rec.decision.action != "allow":
        return rec.decision, None
    released = b.advance(rec, CallState.RELEASED)
    return rec.decision, Executor(functions).run(released)


def test_every_example_tool_runs_and_is_deterministic(tmp_path):
    fns = IMPLS.functions(tmp_path / "sandbox")
    (tmp_path / "sandbox" / "doomed.txt").write_text("x")
    allow_all = Policy([{"tool": "*", "action": "allow"}])
    results = {}
    for name, args in SAMPLE.items():
        _, out = run(name, args, fns, allow_all)
        assert out is not None and out.ok, (name, out)
        json.dumps(out.result)
        results[name] = out.result
    assert [d["day"] for d in results["get_weather"]["forecast"]] == [0, 1, 2]
    assert results["get_weather"] == IMPLS.get_weather("Oslo", "celsius", 3)
    assert results["create_event"]["end"] == "2025-03-04T10:00:00"
    assert len(results["search_flights"]["flights"]) == 3
    assert results["convert_currency"]["result"] == 1160.0
    assert results["set_reminder"]["at"] == "2025-05-01T10:00:00+02:00"
    assert results["delete_file"] == {"deleted": "doomed.txt"} and not (tmp_path / "sandbox" / "doomed.txt").exists()
    (mail,) = (tmp_path / "sandbox" / "outbox").iterdir()
    assert json.loads(mail.read_text())["to"] == ["team@example.com"]


def test_delete_file_stays_in_the_sandbox(tmp_path):
    sandbox = tmp_path / "sandbox"
    fns = IMPLS.functions(sandbox, outbox=tmp_path / "out")
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    (sandbox / "sub").mkdir()
    os.symlink(outside, sandbox / "link.txt")
    allow = Policy([{"tool": "delete_file", "action": "allow"}])
    for path in (str(outside), "../precious.txt", "sub/../../precious.txt", "link.txt", str(sandbox), "sub",
                 "missing.txt", "/etc/passwd"):
        decision, out = run("delete_file", {"path": path}, fns, allow)
        assert decision.action == "allow" and not out.ok, path
        assert "PermissionError" in out.error or "FileNotFoundError" in out.error
    assert outside.read_text() == "keep me"


def test_example_policy_with_the_implementations(tmp_path):
    sandbox = Path("/tmp/structgen-sandbox") / f"t{os.getpid()}"
    fns = IMPLS.functions(sandbox, outbox=tmp_path / "out")
    (sandbox / "old.log").write_text("x")
    policy = Policy.from_toml(ROOT / "examples" / "policy.toml")
    decision, out = run("delete_file", {"path": str(sandbox / "old.log")}, fns, policy)
    assert decision.action == "allow" and out.ok and not (sandbox / "old.log").exists()
    decision, out = run("delete_file", {"path": "/etc/hosts"}, fns, policy)
    assert decision == Decision("deny", "default:destructive", decision.reason) and out is None
    decision, out = run("send_email", {"to": ["x@elsewhere.io"], "subject": "s", "body": "b"}, fns, policy)
    assert decision.action == "ask" and out is None and not any((tmp_path / "out").iterdir())
    sandbox.rmdir()


def test_convert_currency_unknown_code_is_a_failed_execution(tmp_path):
    fns = IMPLS.functions(tmp_path)
    _, out = run("convert_currency", {"amount": 1, "from_currency": "XXX", "to_currency": "EUR"}, fns)
    assert not out.ok and "unknown currency 'XXX'" in out.error


@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_implementations_match_the_tool_signatures(tmp_path, name):
    import inspect

    fn = IMPLS.functions(tmp_path)[name]
    tool = next(t for t in TOOLS if t.name == name)
    assert set(inspect.signature(fn).parameters) == set(tool.schema["properties"])
