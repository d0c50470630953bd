"""The OpenAI-compatible server, driven by the official ``openai`` client against a live uvicorn on loopback.

The model is ``RandomLogits`` over the default tokenizer: its outputs are noise, so every check below is
about validity by construction and the protocol, never about content.
"""

from __future__ import annotations

import http.client
import json
import urllib.request
import warnings

import jsonschema
import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import structgen as sg  # noqa: E402
from structgen.agent import load_tools, to_openai_tools  # noqa: E402
from structgen.models.default import default_tokenizer  # noqa: E402
from structgen.server import ServerLimits, create_app  # noqa: E402
from structgen.server.testing import LiveServer  # noqa: E402

TOOLS = load_tools("examples/tools.py")
OPENAI_TOOLS = to_openai_tools(TOOLS)
BY_NAME = {t.name: t for t in TOOLS}
ASK = [{"role": "user", "content": "What's the weather in Oslo?"}]
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}


@pytest.fixture(scope="module")
def server():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        app = create_app(sg.models.RandomLogits(default_tokenizer(), seed=1),
                         limits=ServerLimits(max_body_bytes=200_000, max_tokens_cap=512))
    with LiveServer(app) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=120)


def _valid_call(name: str, arguments: str) -> None:
    assert name in BY_NAME, name
    args = json.loads(arguments)
    assert BY_NAME[name].problems(args) == [], (name, args)


def _raw(server, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request(method, path, body, {"Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, dict(r.getheaders()), data


# ------------------------------------------------------------------------------------------ discovery
def test_models_and_health(server, client):
    assert [m.id for m in client.models.list().data] == ["structgen"]
    assert client.models.retrieve("structgen").owned_by == "structgen"
    with urllib.request.urlopen(server.url + "/health") as r:
        health = json.loads(r.read())
    assert health["status"] == "ok" and health["pool"]["workers"] == 2


# ------------------------------------------------------------------------------------------ tool calls
def test_tool_call_non_streaming(client):
    r = client.chat.completions.create(model="structgen", messages=ASK, tools=OPENAI_TOOLS, tool_choice="required")
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert len(choice.message.tool_calls) == 1
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_")
    _valid_call(call.function.name, call.function.arguments)
    ext = r.model_extra["structgen"]
    assert ext["request_id"] == r.id
    assert [d["action"] for d in ext["decisions"]] == ["allow"]
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0


def test_tool_call_streaming(client):
    stream = client.chat.completions.create(model="structgen", messages=ASK, tools=OPENAI_TOOLS,
                                            tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                            stream=True)
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    deltas = [c.choices[0].delta for c in chunks]
    assert deltas[0].role == "assistant"
    assert not any(d.content for d in deltas)  # nothing but the released call is streamed
    calls: dict[int, dict] = {}
    for d in deltas:
        for tc in d.tool_calls or ():
            entry = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            entry["id"] = tc.id or entry["id"]
            entry["name"] += (tc.function.name or "") if tc.function else ""
            entry["arguments"] += (tc.function.arguments or "") if tc.function else ""
    assert list(calls) == [0] and calls[0]["name"] == "get_weather" and calls[0]["id"].startswith("call_")
    _valid_call(calls[0]["name"], calls[0]["arguments"])
    assert [c.choices[0].finish_reason for c in chunks][-1] == "tool_calls"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


def test_text_reply_when_tools_are_off(client):
    r = client.chat.completions.create(model="structgen", messages=ASK, tools=OPENAI_TOOLS, tool_choice="none",
                                       max_tokens=24)
    msg = r.choices[0].message
    assert msg.tool_calls is None and isinstance(msg.content, str)
    assert r.choices[0].finish_reason in ("stop", "length")


# ------------------------------------------------------------------------------------------ response_format
def test_response_format_json_schema(client):
    r = client.chat.completions.create(
        model="structgen", messages=[{"role": "user", "content": "Maria Lopez, 41"}], max_tokens=48,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}},
        extra_body={"frobnicate": {"any": "thing"}, "logit_bias_v9": 3})  # unknown fields are ignored
    value = json.loads(r.choices[0].message.content)
    jsonschema.validate(value, PERSON)
    assert r.choices[0].finish_reason == "stop"


NAMED = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
         "additionalProperties": False}


