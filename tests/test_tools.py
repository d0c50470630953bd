"""Tools, tool calls and the prompt renderings of JSON specs (structgen.agent.tools, structgen.prompting)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import time
from pathlib import Path
from typing import ClassVar, Literal, Optional

import pytest
from pydantic import BaseModel, Field, field_validator

import structgen as sg
from structgen.agent import Tool, ToolCall, ToolCallSpec, as_tools, call_schema, load_tools, tool_call_spec
from structgen.prompting import MAX_CHARS, compact_schema, json_prompt, tools_block, tools_prompt

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.usefixtures("one_torch_thread")

TOOLS = load_tools(ROOT / "examples" / "tools.py")
BY_NAME = {t.name: t for t in TOOLS}

EXPECTED_BLOCK = """\
### Tools
get_weather(city: string, unit: "celsius"|"fahrenheit" = "celsius", days: integer 1-14 = 1) — Current weather and forecast for a city.
create_event(title: string, date: date, start_time: string, duration_minutes: integer 5-480 = 30, attendees: [email] = []) — Create a calendar event.
send_email(to: [email], subject: string, body: string) — Send an email. [side effects]
search_flights(origin: string, destination: string, date: date, passengers: integer 1-9 = 1, cabin: "economy"|"premium_economy"|"business"|"first" = "economy") — Search flights between two airports on a date.
set_reminder(text: string, at: date-time) — Set a reminder at a date and time.
convert_currency(amount: number >0, from_currency: string, to_currency: string) — Convert an amount of money from one currency to another.
delete_file(path: string) — Delete a file. [destructive]"""  # noqa: E501


# -- the example tools ----------------------------------------------------------------------------------
REQUIRED = {
    "get_weather": ["city"],
    "create_event": ["title", "date", "start_time"],
    "send_email": ["to", "subject", "body"],
    "search_flights": ["origin", "destination", "date"],
    "set_reminder": ["text", "at"],
    "convert_currency": ["amount", "from_currency", "to_currency"],
    "delete_file": ["path"],
}


def test_example_tools_schemas():
    assert [t.name for t in TOOLS] == list(REQUIRED)
    for t in TOOLS:
        s = t.schema
        assert s["type"] == "object" and s["additionalProperties"] is False, t.name
        assert sorted(s.get("required", [])) == sorted(REQUIRED[t.name]), t.name
        for name, prop in s["properties"].items():  # a default never goes with required
            assert not ("default" in prop and name in s["required"]), (t.name, name)
            assert "title" not in prop and "$ref" not in json.dumps(prop)
    p = {t.name: t.schema["properties"] for t in TOOLS}
    assert p["get_weather"]["city"] == {"type": "string", "minLength": 1, "maxLength": 40}
    weather = p["get_weather"]
    assert weather["unit"] == {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
    assert weather["days"] == {"type": "integer", "minimum": 1, "maximum": 14, "default": 1}
    assert p["create_event"]["date"]["format"] == "date"
    assert p["create_event"]["start_time"]["pattern"] == "^([01][0-9]|2[0-3]):[0-5][0-9]$"
    assert p["create_event"]["attendees"]["maxItems"] == 8 and p["create_event"]["attendees"]["default"] == []
    assert p["create_event"]["attendees"]["items"]["format"] == "email"
    assert (p["send_email"]["to"]["minItems"], p["send_email"]["to"]["maxItems"]) == (1, 5)
    assert p["send_email"]["body"]["maxLength"] == 400 and p["send_email"]["subject"]["maxLength"] == 80
    assert p["search_flights"]["origin"]["pattern"] == "^[A-Z]{3}$"
    assert p["search_flights"]["cabin"]["default"] == "economy" and len(p["search_flights"]["cabin"]["enum"]) == 4
    assert p["set_reminder"]["at"]["format"] == "date-time"
    assert p["convert_currency"]["amount"] == {"type": "number", "exclusiveMinimum": 0}
    assert p["delete_file"]["path"]["maxLength"] == 200
    assert [t.name for t in TOOLS if t.side_effects] == ["send_email", "delete_file"]
    assert [t.name for t in TOOLS if t.destructive] == ["delete_file"]


def test_tools_block_of_the_examples():
    assert tools_block(TOOLS) == EXPECTED_BLOCK


# -- compact schemas and prompts ------------------------------------------------------------------------
def test_compact_schema_of_get_weather():
    assert compact_schema(BY_NAME["get_weather"].schema) == (
        '{"city": string (1-40 chars), "unit": "celsius"|"fahrenheit" = "celsius", "days": integer 1-14 = 1}')


class Address(BaseModel):
    street: str
    zip: str = Field(pattern=r"^\d{5}$")


class Person(BaseModel):
    name: str = Field(min_length=1, max_length=40)
    age: Optional[int] = Field(None, ge=0, le=150)
    born: datetime.date
    seen: datetime.datetime
    home: Address
    nickname: str = Field(None, json_schema_extra={"format": "email"})
    others: list[Address] = Field([], max_length=3)
    tags: dict[str, int] = {}
    score: float = Field(gt=0, lt=1)


class Node(BaseModel):
    value: int
    children: list[Node] = []


def test_compact_schema_of_pydantic_models():
    assert compact_schema(Person.model_json_schema()) == (
        '{"name": string (1-40 chars), "age": integer 0-150|null = null, "born": date, "seen": date-time, '
        '"home": {"street": string, "zip": string /^\\d{5}$/}, "nickname": email = null, '
        '"others": [{"street": string, "zip": string /^\\d{5}$/}] (<=3 items) = [], "tags": {string: integer} = {}, '
        '"score": number >0 <1}')
    assert compact_schema(Node.model_json_schema()) == '{"value": integer, "children": [Node] = []}'


def test_compact_schema_keywords():
    schema = {"type": "object", "required": ["a"], "properties": {
        "a": {"type": ["string", "null"]}, "b": {"prefixItems": [{"type": "integer"}, {"type": "boolean"}]},
        "c": {"allOf": [{"type": "integer"}, {"minimum": 3}]}, "d": {}, "e": {"oneOf": [{"const": 1}, {"const": "x"}]},
        "f": {"type": "string", "minLength": 3, "maxLength": 3}, "g": {"type": "number", "maximum": 5}}}
    assert compact_schema(schema) == ('{"a": string|null, "b"?: [integer, boolean], "c"?: integer >=3, "d"?: any, '
                                      '"e"?: 1|"x", "f"?: string (3 chars), "g"?: number <=5}')
    assert compact_schema({"type": "object"}) == "object" and compact_schema(True) == "any"
    assert compact_schema({"$ref": "#/$defs/missing"}) == "missing"


def test_compact_schema_is_bounded():
    big = {"type": "object", "properties": {f"key_{i}": {"type": "string", "maxLength": i} for i in range(5000)}}
    assert len(json.dumps(big)) > 100_000
    out = compact_schema(big)
    assert len(out) <= MAX_CHARS and out.endswith("…") and out.startswith('{"key_0"?: string (<=0 chars)')
    # a chain of definitions each used twice: 2**40 expansions if rendering did not stop at the limit
    defs = {"D0": {"type": "integer"}}
    for i in range(1, 40):
        defs[f"D{i}"] = {"type": "object", "properties": {"a": {"$ref": f"#/$defs/D{i - 1}"},
                                                          "b": {"$ref": f"#/$defs/D{i - 1}"}}}
    t0 = time.perf_counter()
    out = compact_schema({"$defs": defs, "$ref": "#/$defs/D39"})
    assert len(out) <= MAX_CHARS and out.endswith("…") and time.perf_counter() - t0 < 1.0


def test_json_prompt_text_and_chat():
    schema = BY_NAME["get_weather"].schema
    compact = compact_schema(schema)
    assert json_prompt(schema, "  Oslo, 3 days ") == f"### Schema\n{compact}\n### Input\nOslo, 3 days\n### JSON\n"
    msgs = json_prompt(schema, [{"role": "user", "content": "Oslo"}])
    assert msgs[0]["role"] == "system" and msgs[0]["content"].endswith(f"### Schema\n{compact}")
    assert msgs[1] == {"role": "user", "content": "Oslo"}
    own = json_prompt(schema, [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Oslo"}])
    assert len(own) == 2 and own[0]["content"].startswith("Be terse.\n\n") and compact in own[0]["content"]
    with pytest.raises(sg.SpecError, match="a prompt is a string"):
        json_prompt(schema, 42)


def test_json_schema_prompt_carries_the_schema_unless_turned_off():
    spec = sg.JsonSchema(BY_NAME["get_weather"].schema)
    text = spec.render_prompt("Oslo")
    assert text.startswith('### Schema\n{"city": string (1-40 chars)')
    assert text.endswith("### Input\nOslo\n### JSON\n")
    off = sg.JsonSchema(BY_NAME["get_weather"].schema, in_prompt=False)
    assert off.render_prompt("Oslo") == "Oslo" and off.key == spec.key
    assert sg.JsonSchema(Person).render_prompt([{"role": "user", "content": "x"}])[0]["role"] == "system"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.in_prompt = False


def test_tool_call_spec_prompt():
    spec = ToolCallSpec(TOOLS)
    assert spec.render_prompt("Weather in Oslo?") == f"{EXPECTED_BLOCK}\n### Request\nWeather in Oslo?\n### Call\n"
    chat = spec.render_prompt([{"role": "user", "content": "Weather in Oslo?"}])
    assert chat[0]["role"] == "system" and chat[0]["content"].endswith(EXPECTED_BLOCK)
    assert tools_prompt(TOOLS, "x") == spec.render_prompt("x")
    assert ToolCallSpec(TOOLS, in_prompt=False).render_prompt("x") == "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.tools = ()


# -- as_tools -------------------------------------------------------------------------------------------
class LookupOrder(BaseModel):
    """Look up an order by its id.

    Longer text that is not part of the one-line description."""

    order_id: int = Field(ge=1)
    verbose: bool = False


class Ping(BaseModel):
    tool_name: ClassVar[str] = "ping_host"
    host: str


OPENAI = {"type": "function", "function": {"name": "get_stock", "description": "Stock of a product.",
                                           "parameters": {"type": "object", "properties": {
                                               "sku": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{4}$"}},
                                               "required": ["sku"]}}}


def test_as_tools_from_all_three_kinds():
    tools = as_tools([BY_NAME["delete_file"], LookupOrder, Ping, OPENAI])
    assert [t.name for t in tools] == ["delete_file", "lookup_order", "ping_host", "get_stock"]
    assert tools[1].description.startswith("Look up an order by its id.") and tools[1].model is LookupOrder
    assert tools[1].schema == {"type": "object", "properties": {"order_id": {"type": "integer", "minimum": 1},
                               "verbose": {"type": "boolean", "default": False}}, "required": ["order_id"],
                               "additionalProperties": False}
    assert tools[1].signature() == ("lookup_order(order_id: integer >=1, verbose: boolean = false) — "
                                    "Look up an order by its id.")
    assert tools[3].schema["additionalProperties"] is False and tools[3].model is None
    assert tools[3].openai()["function"]["parameters"] == tools[3].schema
    assert as_tools(Ping)[0].name == "ping_host" and as_tools(OPENAI["function"])[0].name == "get_stock"
    assert as_tools(ToolCallSpec(tools)) == tools


@pytest.mark.parametrize("bad, match", [
    ([LookupOrder, LookupOrder], "two tools are named 'lookup_order'"),
    ([], "no tools given"),
    ([42], "cannot use int as a tool"),
    ({"type": "function", "function": {"description": "x"}}, "an OpenAI tool is"),
    ({"name": "x", "parameters": {"type": "array"}}, "must describe a JSON object"),
    ({"name": "x", "parameters": {"type": "object", "properties": {"a": {"type": "strin"}}}}, "invalid JSON Schema"),
])
def test_as_tools_errors(bad, match):
    with pytest.raises(sg.SpecError, match=match):
        as_tools(bad)


def test_tool_arguments_must_be_an_object():
    from pydantic import RootModel

    with pytest.raises(sg.SpecError, match="must be a JSON object"):
        Tool("count", "d", RootModel[int])
    with pytest.raises(sg.SpecError, match="parameters must be a pydantic model class or a JSON Schema"):
        Tool("count", "d", [1])


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "naïve", None])
def test_bad_tool_names(name):
    with pytest.raises(sg.SpecError, match="is not valid"):
        Tool(name, "d", None)


def test_load_tools_from_json_and_errors(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps([OPENAI]))
    assert [t.name for t in load_tools(tmp_path / "t.json")] == ["get_stock"]
    (tmp_path / "none.py").write_text("X = 1\n")
    with pytest.raises(sg.SpecError, match="defines no TOOLS"):
        load_tools(tmp_path / "none.py")
    with pytest.raises(sg.SpecError, match="not found"):
        load_tools(tmp_path / "missing.py")


# -- calls ----------------------------------------------------------------------------------------------
def test_call_schema_shape():
    s = call_schema(TOOLS)
    assert [b["properties"]["name"] for b in s["anyOf"]] == [{"const": t.name} for t in TOOLS]
    for b, t in zip(s["anyOf"], TOOLS, strict=True):
        assert list(b["properties"]) == ["name", "arguments"] and b["required"] == ["name", "arguments"]
        assert b["additionalProperties"] is False and b["properties"]["arguments"] == t.schema


def test_tool_call_parse_validates_and_leaves_defaults_out():
    call = ToolCall.parse('{"name": "get_weather", "arguments": {"city": "Oslo"}}', TOOLS)
    assert call == ToolCall("get_weather", {"city": "Oslo"}) and call.arguments == {"city": "Oslo"}
    assert call.parsed.unit == "celsius" and call.parsed.days == 1 and call.tool is BY_NAME["get_weather"]
    assert call.to_json() == '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    assert json.loads(call.openai()["function"]["arguments"]) == {"city": "Oslo"}
    ev = ToolCall.parse({"name": "create_event", "arguments": {"title": "Sync", "date": "2025-03-04",
                                                                "start_time": "09:30"}}, TOOLS)
    assert ev.parsed.date == datetime.date(2025, 3, 4) and ev.parsed.attendees == []


@pytest.mark.parametrize("text, match", [
    ('{"name": "get_weather", "arguments": {"city": "Oslo", "days": 20}}', "get_weather.days: 20 is greater"),
    ('{"name": "get_weather", "arguments": {"city": "Oslo", "when": "now"}}', "Additional properties"),
    ('{"name": "search_flights", "arguments": {"origin": "OSL", "destination": "CDG", "date": "2025-02-30"}}',
     "is not a 'date'"),
    ('{"name": "send_email", "arguments": {"to": ["not-an-email"], "subject": "s", "body": "b"}}', "does not match"),
    ('{"name": "convert_currency", "arguments": {"amount": 0, "from_currency": "EUR", "to_currency": "USD"}}',
     "less than or equal to the minimum"),
    ('{"name": "set_reminder", "arguments": {"text": "t", "at": "2025-01-01T10:00:00"}}', "is not a 'date-time'"),
    ('{"name": "launch", "arguments": {}}', "names no known tool: 'launch'"),
    ('{"name": "delete_file"}', "a tool call is"),
    ('{"name": "delete_file", "arguments": {"path": "a"}', "not JSON"),
])
def test_tool_call_parse_rejects(text, match):
    with pytest.raises(sg.GenerationError, match=match):
        ToolCall.parse(text, TOOLS)


def test_recursive_arguments_are_hoisted(tok4k):
    class Tree(BaseModel):
        """Store a tree."""
        root: Node

    spec = ToolCallSpec([Tree, BY_NAME["delete_file"]])
    assert "tree__Node" in spec.schema["$defs"]
    root = spec.schema["anyOf"][0]["properties"]["arguments"]["properties"]["root"]
    assert root["properties"]["children"]["items"] == {"$ref": "#/$defs/tree__Node"}
    assert root["additionalProperties"] is False and spec.schema["$defs"]["tree__Node"]["additionalProperties"] is False
    call = spec.parse('{"name": "tree", "arguments": {"root": {"value": 1, "children": [{"value": 2}]}}}')
    assert call.parsed.root.children[0].value == 2
    c = sg.compile(spec, tok4k)  # recursive: the grammar engine
    assert c.engine == "grammar" and c.accepts(tok4k.encode(call.to_json(), add_special_tokens=False))


# -- compile and generate with random logits ------------------------------------------------------------
def test_call_spec_compiles_on_the_automaton(tok4k):
    c = sg.compile(ToolCallSpec(TOOLS), tok4k)  # all seven tools, send_email's 400-character body included
    assert c.engine == "automaton"
    good = ToolCall("search_flights", {"origin": "OSL", "destination": "CDG", "date": "2025-05-01"}, )
    assert c.accepts(tok4k.encode(good.to_json(), add_special_tokens=False))
    bad = '{"name": "search_flights", "arguments": {"origin": "osl", "destination": "CDG", "date": "2025-05-01"}}'
    assert not c.accepts(tok4k.encode(bad, add_special_tokens=False))
    assert not c.accepts(tok4k.encode('{"name": "get_weather", "arguments": {}}', add_special_tokens=False))
    email = ToolCall("send_email", {"to": ["a@b.io"], "subject": "Hi", "body": "See you."})
    assert c.accepts(tok4k.encode(email.to_json(), add_special_tokens=False))


def _check(call, tools):
    by_name = {t.name: t for t in tools}
    assert isinstance(call, ToolCall) and call.name in by_name and call.result.valid
    tool = by_name[call.name]
    tool.model.model_validate_json(json.dumps(call.arguments))  # raises when the arguments do not validate
    assert json.loads(call.result.text) == call.to_dict()


@pytest.mark.parametrize("seed", range(6))
def test_random_logits_calls_over_all_tools(tok4k, seed):
    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed))
    _check(gen.tool_call("Book something for me.", TOOLS), TOOLS)


@pytest.mark.parametrize("seed", range(6))
def test_random_logits_calls_on_the_automaton(tok4k, seed):
    tools = [t for t in TOOLS if t.name != "send_email"]
    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=100 + seed), engine="automaton", temperature=1.0,
                       seed=seed)
    call = gen.tool_call([{"role": "user", "content": "Do it."}], tools)
    _check(call, tools)
    assert call.result.engine == "automaton"


def test_tool_call_spec_is_cached_per_tool_set(tok4k):
    a = tool_call_spec(TOOLS)
    assert tool_call_spec(list(TOOLS)) is a and tool_call_spec(a) is a
    assert tool_call_spec(TOOLS[:2]) is not a
    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=3))
    call = gen.tool_call("Ping it.", [Ping, OPENAI], max_tokens=48)
    assert call.name in ("ping_host", "get_stock") and call.tool.name == call.name


def test_tool_call_raises_when_no_valid_call(tok4k):
    class Odd(BaseModel):
        """The schema allows only 1; the model's own check refuses odd numbers."""
        n: int = Field(ge=1, le=1)

        @field_validator("n")
        @classmethod
        def even(cls, v):
            if v % 2:
                raise ValueError("n must be even")
            return v

    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=0))
    with pytest.raises(sg.GenerationError, match="n must be even"):
        gen.tool_call("x", [Odd], max_tokens=24)


