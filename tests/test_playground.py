"""The playground's API: presets, the SSE stream of drafts then one result, request errors, cancellation.

Runs on random logits (``load_model("random")``): fast, and every output must still be valid by construction.
The page itself is tested in a real browser by tests/test_playground_browser.py.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading

import jsonschema
import pytest

pytest.importorskip("fastapi")
from fastapi import FastAPI  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

import structgen as sg  # noqa: E402
from structgen.server import playground as pg  # noqa: E402
from structgen.server.sse import event_frame  # noqa: E402
from structgen.sampler import StepEvent  # noqa: E402

PERSON = {"kind": "schema", "preset": "schema:person", "prompt": "Maria Lopez, 41, lives in Porto",
          "max_tokens": 32, "block_length": 8}


@pytest.fixture(scope="module")
def generator():
    return sg.Generator(sg.load_model("random"))


@pytest.fixture(scope="module")
def client(generator):
    app = FastAPI()
    app.include_router(pg.router)
    app.state.generator = generator
    with TestClient(app) as c:
        yield c


def parse_sse(text: str) -> list[tuple[str, dict]]:
    """(event, data) pairs of an SSE body."""
    out = []
    for frame in text.split("\n\n"):
        if not frame.strip():
            continue
        fields = dict(line.split(": ", 1) for line in frame.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def run(client, body: dict) -> tuple[list[dict], dict]:
    res = client.post("/playground/api/run", json=body)
    assert res.status_code == 200, res.text
    assert res.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(res.text)
    names = [e for e, _ in events]
    assert names[-1] == "structgen.result" and names.count("structgen.result") == 1
    assert set(names[:-1]) <= {"structgen.draft"}
    return [d for e, d in events[:-1]], events[-1][1]


# -- page and presets --------------------------------------------------------------------------------------

def test_page_and_assets_are_served_and_self_contained(client):
    page = client.get("/playground")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'src="playground/playground.js"' in page.text and 'href="playground/playground.css"' in page.text
    for name, ctype in (("playground.js", "text/javascript"), ("playground.css", "text/css")):
        asset = client.get(f"/playground/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith(ctype)
        assert "://" not in asset.text  # nothing from a CDN or any other host
    assert "://" not in page.text
    assert client.get("/playground/playground.py").status_code == 404
    assert client.get("/playground/..%2Fplayground.py").status_code == 404


def test_presets_offer_schemas_grammars_and_tool_sets(client):
    data = client.get("/playground/api/presets").json()
    by_id = {p["id"]: p for p in data["presets"]}
    assert {"schema:person", "grammar:alerts-catalog", "grammar:sql-shop", "grammar:alerts",
            "tools:examples"} <= set(by_id)
    assert json.loads(by_id["schema:person"]["source"])["title"] == "Person"
    tools = json.loads(by_id["tools:examples"]["source"])
    assert [t["function"]["name"] for t in tools][:2] == ["get_weather", "create_event"]
    delete = next(t for t in tools if t["function"]["name"] == "delete_file")
    assert delete["function"]["x-destructive"] is True  # an edited copy keeps the policy default
    assert all(t in by_id["grammar:sql-shop"]["source"] for t in ("customers", "orders", "order_items"))
    assert by_id["grammar:sql-shop"]["editable"] is False
    for p in data["presets"]:
        assert p["kind"] in ("schema", "grammar", "tools") and p["prompt"] and 1 <= p["max_tokens"] <= 256
    assert data["model"]["name"].startswith("random")
    assert data["limits"]["max_tokens"] == pg.MAX_CANVAS


# -- the stream --------------------------------------------------------------------------------------------

def test_schema_run_streams_every_step_then_the_validated_result(client):
    drafts, result = run(client, PERSON)
    assert len(drafts) >= 2
    assert [d["step"] for d in drafts] == list(range(1, len(drafts) + 1))
    nfes = [d["nfe"] for d in drafts]
    assert nfes == sorted(nfes)
    before = [{"s": "m"}] * PERSON["max_tokens"]
    for d in drafts:
        assert set(d) == {"step", "kind", "nfe", "cells", "text"}  # the contract's wire format
        assert len(d["cells"]) == PERSON["max_tokens"]
        assert {c["s"] for c in d["cells"]} <= {"m", "f", "c"}
        filled = [i for i, c in enumerate(d["cells"]) if c["s"] != "m" and before[i]["s"] == "m"]
        assert filled  # every step fills something, and what it fills carries its kind's state
        assert {d["cells"][i]["s"] for i in filled} == {"f" if d["kind"] == "forced" else "c"}
        for c in d["cells"]:
            if c["s"] == "m":
                assert c["t"] == ""
        before = d["cells"]
    masked = [sum(c["s"] == "m" for c in d["cells"]) for d in drafts]
    assert masked == sorted(masked, reverse=True) and masked[-1] == 0 and masked[0] > 0
    assert any(c["s"] == "f" for d in drafts for c in d["cells"])  # block_length 8: the constraint forces some

    assert result["valid"] is True and result["errors"] == []
    person = json.loads(pg.presets()["schema:person"].source)
    jsonschema.validate(result["value"], person)
    assert json.loads(result["text"]) == result["value"]
    assert result["text"] == drafts[-1]["text"]
    assert result["nfe"] == drafts[-1]["nfe"] and result["steps"] == drafts[-1]["step"]
    assert result["decision"] is None and result["kind"] == "schema"
    assert result["forced_tokens"] == sum(c["s"] == "f" and c["t"] != "" for c in drafts[-1]["cells"])


def test_custom_grammar_and_schema_sources(client):
    _, result = run(client, {"kind": "grammar", "source": 'start: "yes" | "no"', "prompt": "Is it?",
                             "max_tokens": 4})
    assert result["valid"] and result["text"] in ("yes", "no") and result["engine"] == "grammar"
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    drafts, result = run(client, {"kind": "schema", "source": json.dumps(schema), "prompt": "ok?",
                                  "max_tokens": 12})
    assert result["valid"] and result["value"] in ({"ok": True}, {"ok": False})


def test_a_grounded_run_quotes_the_prompt(client):
    """``ground``: whatever random logits propose, the person's strings are parts of the prompt and the age the
    number it states; a tool set's path argument too; a grammar cannot be grounded (400)."""
    from structgen.constraints.quote_automaton import is_quoted

    for seed in range(3):
        _, result = run(client, {**PERSON, "max_tokens": 40, "seed": seed, "temperature": 1.0, "ground": True})
        assert result["ground"] is True and result["valid"], result
        if not result["fallback"]:
            v = result["value"]
            assert is_quoted(v["name"], PERSON["prompt"]) and is_quoted(v["city"], PERSON["prompt"])
            assert v["age"] == 41
    _, result = run(client, {**PERSON, "max_tokens": 40})
    assert result["ground"] is False
    body = {"kind": "tools", "source": json.dumps([_tool("touch")]), "prompt": "touch notes.txt please",
            "max_tokens": 40, "ground": True}
    _, result = run(client, body)
    assert result["ground"] is True and result["state"] == "released"
    assert is_quoted(result["call"]["arguments"]["path"], body["prompt"])
    res = client.post("/playground/api/run", json={"kind": "grammar", "source": 'start: "yes" | "no"',
                                                   "prompt": "Is it?", "max_tokens": 4, "ground": True})
    assert res.status_code == 400 and "not to this grammar" in res.text


