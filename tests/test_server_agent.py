"""The commit boundary seen through the server: policy decisions, approvals, server-side execution,
clients that disconnect mid-generation, and overload. A live uvicorn on loopback, the real ``openai``
client or raw HTTP, ``RandomLogits`` (slowed a little so a request can be interrupted mid-canvas)."""

from __future__ import annotations

import http.client
import json
import time
import warnings
from pathlib import Path

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")

import structgen as sg  # noqa: E402
from structgen.agent import AuditLog, load_tools, to_openai_tools  # noqa: E402
from structgen.models.default import default_tokenizer  # noqa: E402
from structgen.server import ServerLimits, create_app  # noqa: E402
from structgen.server.config import executor_from_file  # noqa: E402
from structgen.server.testing import LiveServer  # noqa: E402

TOOLS = load_tools("examples/tools.py")
OPENAI_TOOLS = to_openai_tools(TOOLS)
ASK = [{"role": "user", "content": "Please do it."}]


class SlowRandom(sg.models.RandomLogits):
    """Random logits, ``delay_s`` per forward pass: a turn lasts long enough to walk away from."""

    delay_s = 0.02

    def _logits(self, ids, attention_mask):
        time.sleep(self.delay_s)
        return super()._logits(ids, attention_mask)


def _named(name: str) -> dict:
    return {"type": "function", "function": {"name": name}}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("server-agent")
    sandbox = root / "sandbox"
    executor = executor_from_file("examples/tool_impls.py", sandbox=sandbox)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        app = create_app(SlowRandom(default_tokenizer(), seed=3), policy="examples/policy.toml",
                         audit_path=root / "audit.db", executor=executor, tools="examples/tools.py")
    with LiveServer(app) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="unused", max_retries=0, timeout=120)
        yield {"srv": srv, "client": client, "audit": AuditLog(root / "audit.db"), "sandbox": sandbox}


def _kinds(audit: AuditLog, request_id: str) -> list[str]:
    return [e["kind"] for e in audit.events(request_id)]


def _outbox(env) -> list[Path]:
    box = env["sandbox"] / "outbox"
    return sorted(box.iterdir()) if box.exists() else []


def test_allowed_call_is_released_and_executed_on_the_server(env):
    r = env["client"].chat.completions.create(model="structgen", messages=ASK, tools=OPENAI_TOOLS,
                                              tool_choice=_named("get_weather"), max_tokens=64)
    assert r.choices[0].finish_reason == "tool_calls"
    call = r.choices[0].message.tool_calls[0]
    ext = r.model_extra["structgen"]
    [execution] = ext["executions"]
    assert execution["ok"] and execution["call_id"] == call.id
    assert execution["result"]["city"] == json.loads(call.function.arguments)["city"]
    kinds = _kinds(env["audit"], r.id)
    assert kinds[0] == "request" and kinds[-1] == "completed"
    assert kinds.index("released") < kinds.index("executed")


def test_destructive_tool_is_denied_even_when_the_client_redeclares_it_harmless(env):
    harmless = {"type": "function", "function": {"name": "delete_file", "description": "totally safe",
                                                 "parameters": {"type": "object", "properties": {
                                                     "path": {"type": "string", "maxLength": 40}},
                                                     "required": ["path"]}}}
    r = env["client"].chat.completions.create(model="structgen", messages=ASK, tools=[harmless],
                                              tool_choice=_named("delete_file"), max_tokens=64)
    assert r.choices[0].message.tool_calls is None  # nothing released
    ext = r.model_extra["structgen"]
    assert [d["name"] for d in ext["denied"]] == ["delete_file"] and ext["executions"] == []
    assert ext["decisions"][0]["action"] == "deny" and ext["decisions"][0]["rule"] == "default:destructive"
    kinds = _kinds(env["audit"], r.id)
    assert "denied" in kinds and "released" not in kinds and "executed" not in kinds


def test_ask_call_is_parked_until_approved_then_executed_once(env):
    client, srv = env["client"], env["srv"]
    before = _outbox(env)
    r = client.chat.completions.create(model="structgen", messages=ASK, tools=OPENAI_TOOLS,
                                       tool_choice=_named("send_email"), max_tokens=96)
    ext = r.model_extra["structgen"]
    assert r.choices[0].message.tool_calls is None
    [parked] = ext["parked"]
    approval_id = parked["approval_id"]
    assert parked["name"] == "send_email" and _outbox(env) == before  # parked: not executed
    listed = client.get("/approvals", cast_to=object)
    assert approval_id in [p["approval_id"] for p in listed["data"]]
    out = client.post(f"/approvals/{approval_id}/approve", cast_to=object)
    assert out["status"] == "released" and out["execution"]["ok"]
    assert out["tool_call"]["function"]["name"] == "send_email"
    assert len(_outbox(env)) == len(before) + 1
    with pytest.raises(openai.ConflictError) as info:  # a decided approval cannot be approved again
        client.post(f"/approvals/{approval_id}/approve", cast_to=object)
    assert info.value.body["code"] == "approval_decided"
    assert len(_outbox(env)) == len(before) + 1
    kinds = _kinds(env["audit"], r.id)
    assert kinds.index("parked") < kinds.index("released") < kinds.index("executed")
    with pytest.raises(openai.NotFoundError):
        client.post("/approvals/appr_nope/approve", cast_to=object)
    assert srv  # the server is still up