def test_ground_takes_the_strings_from_the_user_s_messages(client):
    """The extension's ``ground``: a response_format answer's name and a call's city are parts of the request."""
    text = "Maria Lopez, 41, from Porto"
    r = client.chat.completions.create(
        model="structgen", messages=[{"role": "system", "content": "Extract."}, {"role": "user", "content": text}],
        max_tokens=48, extra_body={"structgen": {"ground": True}},
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": NAMED}})
    value = json.loads(r.choices[0].message.content)
    jsonschema.validate(value, NAMED)
    assert value["name"] in text  # no length bound: nothing is left to a last resort
    r = client.chat.completions.create(model="structgen", messages=ASK, tools=OPENAI_TOOLS, max_tokens=96,
                                       tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                       extra_body={"structgen": {"ground": True}})
    call = r.choices[0].message.tool_calls[0]
    _valid_call(call.function.name, call.function.arguments)
    assert json.loads(call.function.arguments)["city"] in ASK[0]["content"]  # shorter than the bound, 40


def test_response_format_streaming_with_usage(client):
    stream = client.chat.completions.create(
        model="structgen", messages=[{"role": "user", "content": "Ann, 7"}], max_tokens=48, stream=True,
        stream_options={"include_usage": True},
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    jsonschema.validate(json.loads(text), PERSON)
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0


def test_response_format_json_object(client):
    r = client.chat.completions.create(model="structgen", messages=[{"role": "user", "content": "anything"}],
                                       max_tokens=24, response_format={"type": "json_object"})
    assert isinstance(json.loads(r.choices[0].message.content), dict)


# ------------------------------------------------------------------------------------------ errors
def _bad(client, exc, **kw):
    args = {"model": "structgen", "messages": ASK, **kw}
    with pytest.raises(exc) as info:
        client.chat.completions.create(**args)
    return info.value.body, info.value.status_code


@pytest.mark.parametrize("kw, param, code", [
    ({"temperature": "hot"}, "temperature", "invalid_type"),
    ({"max_tokens": 2.5}, "max_tokens", "invalid_type"),
    ({"stream": "yes"}, "stream", "invalid_type"),
    ({"messages": "hello"}, "messages", "invalid_type"),
    ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role", "invalid_value"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     "messages[0].content", "invalid_value"),
    ({"temperature": 3}, "temperature", "invalid_value"),
    ({"n": 2}, "n", "invalid_value"),
    ({"max_tokens": 100_000}, "max_tokens", "invalid_value"),
    ({"tool_choice": "required"}, "tool_choice", "invalid_value"),
    ({"tools": OPENAI_TOOLS, "tool_choice": {"type": "function", "function": {"name": "launch_rocket"}}},
     "tool_choice", "invalid_value"),
    ({"tools": OPENAI_TOOLS, "tool_choice": "sometimes"}, "tool_choice", "invalid_value"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}]},
     "tools[0].function", None),
    ({"tools": [{"type": "function", "function": {"name": "bad name!", "parameters": {}}}]},
     "tools[0].function", None),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "objekt"}}}},
     "response_format", "invalid_json_schema"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
     "response_format.json_schema.schema", "missing_required_parameter"),
    ({"response_format": {"type": "xml"}}, "response_format.type", "invalid_value"),
])
def test_bad_requests_are_400_with_openai_error_bodies(client, kw, param, code):
    body, status = _bad(client, openai.BadRequestError, **kw)
    assert status == 400
    assert body["type"] == "invalid_request_error" and body["param"] == param and body["message"]
    if code is not None:
        assert body["code"] == code
    if code == "invalid_type":
        assert body["message"].startswith(f"Invalid type for '{param}': expected ")


@pytest.mark.parametrize("stream", [False, True])
def test_canvas_too_small_is_400_streaming_or_not(client, stream):
    body, status = _bad(client, openai.BadRequestError, tools=OPENAI_TOOLS, tool_choice="required", max_tokens=2,
                        stream=stream)
    assert status == 400 and "max_tokens=2 is too small" in body["message"]


def test_missing_messages_and_unknown_model(server, client):
    status, _, data = _raw(server, "POST", "/v1/chat/completions", json.dumps({"model": "structgen"}).encode())
    err = json.loads(data)["error"]
    assert status == 400 and err["param"] == "messages" and err["code"] == "missing_required_parameter"
    body, status = _bad(client, openai.NotFoundError, model="gpt-4o")
    assert status == 404 and body["code"] == "model_not_found"