def test_the_sql_and_alert_presets_ground_their_literals_and_names(client):
    """The SQL preset's string literals come from the question (or the database); the alert preset's host
    and channel from the description; other grammar presets say they cannot be grounded."""
    import re

    from structgen.sql.grounded import StatedLiteralsValidator, stated_literals
    from structgen.sql.schema import DbSchema

    by_id = {p["id"]: p for p in client.get("/playground/api/presets").json()["presets"]}
    assert by_id["grammar:sql-shop"]["groundable"] and by_id["grammar:alerts-catalog"]["groundable"]
    assert by_id["schema:contact"]["groundable"]
    assert not [i for i, p in by_id.items() if i.startswith("grammar:") and p["groundable"]
                and i not in ("grammar:sql-shop", "grammar:alerts-catalog")]
    question = "Which customers from Spain ordered after June 6, 2025?"
    check = StatedLiteralsValidator(stated_literals(question, DbSchema.read(pg.EXAMPLES / "shop" / "shop.sqlite")))
    for seed in range(2):
        _, result = run(client, {"kind": "grammar", "preset": "grammar:sql-shop", "prompt": question,
                                 "max_tokens": 48, "seed": seed, "temperature": 1.0, "ground": True})
        assert result["ground"] is True and result["valid"], result
        assert check(result["text"]) == [], result["text"]
    description = "Let #ops know once web-3 has less than 5 GB of disk free"
    _, result = run(client, {"kind": "grammar", "preset": "grammar:alerts-catalog", "prompt": description,
                             "max_tokens": 64, "seed": 1, "temperature": 1.0, "ground": True})
    assert result["ground"] is True
    if result["valid"]:
        assert set(re.findall(r'host (?:==|!=) "([^"]+)"', result["text"])) <= {"web-3"}, result["text"]
        assert set(re.findall(r'notify "([^"]+)"', result["text"])) <= {"#ops"}, result["text"]
    name = next(i for i, p in by_id.items() if i.startswith("grammar:") and not p["groundable"])
    res = client.post("/playground/api/run", json={"kind": "grammar", "preset": name, "prompt": "x",
                                                   "max_tokens": 8, "ground": True})
    assert res.status_code == 400 and "not to this grammar" in res.text


