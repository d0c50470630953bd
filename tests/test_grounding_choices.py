"""Grounding's choices, defaults and repeats: what a grounded answer may hold beyond quoted text.

An ``enum`` holds the choices the request names; an optional property with a default that the request states
nothing for keeps its default; a repeated value is ruled out at the place a repeat pass redoes, by the
constraint itself (``ruled_out``), and a place that allows that value only keeps it (``sole_values``);
passes go on while each repeats fewer values. Walked through the real token automaton and the generator
with a scripted model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.grounding import EXCLUDE_KEY, STATED_KEY, Grounded, ground_schema, stated_choices, stated_for, unstated
from structgen.repeats import mentions, repeated_values, ruled_out, sole_values

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from tools import TOOLS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_model import ScriptedLogits  # noqa: E402


def _accepts(constraint, tok, text: str) -> bool:
    return constraint.accepts(tok(text, add_special_tokens=False)["input_ids"])


# ------------------------------------------------------------------------------------------------ choices
def test_a_choice_is_named_by_its_words_and_not_inside_a_longer_one():
    cabins = ["economy", "premium_economy", "business", "first"]
    assert stated_choices("It's a work trip, so premium economy.", cabins) == ["premium_economy"]
    assert stated_choices("economy or Premium-Economy, not FIRST", cabins) == ["economy", "premium_economy", "first"]
    assert stated_choices("coach if possible", cabins) == []
    assert stated_choices("a 12-year-old male rabbit", ["male", "female"]) == ["male"]
    assert stated_choices("Temperature outlook in Fahrenheit pls", ["celsius", "fahrenheit"]) == ["fahrenheit"]
    assert stated_choices("the firstborn", cabins) == []  # whole words only


def test_an_enum_the_request_names_a_choice_of_is_held_to_it(tok4k, vocab):
    schema = {"type": "object", "properties": {
        "fuel": {"type": "string", "enum": ["petrol", "diesel", "electric", "hybrid"]},
        "n": {"enum": [1, 2]}},  # not strings: left alone
        "required": ["fuel"], "additionalProperties": False}
    text = "2012 Škoda Octavia, diesel, asking 53083.20 EUR"
    props = ground_schema(schema, text)["properties"]
    assert props["fuel"][STATED_KEY] == text and stated_for(props["fuel"], text) == ["diesel"]
    assert STATED_KEY not in props["n"]
    assert STATED_KEY not in ground_schema(schema, "a used car")["properties"]["fuel"]  # nothing named
    c = compile_spec(Grounded(sg.JsonSchema(schema), text), vocab)
    assert _accepts(c, tok4k, '{"fuel": "diesel"}') and not _accepts(c, tok4k, '{"fuel": "petrol"}')
    from structgen.validators import validators_for

    (check,) = validators_for(Grounded(sg.JsonSchema(schema), text))
    (issue,) = check('{"fuel": "petrol"}')
    assert "'petrol' is not a choice the request states (it states diesel)" in issue.message


# ----------------------------------------------------------------------------------------------- defaults
def test_an_optional_property_the_request_states_nothing_for_keeps_its_default(tok4k, vocab):
    from structgen.agent.tools import tool_call_spec

    text = "Can you block my calendar on Nov 4, 2025 from 11:45 am? It's for Car service."
    g = Grounded(tool_call_spec(TOOLS), text)
    event = next(b for b in g.schema["anyOf"] if b["properties"]["name"] == {"const": "create_event"})
    args = event["properties"]["arguments"]["properties"]
    assert args["duration_minutes"]["const"] == 30 and args["attendees"]["const"] == []
    assert STATED_KEY in args["date"] and "const" not in args["title"]  # required ones as before
    weather = next(b for b in g.schema["anyOf"] if b["properties"]["name"] == {"const": "get_weather"})
    assert "const" not in weather["properties"]["arguments"]["properties"]["unit"]  # an enum: left alone
    c = compile_spec(g, vocab)
    call = {"name": "create_event", "arguments": {"title": "Car service", "date": "2025-11-04", "start_time": "11:45"}}
    assert _accepts(c, tok4k, json.dumps(call))
    for extra in ({"duration_minutes": 30}, {"attendees": []}):
        assert _accepts(c, tok4k, json.dumps({**call, "arguments": {**call["arguments"], **extra}}))
    for extra in ({"duration_minutes": 180}, {"attendees": ["you@b.lock"]}):
        assert not _accepts(c, tok4k, json.dumps({**call, "arguments": {**call["arguments"], **extra}}))
    stated = Grounded(tool_call_spec(TOOLS), text.replace("11:45 am?", "11:45 am for three hours?"))
    event = next(b for b in stated.schema["anyOf"] if b["properties"]["name"] == {"const": "create_event"})
    assert STATED_KEY in event["properties"]["arguments"]["properties"]["duration_minutes"]


def test_what_counts_as_unstated():
    assert unstated({"type": "integer", "minimum": 1}, "no count here")
    assert not unstated({"type": "integer", "minimum": 1}, "x2 please")  # "x2" states 2
    assert unstated({"type": "array", "items": {"type": "string", "format": "email"}}, "nobody")
    assert not unstated({"type": "array", "items": {"type": "string", "format": "email"}}, "cc a@b.example")
    assert unstated({"type": "string", "format": "date"}, "someday")
    assert not unstated({"type": "string"}, "anything")  # free text quotes the request
    assert not unstated({"type": "string", "enum": ["celsius", "fahrenheit"]}, "in °F")  # named in other words
    props = ground_schema({"type": "object", "properties": {"any": True, "n": {"type": "integer", "default": 3}}},
                          "nothing stated")["properties"]
    assert props["any"] is True and props["n"]["const"] == 3  # a boolean subschema is left as it is


# ----------------------------------------------------------------------------------------------- repeats
QUAKE = {"type": "object", "properties": {
    "region": {"type": "string"}, "magnitude": {"type": "number", "minimum": 0},
    "injuries": {"type": "integer", "minimum": 0}, "code": {"$ref": "#/$defs/code"},
    "tags": {"type": "array", "items": {"$ref": "#/$defs/code"}}},
    "required": ["region", "magnitude", "injuries"], "additionalProperties": False,
    "$defs": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}}
# no number beside a field's name ("5.9-magnitude" would give 5.9 to the magnitude alone: structgen.named_numbers),
# so both numbers stay open to both fields and the repeat pass has something to settle
QUAKE_TEXT = "Paris, May 2nd 2026 (news): 16 people were hurt when a quake of 5.9 shook the area (EQX, PAR)."


def test_a_place_that_allows_one_value_only_keeps_it():
    g = Grounded(sg.JsonSchema(QUAKE), QUAKE_TEXT).schema
    v = {"region": "Paris", "magnitude": 16, "injuries": 16}
    assert sole_values(g, v) == {("injuries",)}  # an integer: 16 is all the request states
    assert repeated_values(g, v) == [(16, 1, [("magnitude",), ("injuries",)])]


def test_ruled_out_narrows_the_one_place_and_nothing_it_shares():
    g = Grounded(sg.JsonSchema(QUAKE), QUAKE_TEXT).schema
    v = {"region": "Paris", "magnitude": 16, "injuries": 16, "code": "EQX", "tags": ["EQX"]}
    out = ruled_out(g, v, [(("magnitude",), 16), (("code",), "EQX")])
    assert stated_for(out["properties"]["magnitude"], QUAKE_TEXT) == [5.9]
    assert out["properties"]["magnitude"][EXCLUDE_KEY] == [16]
    assert stated_for(out["properties"]["code"], QUAKE_TEXT) == ["PAR"]  # the $ref inlined there
    assert out["$defs"] == g["$defs"] and "$ref" in out["properties"]["tags"]["items"]  # shared: untouched
    assert g["properties"]["magnitude"].get(EXCLUDE_KEY) is None  # a copy
    assert ruled_out(g, v, [(("tags", 0), "EQX")]) is None  # an array's items are shared: not narrowed
    from structgen.agent.tools import tool_call_spec

    src = "Find flights between Lima (LIM) and Oslo (OSL) on March 3rd 2027"  # no roles (structgen.roles)
    call = Grounded(tool_call_spec(TOOLS), src).schema
    value = {"name": "search_flights", "arguments": {"origin": "OSL", "destination": "OSL", "date": "2027-03-03"}}
    out = ruled_out(call, value, [(("arguments", "destination"), "OSL")])
    branch = next(b for b in out["anyOf"] if b["properties"]["name"] == {"const": "search_flights"})
    args = branch["properties"]["arguments"]["properties"]  # the tool's own anyOf branch
    assert stated_for(args["destination"], src) == ["LIM"] and EXCLUDE_KEY not in args["origin"]


def test_a_currency_the_notes_restate_is_one_mention():
    text = "quote me the Swedish kronor equivalent of 3,440 CAD."
    assert mentions("CAD", text) == 1 and mentions("SEK", text) == 1  # SEK: stated by the notes alone


def test_the_repeat_pass_rules_the_value_out_however_it_is_written(tok4k):
    """A model that insists on 16 for both numbers: the magnitude is redone (the injuries can only be 16) by a
    constraint that no longer allows 16 there, so no other tokenisation of it gets through: 5.9."""
    schema = {k: v for k, v in QUAKE.items() if k != "$defs"}
    schema["properties"] = {k: v for k, v in QUAKE["properties"].items() if k in ("region", "magnitude", "injuries")}
    model = ScriptedLogits(tok4k, '{"region": "Paris", "magnitude": 16, "injuries": 16}')
    r = sg.Generator(model).generate(QUAKE_TEXT, sg.JsonSchema(schema), 48, ground=True, trace=True)
    assert r.valid and json.loads(r.text) == {"region": "Paris", "magnitude": 5.9, "injuries": 16}
    assert [e.note for e in r.trace if e.kind == "remask"] == ["stated once, written again: 16 at /magnitude"]


def test_passes_go_on_while_each_repeats_fewer_values(tok4k):
    """Three places write the model year; the year itself allows only it; the two others are redone, and
    whatever the first pass leaves repeated the next one redoes, the values ruled out before staying out."""
    schema = {"type": "object", "properties": {
        "year": {"type": "integer", "minimum": 1950, "maximum": 2026}, "km": {"type": "integer", "minimum": 0},
        "price": {"type": "number", "minimum": 0}}, "required": ["year", "km", "price"], "additionalProperties": False}
    text = "FOR SALE: 2012 Škoda Octavia, 118,000 km, asking 53083.20 EUR."
    model = ScriptedLogits(tok4k, '{"year": 2012, "km": 2012, "price": 2012}')
    r = sg.Generator(model).generate(text, sg.JsonSchema(schema), 48, ground=True, trace=True)
    got = json.loads(r.text)
    assert r.valid and got["year"] == 2012 and sorted([got["km"], got["price"]]) == [53083.2, 118000]
    assert 1 <= sum(e.kind == "remask" for e in r.trace) <= 3


@pytest.mark.parametrize("text", ["", "Paris"])
def test_an_empty_or_unrepeated_answer_gets_no_pass(tok4k, text):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    model = ScriptedLogits(tok4k, '{"city": "Paris"}')
    r = sg.Generator(model).generate(f"weather in Paris {text}", sg.JsonSchema(schema), 24, ground=True, trace=True)
    assert json.loads(r.text) == {"city": "Paris"} and not any(e.kind == "remask" for e in r.trace)