def test_unparsable_body_unknown_path_wrong_method(server):
    status, _, data = _raw(server, "POST", "/v1/chat/completions", b"{not json")
    assert status == 400 and json.loads(data)["error"]["code"] == "invalid_json"
    status, _, data = _raw(server, "GET", "/v1/embeddings")
    assert status == 404 and json.loads(data)["error"]["message"] == "Invalid URL (GET /v1/embeddings)"
    status, _, data = _raw(server, "GET", "/v1/chat/completions")
    assert status == 405 and json.loads(data)["error"]["type"] == "invalid_request_error"


def test_body_over_the_size_limit_is_413(server, client):
    big = [{"role": "user", "content": "x" * 250_000}]
    body, status = _bad(client, openai.APIStatusError, messages=big)
    assert status == 413 and body["code"] == "request_too_large"
    # also without a Content-Length (chunked upload), counted as it arrives
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    payload = json.dumps({"model": "structgen", "messages": big}).encode()
    conn.request("POST", "/v1/chat/completions", iter([payload[i:i + 65536] for i in range(0, len(payload), 65536)]),
                 {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    r = conn.getresponse()
    assert r.status == 413 and json.loads(r.read())["error"]["code"] == "request_too_large"
    conn.close()


def test_api_keys():
    app = create_app(sg.models.RandomLogits(default_tokenizer()), api_keys=["sk-right-key-123"])
    with LiveServer(app) as srv:
        wrong = openai.OpenAI(base_url=srv.base_url, api_key="sk-wrong-key-456", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as info:
            wrong.models.list()
        assert info.value.status_code == 401 and info.value.body["code"] == "invalid_api_key"
        assert "sk-wrong" not in info.value.body["message"]  # the key is not echoed whole
        right = openai.OpenAI(base_url=srv.base_url, api_key="sk-right-key-123", max_retries=0)
        assert [m.id for m in right.models.list().data] == ["structgen"]
        with urllib.request.urlopen(srv.url + "/health") as r:  # health needs no key
            assert r.status == 200


# ------------------------------------------------------------------------------------------ SSE and drafts
def _sse(server, body: dict) -> list[tuple[str | None, str]]:
    status, headers, data = _raw(server, "POST", "/v1/chat/completions", json.dumps(body).encode())
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    frames = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        event = None
        lines = []
        for line in block.split("\n"):
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                lines.append(line[6:])
        frames.append((event, "\n".join(lines)))
    return frames


def test_default_stream_is_pure_openai_and_drafts_are_opt_in(server):
    req = {"model": "structgen", "messages": ASK, "tools": OPENAI_TOOLS[:2], "tool_choice": "required",
           "stream": True, "max_tokens": 64}
    plain = _sse(server, req)
    assert all(event is None for event, _ in plain) and plain[-1] == (None, "[DONE]")
    drafted = _sse(server, {**req, "structgen": {"drafts": True}})
    drafts = [json.loads(d) for e, d in drafted if e == "structgen.draft"]
    chunks = [json.loads(d) for e, d in drafted if e is None and d != "[DONE]"]
    assert drafts and drafted[-1] == (None, "[DONE]")
    first_chunk = next(i for i, (e, _) in enumerate(drafted) if e is None)
    assert all(e == "structgen.draft" for e, _ in drafted[:first_chunk])  # every draft before any chunk
    for d in drafts:
        assert set(d) == {"step", "kind", "nfe", "cells", "text"}
        assert d["kind"] in ("forced", "model", "remask", "final") and {c["s"] for c in d["cells"]} <= {"m", "f", "c"}
    assert drafts[-1]["kind"] == "final" and all(c["s"] != "m" for c in drafts[-1]["cells"])
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_openai_client_does_not_skip_draft_events(client):
    """Why drafts are opt-in: the openai client hands unknown SSE events to the caller as chunks without
    choices. A default stream must therefore carry none (see the test above)."""
    stream = client.chat.completions.create(model="structgen", messages=ASK, tools=OPENAI_TOOLS[:1],
                                            tool_choice="required", stream=True, max_tokens=48,
                                            extra_body={"structgen": {"drafts": True}})
    items = list(stream)
    assert any(not getattr(i, "choices", None) and "cells" in (i.model_extra or {}) for i in items)


def test_prompt_past_the_models_positions_is_context_length_exceeded():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        app = create_app(sg.load_model())  # the embedded default (or its untrained stand-in): 1,024 positions
    with LiveServer(app) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="unused", max_retries=0, timeout=120)
        long = [{"role": "user", "content": "please " * 900}]
        for stream in (False, True):
            body, status = _bad(client, openai.BadRequestError, messages=long, max_tokens=256, stream=stream)
            assert status == 400 and body["code"] == "context_length_exceeded", body