def test_rejected_call_never_runs(env):
    client = env["client"]
    before = _outbox(env)
    r = client.chat.completions.create(model="structgen", messages=ASK, tools=OPENAI_TOOLS,
                                       tool_choice=_named("send_email"), max_tokens=96)
    approval_id = r.model_extra["structgen"]["parked"][0]["approval_id"]
    out = client.post(f"/approvals/{approval_id}/reject", body={"reason": "not today"}, cast_to=object)
    assert out["status"] == "rejected"
    with pytest.raises(openai.ConflictError):
        client.post(f"/approvals/{approval_id}/approve", cast_to=object)
    assert _outbox(env) == before
    assert "rejected" in _kinds(env["audit"], r.id) and "executed" not in _kinds(env["audit"], r.id)


def _wait_for(audit: AuditLog, request_id: str, kind: str, timeout_s: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        kinds = _kinds(audit, request_id)
        if kind in kinds:
            return kinds
        time.sleep(0.1)
    raise AssertionError(f"no {kind!r} row for {request_id}: {_kinds(audit, request_id)}")


def _start(env, body: dict) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection("127.0.0.1", env["srv"].port, timeout=60)
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    return conn


def test_client_that_disconnects_mid_stream_leaves_no_execution(env):
    body = {"model": "structgen", "messages": ASK, "tools": OPENAI_TOOLS, "tool_choice": _named("get_weather"),
            "max_tokens": 64, "stream": True, "structgen": {"drafts": True}}
    conn = _start(env, body)
    r = conn.getresponse()
    request_id = r.getheader("X-Request-Id")
    assert r.status == 200 and request_id
    assert b"structgen.draft" in r.fp.readline() + r.fp.readline()  # generation is under way
    conn.sock.close()  # walk away mid-canvas
    conn.close()
    kinds = _wait_for(env["audit"], request_id, "cancelled")
    time.sleep(0.5)
    kinds = _kinds(env["audit"], request_id)
    assert not {"released", "executed", "parked", "completed"} & set(kinds), kinds


def test_client_that_disconnects_while_waiting_for_json_leaves_no_execution(env):
    audit = env["audit"]
    after = max((e["seq"] for e in audit.events()), default=0)
    body = {"model": "structgen", "messages": ASK, "tools": OPENAI_TOOLS, "tool_choice": _named("get_weather"),
            "max_tokens": 64}
    conn = _start(env, body)
    deadline = time.monotonic() + 60
    while not audit.events(kind="draft", after=after):  # wait until its canvas is being denoised
        assert time.monotonic() < deadline
        time.sleep(0.05)
    request_id = audit.events(kind="request", after=after)[0]["request_id"]
    conn.sock.close()
    conn.close()
    kinds = _wait_for(audit, request_id, "cancelled")
    assert not {"released", "executed", "completed"} & set(kinds), kinds


def test_full_server_answers_503_and_stays_up():
    model = SlowRandom(default_tokenizer())
    model.delay_s = 0.05
    app = create_app(model, limits=ServerLimits(workers=1, queue_size=0))
    with LiveServer(app) as srv:
        body = {"model": "structgen", "messages": ASK, "tools": OPENAI_TOOLS[:1], "tool_choice": "required",
                "max_tokens": 48, "stream": True, "structgen": {"drafts": True}}
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        busy = conn.getresponse()
        assert busy.status == 200  # the only worker is now busy
        client = openai.OpenAI(base_url=srv.base_url, api_key="unused", max_retries=0, timeout=60)
        with pytest.raises(openai.InternalServerError) as info:
            client.chat.completions.create(model="structgen", messages=ASK)
        assert info.value.status_code == 503 and info.value.body["code"] == "overloaded"
        assert info.value.response.headers["retry-after"] == "1"
        rest = busy.read().decode()  # the admitted request still completes
        assert rest.rstrip().endswith("data: [DONE]")
        conn.close()
        r = client.chat.completions.create(model="structgen", messages=ASK, max_tokens=16)  # room again
        assert r.choices[0].message.content is not None


def test_client_tool_marked_destructive_is_denied_by_default(env):
    tool = {"type": "function", "function": {"name": "wipe_disk", "description": "wipe it", "x-destructive": True,
                                             "parameters": {"type": "object", "properties": {
                                                 "disk": {"type": "string", "maxLength": 8}}, "required": ["disk"]}}}
    r = env["client"].chat.completions.create(model="structgen", messages=ASK, tools=[tool], tool_choice="required",
                                              max_tokens=48)
    ext = r.model_extra["structgen"]
    assert r.choices[0].message.tool_calls is None and [d["name"] for d in ext["denied"]] == ["wipe_disk"]
    assert ext["decisions"][0]["rule"] == "default:destructive"
