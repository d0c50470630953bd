"""An agent framework against the server: ``langchain-openai``'s ``ChatOpenAI`` with ``base_url`` set runs
one tool-calling turn (and reads a streamed one) as it would against OpenAI."""

from __future__ import annotations

import json
import warnings

import pytest

pytest.importorskip("fastapi")
langchain_openai = pytest.importorskip("langchain_openai")

import structgen as sg  # noqa: E402
from structgen.agent import load_tools, to_openai_tools  # noqa: E402
from structgen.models.default import default_tokenizer  # noqa: E402
from structgen.server import create_app  # noqa: E402
from structgen.server.testing import LiveServer  # noqa: E402

TOOLS = load_tools("examples/tools.py")
BY_NAME = {t.name: t for t in TOOLS}


@pytest.fixture(scope="module")
def chat():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        app = create_app(sg.models.RandomLogits(default_tokenizer(), seed=5))
    with LiveServer(app) as srv:
        llm = langchain_openai.ChatOpenAI(model="structgen", base_url=srv.base_url, api_key="unused",
                                          max_retries=0, timeout=120, temperature=0, max_tokens=96)
        yield llm.bind_tools(to_openai_tools(TOOLS), tool_choice="required")


def _check(tool_calls: list[dict]) -> None:
    assert len(tool_calls) == 1
    call = tool_calls[0]
    assert call["name"] in BY_NAME and call["id"].startswith("call_")
    assert BY_NAME[call["name"]].problems(call["args"]) == [], call


def test_langchain_tool_calling_turn(chat):
    from langchain_core.messages import HumanMessage, ToolMessage

    msg = chat.invoke([HumanMessage("What's the weather in Oslo?")])
    _check(msg.tool_calls)
    assert msg.invalid_tool_calls == []
    # the framework's next step: the tool result goes back, the server renders it for the model
    follow = chat.invoke([HumanMessage("What's the weather in Oslo?"), msg,
                          ToolMessage(json.dumps({"temperature": 12}), tool_call_id=msg.tool_calls[0]["id"])])
    _check(follow.tool_calls)


def test_langchain_streaming_tool_call(chat):
    chunks = list(chat.stream("Convert 120 EUR to USD"))
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    _check(total.tool_calls)