def test_canvas_too_small_ends_the_stream_with_an_error_result(client):
    drafts, result = run(client, {**PERSON, "max_tokens": 3})
    assert drafts == []
    assert result["valid"] is False and "CanvasTooSmallError" in result["error"]
    assert result["errors"] == [result["error"]]


@pytest.mark.parametrize("body, status, words", [
    ({**PERSON, "preset": "schema:nope"}, 400, "schema:person"),
    ({**PERSON, "kind": "grammar"}, 400, "no grammar preset"),
    ({**PERSON, "preset": None, "source": "{not json"}, 400, "not valid JSON"),
    ({**PERSON, "preset": None, "source": '{"type": 5}'}, 400, "invalid JSON Schema"),
    ({**PERSON, "source": "{}"}, 400, "exactly one of"),
    ({**{k: v for k, v in PERSON.items() if k != "preset"}}, 400, "exactly one of"),
    ({**PERSON, "kind": "grammar", "preset": None, "source": "start: oops"}, 400, "Grammar"),
    ({**PERSON, "kind": "tools", "preset": None, "source": "[]"}, 400, "no tools"),
    ({**PERSON, "prompt": "   "}, 400, "prompt is empty"),
    ({**PERSON, "max_tokens": 0}, 422, "max_tokens"),
    ({**PERSON, "max_tokens": 100_000}, 422, "max_tokens"),
    ({**PERSON, "kind": "sql"}, 422, "kind"),
    ({**PERSON, "stream": True}, 422, "stream"),
])
def test_bad_requests_are_refused_before_any_stream(client, body, status, words):
    res = client.post("/playground/api/run", json=body)
    assert res.status_code == status, res.text
    assert words.lower() in res.text.lower()


# -- tool sets: the commit boundary and the policy -------------------------------------------------------

def _tool(name: str, **flags) -> dict:
    fn = {"name": name, "description": f"{name} a file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string", "maxLength": 12}}, "required": ["path"]}}
    fn.update({f"x-{k.replace('_', '-')}": v for k, v in flags.items()})
    return {"type": "function", "function": fn}


@pytest.mark.parametrize("flags, action, state", [
    ({}, "allow", "released"),
    ({"side_effects": True}, "ask", "parked"),
    ({"destructive": True}, "deny", "denied"),
])
def test_tool_set_run_reports_the_boundary_state_and_policy_decision(client, flags, action, state):
    body = {"kind": "tools", "source": json.dumps([_tool("touch", **flags)]), "prompt": "touch notes.txt",
            "max_tokens": 40}
    drafts, result = run(client, body)
    assert drafts and drafts[-1]["kind"] == "final" and all(c["s"] != "m" for c in drafts[-1]["cells"])
    assert result["kind"] == "tools" and result["valid"] is True
    assert result["call"]["name"] == "touch" and isinstance(result["call"]["arguments"]["path"], str)
    assert json.loads(result["text"]) == result["call"]
    assert result["decision"]["action"] == action and result["decision"]["rule"].startswith("default")
    assert result["state"] == state and result["executed"] is False
    assert result["forced_tokens"] == sum(c["s"] == "f" and c["t"] != "" for c in drafts[-1]["cells"]) > 0
    first = result["calls"][0]
    assert first["state"] == state and first["id"]
    assert bool(first.get("approval_id")) == (state == "parked")