class Trip(BaseModel):
    """Book a trip between two cities."""
    origin: Literal["Oslo", "Berlin", "Rome"]
    destination: Literal["Oslo", "Berlin", "Rome"]

    @field_validator("destination")
    @classmethod
    def differs(cls, v, info):
        if v == info.data.get("origin"):
            raise ValueError("the destination must differ from the origin")
        return v


def test_a_tool_models_validators_are_repaired_during_generation(tok4k):
    """A call the schema allows and the tool's pydantic model refuses is re-masked and written again, as a
    schema error is, instead of being released and refused by ``ToolCall.parse``: random logits pick the same
    city twice for a third of these seeds, and every call comes out valid."""
    from structgen.grounding import ground
    from structgen.validators import ToolCallValidator, validators_for

    spec = tool_call_spec([Trip])
    checks = validators_for(spec)
    assert [type(c) for c in checks] == [ToolCallValidator]
    text = '{"name": "trip", "arguments": {"origin": "Oslo", "destination": "Oslo"}}'
    (issue,) = checks[0](text)
    assert "must differ" in issue.message and issue.path == "/arguments/destination"
    assert text[issue.span[0]:issue.span[1]] == '"Oslo"' and issue.span[0] > text.index("destination")
    assert checks[0](text.replace('"destination": "Oslo"', '"destination": "Rome"')) == []
    # the schema first: a call the schema refuses gets the schema's issues, not the model's as well
    bad = text.replace('"origin": "Oslo"', '"origin": "Paris"')
    assert [i.validator for i in checks[0](bad)] == ["jsonschema"]
    # an agent turn's parallel calls: each call against its own tool's model
    from structgen.agent.turn import TurnSpec

    turn = validators_for(TurnSpec([Trip], "required", parallel_tool_calls=True))
    assert [type(c) for c in turn] == [ToolCallValidator]
    two = f'[{text.replace("Oslo", "Rome", 1)}, {text}]'
    assert [i.path for i in turn[0](two)] == ["/1/arguments/destination"]
    # grounded, the wrapped spec's tools are checked too
    grounded = ground(spec, "From Oslo to Rome", True)
    assert [type(c) for c in validators_for(grounded)] == [ToolCallValidator]
    repaired = 0
    for seed in range(12):
        gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed))
        notes: list[str] = []
        call = gen.tool_call("Book a trip", [Trip], max_tokens=64,
                             on_step=lambda e: notes.append(e.note) if e.kind == "remask" else None)
        assert call.arguments["origin"] != call.arguments["destination"], seed
        repaired += any("must differ" in note for note in notes)
    assert repaired >= 3  # the model's verdict was what sent them back


def test_literal_and_nested_pydantic_tool(tok4k):
    class Ship(BaseModel):
        """Ship an order."""
        to: Address
        speed: Literal["slow", "fast"] = "slow"

    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=1))
    call = gen.tool_call("Ship it", [Ship], max_tokens=64)
    assert call.name == "ship" and set(call.arguments) <= {"to", "speed"} and call.parsed.to.zip.isdigit()
