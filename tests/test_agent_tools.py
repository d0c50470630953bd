"""The agent's tool registry (functions, schemas, OpenAI entries), to_openai_tools and TurnSpec."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

import structgen as sg
from structgen.agent import (ToolCallSpec, ToolRegistry, TurnSpec, as_tools, function_tool, load_tools,
                             to_openai_tools, tool)
from structgen.agent.functions import docstring_parts
from structgen.agent.turn import normalize_messages

ROOT = Path(__file__).resolve().parent.parent
TOOLS = load_tools(ROOT / "examples" / "tools.py")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- functions as tools -----------------------------------------------------------------------------------
def book_table(restaurant: str, day: datetime.date, people: Annotated[int, Field(ge=1, le=12)] = 2,
               seating: Literal["inside", "outside"] = "inside") -> dict:
    """Book a table at a restaurant.

    Longer explanation that is not the one-line description.

    Args:
        restaurant: the restaurant's name.
        day: the day of the booking.
        people: how many guests,
            children included.

    Returns:
        the booking.
    """
    return {"restaurant": restaurant, "day": day.isoformat(), "people": people, "seating": seating}


@tool(destructive=True, name="wipe")
def wipe_disk(device: str) -> None:
    """:param device: the device path."""


def test_function_becomes_a_tool_with_schema_and_descriptions():
    (t,) = as_tools(book_table)
    assert t.name == "book_table" and t.function is book_table and not t.side_effects
    assert t.description.startswith("Book a table at a restaurant.") and "Args" not in t.description
    props = t.schema["properties"]
    assert props["day"] == {"type": "string", "format": "date", "description": "the day of the booking."}
    assert props["people"]["minimum"] == 1 and props["people"]["maximum"] == 12 and props["people"]["default"] == 2
    assert props["people"]["description"] == "how many guests, children included."
    assert props["seating"]["enum"] == ["inside", "outside"]
    assert t.schema["required"] == ["restaurant", "day"] and t.schema["additionalProperties"] is False
    assert t.problems({"restaurant": "Chez", "day": "2025-02-30"})  # not a date
    assert t.problems({"restaurant": "Chez", "day": "2025-02-03", "vip": True})  # extra argument
    assert t.problems({"restaurant": "Chez", "day": "2025-02-03"}) == []


def test_tool_decorator_flags_and_sphinx_docstring():
    (t,) = as_tools([wipe_disk])
    assert (t.name, t.destructive, t.side_effects) == ("wipe", True, True)
    assert t.schema["properties"]["device"]["description"] == "the device path."
    assert function_tool(wipe_disk, name="wipe2", destructive=False).destructive is False


def test_docstring_parts_google_and_plain():
    desc, params = docstring_parts("Do it.\n\nArgs:\n    a (int): first.\n    b: second\n        line.\n")
    assert desc == "Do it." and params == {"a": "first.", "b": "second line."}
    assert docstring_parts(None) == ("", {})


def _untyped(x):
    """No annotation."""


def _star(*names: str):
    """Varargs."""


@pytest.mark.parametrize("fn, match", [
    (_untyped, "has no type annotation"),
    (_star, r"\*names"),
    (lambda city: city, "lambda"),
])
def test_bad_functions(fn, match):
    with pytest.raises(sg.SpecError, match=match):
        as_tools([fn])


# -- registry and OpenAI format ---------------------------------------------------------------------------
class Lookup(BaseModel):
    """Look up an order."""
    order_id: int = Field(ge=1)


TITLED = {"title": "get_stock", "description": "Stock of a product.", "type": "object",
          "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{4}$"}}, "required": ["sku"]}
OPENAI = {"type": "function", "function": {"name": "ping", "description": "Ping a host.",
                                           "parameters": {"type": "object", "properties": {"host": {"type": "string"}},
                                                          "required": ["host"]}}}


def test_registry_accepts_every_kind():
    reg = ToolRegistry([book_table, Lookup, TITLED, OPENAI, TOOLS[0]])
    assert [t.name for t in reg] == ["book_table", "lookup", "get_stock", "ping", "get_weather"]
    assert reg.functions == {"book_table": book_table}
    assert reg["get_stock"].schema["additionalProperties"] is False and "title" not in reg["get_stock"].schema
    assert "lookup" in reg and len(reg) == 5 and reg.get("nope") is None
    with pytest.raises(sg.SpecError, match="no tool named 'nope'"):
        reg["nope"]
    with pytest.raises(sg.SpecError, match="already registered"):
        reg.add(Lookup)
    impl = reg.with_functions({"ping": lambda host: host})
    assert set(impl.functions) == {"book_table", "ping"} and set(reg.functions) == {"book_table"}
    assert as_tools(reg) == reg.tools and ToolRegistry(impl).functions.keys() == impl.functions.keys()
    with pytest.raises(sg.SpecError, match="no tool named 'x' to attach"):
        reg.with_functions({"x": print})


def test_to_openai_tools_round_trips_the_example_tools():
    out = to_openai_tools(TOOLS)
    assert [o["function"]["name"] for o in out] == [t.name for t in TOOLS]
    assert all(o["type"] == "function" and o["function"]["parameters"]["type"] == "object" for o in out)
    json.dumps(out)  # JSON-able
    back = as_tools(out)
    assert [t.schema for t in back] == [t.schema for t in TOOLS]
    assert to_openai_tools([book_table])[0]["function"]["parameters"]["properties"]["day"]["format"] == "date"
    assert to_openai_tools(ToolRegistry(TOOLS)) == out


# -- TurnSpec ---------------------------------------------------------------------------------------------
def test_single_call_turn_is_the_tool_call_spec():
    turn = TurnSpec(TOOLS, "required")
    call_spec = ToolCallSpec(TOOLS)
    assert turn.key == call_spec.key and turn.schema == call_spec.schema
    assert turn.render_prompt("Weather in Oslo?") == call_spec.render_prompt("Weather in Oslo?")
    msgs = [{"role": "user", "content": "Weather in Oslo?"}]
    assert turn.render_prompt(msgs) == call_spec.render_prompt(msgs)


def test_turn_shapes():
    auto = TurnSpec(TOOLS)
    assert auto.allows_calls and auto.allows_content and not auto.parallel_tool_calls
    assert len(auto.schema["anyOf"]) == len(TOOLS) + 1
    par = TurnSpec(TOOLS[:2], "required", parallel_tool_calls=True, max_calls=3)
    assert par.schema["anyOf"][-1]["minItems"] == 2 and par.schema["anyOf"][-1]["maxItems"] == 3
    named = TurnSpec(TOOLS, {"type": "function", "function": {"name": "delete_file"}})
    assert [t.name for t in named.callable_tools] == ["delete_file"] and not named.allows_content
    assert [t.name for t in named.tools] == [t.name for t in TOOLS]
    none = TurnSpec(TOOLS, "none")
    assert none.schema == {"anyOf": [{"type": "object", "properties": {"content": {"type": "string"}},
                                      "required": ["content"], "additionalProperties": False}]}
    assert TurnSpec(None).schema == none.schema and TurnSpec([], "auto").allows_content
    assert "### Tools" not in none.render_prompt("hi") and "### Tools" in auto.render_prompt("hi")
    assert "JSON array of calls" in par.render_prompt([{"role": "user", "content": "x"}])[0]["content"]


@pytest.mark.parametrize("kw, match", [
    ({"tool_choice": "always"}, "not valid"),
    ({"tool_choice": {"type": "function", "function": {"name": "launch"}}}, "not among the tools"),
    ({"tool_choice": 3}, "tool_choice must be"),
    ({"max_calls": 0}, "max_calls"),
])
def test_turn_spec_errors(kw, match):
    with pytest.raises(sg.SpecError, match=match):
        TurnSpec(TOOLS, **kw)
    with pytest.raises(sg.SpecError, match="needs at least one tool"):
        TurnSpec([], "required")


def test_split_and_parse():
    auto = TurnSpec(TOOLS)
    call = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    calls, content = auto.parse(call)
    assert content is None and calls[0].to_dict() == {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert auto.parse('{"content": "Hi {\\"name\\": \\"delete_file\\"}"}') == ([], 'Hi {"name": "delete_file"}')
    par = TurnSpec(TOOLS, parallel_tool_calls=True)
    calls, _ = par.parse(f"[{call}, {call.replace('Oslo', 'Rome')}]")
    assert [c.arguments["city"] for c in calls] == ["Oslo", "Rome"]
    bad = {
        auto: [f"[{call}, {call}]", '{"content": 3}', "{", "[]", '{"name": "get_weather"}'],
        TurnSpec(TOOLS, "required"): ['{"content": "no"}'],
        TurnSpec(TOOLS, "none"): [call],
        TurnSpec(TOOLS, parallel_tool_calls=True, max_calls=2): [f"[{call}, {call}, {call}]", f"[{call}]"],
    }
    for spec, texts in bad.items():
        for text in texts:
            with pytest.raises(sg.GenerationError):
                spec.split(text)
    with pytest.raises(sg.GenerationError, match="Additional properties"):
        auto.parse('{"name": "get_weather", "arguments": {"city": "Oslo", "admin": true}}')
    with pytest.raises(sg.GenerationError, match="names no known tool"):
        TurnSpec(TOOLS, {"type": "function", "function": {"name": "get_weather"}}).parse(
            '{"name": "delete_file", "arguments": {"path": "/x"}}')


def test_turn_spec_compiles_and_accepts_only_its_shapes(tok4k):
    spec = TurnSpec(TOOLS[:3], parallel_tool_calls=True)
    c = sg.compile(spec, tok4k)
    enc = lambda s: tok4k.encode(s, add_special_tokens=False)  # noqa: E731
    one = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    assert c.accepts(enc(one)) and c.accepts(enc(f"[{one}, {one}]")) and c.accepts(enc('{"content": "hi"}'))
    assert not c.accepts(enc(f"[{one}]"))
    assert not c.accepts(enc('{"name": "delete_file", "arguments": {"path": "/etc/passwd"}}'))
    assert not c.accepts(enc('{"name": "get_weather", "arguments": {"city": "Oslo", "admin": true}}'))
    assert not c.accepts(enc('{"content": "hi", "name": "get_weather"}'))


def test_normalize_messages():
    msgs = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"t": 3}'}]
    out = normalize_messages(msgs)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool"]
    assert json.loads(out[2]["content"]) == {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert all(set(m) == {"role", "content"} for m in out)