def test_tool_set_run_uses_the_apps_runtime_and_policy(generator):
    from structgen.agent import AgentRuntime, AuditLog, Policy

    app = FastAPI()
    app.include_router(pg.router)
    app.state.generator = generator
    policy = Policy([{"tool": "touch", "action": "deny", "reason": "not in the playground"}])
    with tempfile.TemporaryDirectory() as tmp:
        audit = AuditLog(f"{tmp}/audit.db")
        app.state.runtime = AgentRuntime(generator, policy=policy, audit=audit)
        with TestClient(app) as c:
            _, result = run(c, {"kind": "tools", "source": json.dumps([_tool("touch")]), "prompt": "touch a",
                                "max_tokens": 40})
        assert result["decision"] == {"action": "deny", "rule": "rule 1", "reason": "not in the playground"}
        assert result["state"] == "denied"
        kinds = [e["kind"] for e in audit.events(result["request_id"])]
        assert kinds[0] == "request" and "denied" in kinds and kinds[-1] == "completed"
        assert "released" not in kinds and "executed" not in kinds
        audit.close()


def test_example_tools_preset_runs(client):
    _, result = run(client, {"kind": "tools", "preset": "tools:examples", "prompt": "Weather in Oslo?",
                             "max_tokens": 96})
    assert result["kind"] == "tools" and result["state"] in ("released", "parked", "denied", "invalid")
    if result["valid"]:
        expected = {"delete_file": "deny", "send_email": "ask"}.get(result["call"]["name"], "allow")
        assert result["decision"]["action"] == expected


def test_runs_need_an_api_key_when_the_app_has_keys(generator):
    app = FastAPI()
    app.include_router(pg.router)
    app.state.generator = generator
    app.state.api_keys = ("sk-playground-test",)
    with TestClient(app) as c:
        assert c.get("/playground/api/presets").json()["auth"] is True
        assert c.get("/playground").status_code == 200  # the page itself is open
        res = c.post("/playground/api/run", json=PERSON)
        assert res.status_code == 401 and "API key" in res.json()["detail"]
        res = c.post("/playground/api/run", json=PERSON, headers={"Authorization": "Bearer sk-wrong-key-123"})
        assert res.status_code == 401
        res = c.post("/playground/api/run", json=PERSON, headers={"Authorization": "Bearer sk-playground-test"})
        assert res.status_code == 200 and parse_sse(res.text)[-1][1]["valid"] is True


# -- the draft payload -------------------------------------------------------------------------------------

class _Tok:
    def decode(self, ids, skip_special_tokens=True):
        return "" if ids[0] == 0 else f"<{ids[0]}>"


def test_step_payload_follows_forced_commits_and_remasks():
    from structgen.agent.drafts import DraftTracker

    tr = DraftTracker(_Tok())
    a = pg.step_payload(tr, StepEvent(1, "forced", 0, [7, -1, -1], positions=[0], text="<7>"))
    assert [c["s"] for c in a["cells"]] == ["f", "m", "m"] and "note" not in a
    b = pg.step_payload(tr, StepEvent(2, "model", 1, [7, 8, 0], positions=[1, 2], text="<7><8>"))
    assert [c["s"] for c in b["cells"]] == ["f", "c", "c"]
    assert [c["t"] for c in b["cells"]] == ["<7>", "<8>", ""]  # the EOS tail has no text
    c = pg.step_payload(tr, StepEvent(3, "remask", 1, [-1, 8, 0], positions=[0], text="<8>", note="bad span"))
    assert [x["s"] for x in c["cells"]] == ["m", "c", "c"] and c["note"] == "bad span"
    d = pg.step_payload(tr, StepEvent(4, "model", 2, [9, 8, 0], positions=[0], text="<9><8>"))
    assert [x["s"] for x in d["cells"]] == ["c", "c", "c"]  # re-filled by the model: no longer forced


def test_sse_frame_format():
    frame = event_frame("structgen.draft", {"text": "a\nb", "é": 1}).decode()  # the server's SSE writer
    assert frame.startswith("event: structgen.draft\ndata: ") and frame.endswith("\n\n")
    assert frame.count("\n") == 3  # the JSON stays on one data line
    assert json.loads(frame.split("data: ", 1)[1]) == {"text": "a\nb", "é": 1}


# -- cancellation ------------------------------------------------------------------------------------------

def test_run_job_stops_at_the_next_step_once_cancelled(generator):
    req = pg.RunRequest(**{**PERSON, "max_tokens": 48})
    cancel = threading.Event()
    got = []

    def emit(event, data):
        got.append(data)
        if len(got) == 2:
            cancel.set()

    with pytest.raises(pg.Cancelled):
        pg.run_job(req, pg.build_target(req), generator, emit, cancel)
    assert len(got) == 2


def test_a_consumer_that_goes_away_cancels_the_run(generator):
    """What a client disconnect does: the stream is closed after one frame; the worker stops early and
    frees the run lock."""
    model = generator.model
    app = FastAPI()
    app.state.generator = generator
    backend = pg.Backend()
    req = pg.RunRequest(**{**PERSON, "max_tokens": 96, "block_length": 96, "threshold": 1.0})

    async def consume_one():
        stream = pg.stream_run(req, pg.build_target(req), backend, app)
        first = (await stream.__anext__()).decode()  # frames are bytes (structgen.server.sse)
        await stream.aclose()
        for _ in range(300):  # the loop stays up: only closing the stream may stop the worker
            if backend.lock.acquire(blocking=False):
                backend.lock.release()
                return first, model.calls - before
            await asyncio.sleep(0.1)
        return first, None

    before = model.calls
    first, calls = asyncio.run(consume_one())
    assert first.startswith("event: structgen.draft")
    assert calls is not None, "the worker kept the model after the stream was closed"
    assert calls < 40  # a full run of this canvas takes ~90 model calls


# -- inside the server app ---------------------------------------------------------------------------------

def test_the_server_app_serves_the_playground_with_its_model_and_policy(tmp_path):
    from structgen.agent import AuditLog, Policy, Tool
    from structgen.server import create_app

    policy = Policy([{"tool": "touch", "action": "ask", "reason": "a person decides"}])
    server_tool = Tool("shred", "Shred a file.", {"type": "object", "properties": {"path": {"type": "string"}}},
                       destructive=True)
    app = create_app("random", policy=policy, audit_path=tmp_path / "audit.db", tools=[server_tool])
    with TestClient(app) as c:
        assert c.get("/playground").status_code == 200
        assert c.get("/playground/api/presets").json()["model"]["name"].startswith("random")
        drafts, result = run(c, PERSON)
        assert drafts and result["valid"] is True
        _, result = run(c, {"kind": "tools", "source": json.dumps([_tool("touch")]), "prompt": "touch b",
                            "max_tokens": 40})
        assert result["decision"]["action"] == "ask" and result["state"] == "parked"
        approval = result["calls"][0]["approval_id"]
        pending = c.get("/v1/approvals").json()["data"]
        assert [p["approval_id"] for p in pending] == [approval]  # parked on the server, where people approve
        # a pasted tool of the same name as one the server knows gets the server's definition (destructive)
        _, shred = run(c, {"kind": "tools", "source": json.dumps([_tool("shred")]), "prompt": "shred it",
                           "max_tokens": 40})
        assert shred["decision"]["action"] == "deny" and shred["state"] == "denied"
        res = c.post("/playground/api/run", json={**PERSON, "preset": "schema:nope"})
        assert res.status_code == 400 and "schema:person" in res.text
    audit = AuditLog(tmp_path / "audit.db")
    kinds = [e["kind"] for e in audit.events(result["request_id"])]
    audit.close()
    assert "parked" in kinds and "executed" not in kinds


def test_a_client_that_disconnects_over_http_stops_its_run(generator):
    """Through uvicorn on loopback: read the first SSE frame, drop the connection; the run stops early."""
    import socket
    import time

    uvicorn = pytest.importorskip("uvicorn")
    app = FastAPI()
    app.include_router(pg.router)
    app.state.generator = generator
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        body = json.dumps({**PERSON, "max_tokens": 200, "block_length": 200, "threshold": 1.0}).encode()
        before = generator.model.calls
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(b"POST /playground/api/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            got = b""
            while b"event: structgen.draft" not in got:
                got += conn.recv(4096)
        assert pg._backend.lock.acquire(timeout=30)  # the run gave the model back
        pg._backend.lock.release()
        calls = generator.model.calls - before
        time.sleep(0.5)
        assert generator.model.calls - before == calls  # and nothing runs on
        assert calls < 100  # a full run of this canvas takes ~190 model calls
    finally:
        server.should_exit = True
        thread.join(timeout=10)
