"""Grounding across fields and branches (``structgen.roles``, ``structgen.every_address``,
``structgen.named_quotes``, ``structgen.grounding_fields``): a pair of direction fields takes each stated value
in the role the request gives it, a schema's only e-mail list holds every address the request states, a
field the request names a quoted span as is that span, an optional enum whose choice it names is written, and
a tool none of whose required stated values it states is not called. Through the real compiled constraint
and the validator; the task data's gold calls stay allowed; random logits release only calls that keep the
rules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from schema_strategies import grounded_decoding, grounded_runs

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.every_address import address_lists
from structgen.grounding import EXCLUDE_KEY, Grounded, ground_schema, stated_for
from structgen.roles import direction_pair, value_roles
from structgen.validators import run_validators, validators_for

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from tools import TOOLS  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FLIGHTS = {"type": "object", "properties": {
    "origin": {"type": "string", "pattern": "^[A-Z]{3}$"}, "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "passengers": {"type": "integer", "minimum": 1, "maximum": 9}},
    "required": ["origin", "destination"], "additionalProperties": False}
MEETING = "My meeting is in Madrid (MAD) on April 15 and I'm based in København (CPH). What flights are there?"


@pytest.mark.parametrize("text, roles", [
    (MEETING, {"MAD": "to", "CPH": "from"}),
    ("My hotel bill came to 2720.51 Mexican pesos; what does that come to in GBP?", {"MXN": "from", "GBP": "to"}),
    ("Quote me the CHF equivalent of 10,021.96 pounds.", {"CHF": "to", "GBP": "from"}),
    ("My hotel bill came to $7,441; what does that come to in SEK?", {"USD": "from", "SEK": "to"}),
    ("Flying out of Chicago (ORD) on 2026-03-14, heading to Tokyo (HND)", {"ORD": "from", "HND": "to"}),
    ("Convert 1,250 Swedish kronor to euros", {"SEK": "from", "EUR": "to"}),
    ("flights from JFK to LAX", {"JFK": "from", "LAX": "to"}),
    ("compare JFK and LAX", {}),  # no cue: no role
])
def test_the_role_of_a_value_is_read_from_the_words_around_it(text, roles):
    assert value_roles(list(roles) or ["JFK", "LAX"], text) == roles


def test_direction_pairs_are_one_field_of_each_role():
    assert direction_pair(FLIGHTS["properties"]) == ("origin", "destination")
    assert direction_pair({"from_currency": {}, "to_currency": {}, "amount": {}}) == ("from_currency", "to_currency")
    assert direction_pair({"to": {}, "subject": {}}) is None  # a recipient list has no partner
    assert direction_pair({"origin": {}, "source": {}, "destination": {}}) is None  # two of one role


def test_each_direction_field_allows_no_value_of_the_other_role(tok4k, vocab):
    marked = ground_schema(FLIGHTS, MEETING)["properties"]
    assert marked["origin"][EXCLUDE_KEY] == ["MAD"] and marked["destination"][EXCLUDE_KEY] == ["CPH"]
    g = Grounded(sg.JsonSchema(FLIGHTS), MEETING)
    c = compile_spec(g, vocab)
    ok, swapped = '{"origin": "CPH", "destination": "MAD"}', '{"origin": "MAD", "destination": "CPH"}'
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"])
    assert not c.accepts(tok4k(swapped, add_special_tokens=False)["input_ids"])
    assert run_validators(validators_for(g), ok) == [] and run_validators(validators_for(g), swapped)
    # a field left with no value of its own role is not narrowed: "heading to Bogotá" states no code
    marked = ground_schema(FLIGHTS, "Flying out of MUC on Mar 28, heading to Bogotá")["properties"]
    assert EXCLUDE_KEY not in marked["destination"] and EXCLUDE_KEY not in marked["origin"]


def test_a_schema_s_only_address_list_holds_every_stated_address(tok4k, vocab):
    request = "Sprint planning // guests: liam@example.org, ben.l@globex.example and ali@acme.test"
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "attendees": {
        "type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 8, "default": []}},
        "required": ["title"]}
    g = Grounded(sg.JsonSchema(schema), request)
    assert g.schema["properties"]["attendees"]["const"] == ["liam@example.org", "ben.l@globex.example", "ali@acme.test"]
    assert "attendees" in g.schema["required"]
    c = compile_spec(g, vocab)
    whole = '{"title": "Sprint planning", "attendees": ["liam@example.org", "ben.l@globex.example", "ali@acme.test"]}'
    for bad in (whole.replace(', "ben.l@globex.example"', ""), '{"title": "Sprint planning"}'):
        assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"]), bad
        assert run_validators(validators_for(g), bad), bad
    assert c.accepts(tok4k(whole, add_special_tokens=False)["input_ids"])
    # two e-mail fields, or more addresses than maxItems: left as it was
    two = {**schema, "properties": {**schema["properties"], "owner": {"type": "string", "format": "email"}}}
    assert address_lists(two) == []
    few = {**schema, "properties": {**schema["properties"], "attendees": {**schema["properties"]["attendees"],
                                                                           "maxItems": 2}}}
    assert "const" not in ground_schema(few, request)["properties"]["attendees"]
    # a tool-call schema: each tool on its own
    assert sorted(k for _, k in address_lists(sg.ToolCallSpec(TOOLS).schema)) == ["attendees", "to"]


def test_a_quoted_span_the_request_names_as_a_field_is_that_field(tok4k, vocab):
    from structgen.named_quotes import named_quote

    request = 'Let ana@example.org know "See you at noon." - and put "Flight change" in the subject line.'
    assert named_quote(request, "subject") == "Flight change" and named_quote(request, "body") is None
    assert named_quote('mail bo@x.org subject: "Q3 review" body: "Numbers attached"', "subject") == "Q3 review"
    assert named_quote('mail bo@x.org subject "A" and "B" as the subject', "subject") is None  # two: neither
    schema = {"type": "object", "properties": {"subject": {"type": "string", "maxLength": 80},
                                               "body": {"type": "string"}}, "required": ["subject", "body"]}
    g = Grounded(sg.JsonSchema(schema), request)
    c = compile_spec(g, vocab)
    ok = '{"subject": "Flight change", "body": "See you at noon."}'
    swapped = '{"subject": "See you at noon.", "body": "Flight change"}'
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"])
    assert not c.accepts(tok4k(swapped, add_special_tokens=False)["input_ids"])
    assert run_validators(validators_for(g), swapped) and run_validators(validators_for(g), ok) == []
    short = {**schema, "properties": {**schema["properties"], "subject": {"type": "string", "maxLength": 5}}}
    assert "const" not in ground_schema(short, request)["properties"]["subject"]  # too long for it: left alone


def test_a_named_choice_is_written_and_a_tool_with_nothing_stated_is_not_called(tok4k, vocab):
    tools = sg.ToolCallSpec(TOOLS)
    request = "Flying out of Göteborg (GOT) on 5 Mar 2025, heading to Helsinki (HEL), business class if possible"
    marked = ground_schema(tools.schema, request)
    flights = next(b for b in marked["anyOf"] if b["properties"]["name"] == {"const": "search_flights"})
    assert "cabin" in flights["properties"]["arguments"]["required"]
    c = compile_spec(Grounded(tools, request), vocab)
    call = '{"name": "search_flights", "arguments": {"origin": "GOT", "destination": "HEL", "date": "2025-03-05"%s}}'
    assert c.accepts(tok4k(call % ', "cabin": "business"', add_special_tokens=False)["input_ids"])
    assert not c.accepts(tok4k(call % "", add_special_tokens=False)["input_ids"])
    # no amount, no currency, no date, no code, no address: only tools of free text are left
    names = [b["properties"]["name"]["const"] for b in ground_schema(tools.schema, "Need to pack for Praha. "
                                                                     "Temperature outlook pls")["anyOf"]]
    assert names == ["get_weather", "delete_file"]
    # one stated value keeps a tool: a date, though no airport code
    names = [b["properties"]["name"]["const"] for b in ground_schema(
        tools.schema, "Look up six seats on a flight from Porto to Barcelona for Monday, April 20, 2026.")["anyOf"]]
    assert "search_flights" in names
    g = Grounded(tools, "Need to pack for Praha. Temperature outlook pls")
    bad = '{"name": "convert_currency", "arguments": {"amount": 222, "from_currency": "USD", "to_currency": "GBP"}}'
    assert run_validators(validators_for(g), bad)


QUAKE = {"type": "object", "properties": {"magnitude": {"type": "number"}, "depth_km": {"type": "number"},
                                          "injuries": {"type": "integer"}, "region": {"type": "string"}},
         "required": ["magnitude", "depth_km", "injuries", "region"], "additionalProperties": False}
NEWS = "BREAKING - A magnitude 7.5 earthquake struck near Hanoi at a depth of 66 km. Officials report 24 injuries."


def test_a_number_the_request_names_as_a_field_is_that_field_s(tok4k, vocab):
    from structgen.named_numbers import name_words, named_numbers

    assert name_words("depthKm") == name_words("depth_km") == {"depth", "km"}
    assert named_numbers({"magnitude": 0, "depth_km": 0, "injuries": 0}, NEWS) == {7.5: "magnitude", 66: "depth_km",
                                                                                   24: "injuries"}
    # "6 weeks (max. 19 students)": the weeks and the students; "four bedrooms, 3,027.00 EUR": not past a comma
    assert named_numbers({"weeks": 0, "maxStudents": 0}, "over 6 weeks (max. 19 students)") == {
        6: "weeks", 19: "maxStudents"}
    # 42 is the six weeks in days: named by its unit, not by "weeks"
    assert named_numbers({"days": 0, "maxStudents": 0}, "over 6 weeks (max. 19 students)") == {
        42: "days", 19: "maxStudents"}
    assert named_numbers({"bedrooms": 0, "monthly_rent": 0}, "four bedrooms, 3,027.00 EUR/month") == {4: "bedrooms"}
    # a synonym names a field too: the fans are the spectators, the attendance the spectators
    match = {"home_score": 0, "away_score": 0, "spectators": 0}
    assert named_numbers(match, "Ajax hosted Benfica; the final score was 5 to 3 in front of 72,026 fans.") == {
        72026: "spectators"}
    assert named_numbers(match, "Atlético 1-2 Brøndby (July 27, 2026). Attendance: 43,781.") == {43781: "spectators"}
    g = Grounded(sg.JsonSchema(QUAKE), NEWS)
    c = compile_spec(g, vocab)
    ok = '{"magnitude": 7.5, "depth_km": 66, "injuries": 24, "region": "Hanoi"}'
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"]) and run_validators(validators_for(g), ok) == []
    for bad in ('{"magnitude": 24, "depth_km": 66, "injuries": 24, "region": "Hanoi"}',
                '{"magnitude": 7.5, "depth_km": 24, "injuries": 66, "region": "Hanoi"}'):
        assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"]), bad
        assert run_validators(validators_for(g), bad), bad


PARTY = "Flying out of Chicago (ORD) on 2026-03-14, heading to Tokyo (HND) for 5 nights, party of seven."


def test_the_only_number_field_is_written_when_the_request_names_its_number(tok4k, vocab):
    # "party of seven" names the passengers: the optional field is written, and stays open to every stated
    # number (a field alone is not narrowed to the number it names)
    g = ground_schema(FLIGHTS, PARTY)
    assert "passengers" in g["required"] and stated_for(g["properties"]["passengers"], PARTY) == [5, 7]
    c = compile_spec(Grounded(sg.JsonSchema(FLIGHTS), PARTY), vocab)
    for ok in ('{"origin": "ORD", "destination": "HND", "passengers": 7}',
               '{"origin": "ORD", "destination": "HND", "passengers": 5}'):
        assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"]), ok
    bad = '{"origin": "ORD", "destination": "HND"}'
    assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"])
    # named by no word of the field: the optional field may be left out
    text = PARTY.replace("party of seven", "7 of us")
    assert "passengers" not in (ground_schema(FLIGHTS, text).get("required") or [])


COURSE = {"type": "object", "properties": {"course": {"type": "string"},
                                           "weeks": {"type": "integer", "minimum": 1, "maximum": 52},
                                           "capacity": {"type": "integer", "minimum": 1, "maximum": 500}},
          "required": ["course", "weeks"]}
COURSE_TEXT = "Python for Beginners with Anna Novák, runs 11 weeks, online."


def test_a_duration_in_another_unit_is_no_value_of_a_field_not_in_that_unit(tok4k, vocab):
    from structgen.stated_numbers import converted_numbers

    assert converted_numbers(COURSE_TEXT) == {77: "days"} and converted_numbers("11 weeks, max. 77") == {}
    assert converted_numbers("a meeting of two hours") == {120: "minutes"}
    # the weeks are 11; 77 (days) is no capacity, so the optional capacity states nothing and is left out
    g = ground_schema(COURSE, COURSE_TEXT)
    assert "capacity" not in g["properties"] and g["additionalProperties"] is False
    assert stated_for(g["properties"]["weeks"], COURSE_TEXT) == [11]
    c = compile_spec(Grounded(sg.JsonSchema(COURSE), COURSE_TEXT), vocab)
    ok = '{"course": "Python for Beginners", "weeks": 11}'
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"])
    for bad in ('{"course": "Python for Beginners", "weeks": 11, "capacity": 77}',
                '{"course": "Python for Beginners", "weeks": 77}'):
        assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"]), bad
    # stated as a count too, 77 is a capacity; a field in days or a duration takes the converted value
    text = COURSE_TEXT + " Max. 77 students."
    assert stated_for(ground_schema(COURSE, text)["properties"]["capacity"], text) == [77]
    text = "for two weeks"
    for field, values in (("days", [14, 2]), ("duration", [14, 2]), ("weeks", [2]), ("count", [2])):
        one = {"type": "object", "properties": {field: {"type": "integer"}}, "required": [field]}
        assert stated_for(ground_schema(one, text)["properties"][field], text) == values, field
    # required, and every stated value barred: left open
    one = {"type": "object", "properties": {"count": {"type": "integer", "minimum": 3}}, "required": ["count"]}
    assert stated_for(ground_schema(one, text)["properties"]["count"], text) == [14]


def test_a_field_in_a_measure_unit_takes_only_numbers_written_in_it():
    from structgen.named_numbers import measured

    assert measured("depth_km", "7 people were hurt; a depth of 66 km, then 12km and 3 kilometres") \
        == {66, 12, 3}
    assert measured("discountPct", "15% off, or 20 per cent on 3 items") == {15, 20}
    assert measured("injuries", "66 km") is None and measured("timeout_millis", "500 mm") is None  # no unit
    schema = {"type": "object", "properties": {"injuries": {"type": "integer"}, "depth_km": {"type": "number"}},
              "required": ["injuries"]}
    text = "Madrid, 2027-06-03 (news): 7 people were hurt when a 5.0-magnitude quake shook the area."
    props = ground_schema(schema, text)["properties"]
    assert "depth_km" not in props and 7 in stated_for(props["injuries"], text)  # 7 is no depth: left out
    text += " Its depth was 41 km."
    assert stated_for(ground_schema(schema, text)["properties"]["depth_km"], text) == [41]


def test_an_optional_field_the_request_states_nothing_for_is_left_out():
    schema = {"type": "object", "properties": {"region": {"type": "string"}, "injuries": {"type": "integer"},
                                               "depthKm": {"type": "number", "minimum": 0},
                                               "when": {"type": "string", "format": "date"},
                                               "source": {"type": "string"},
                                               "level": {"type": "integer", "maximum": 5, "default": 1}},
              "required": ["region", "injuries"]}
    text = "An earthquake struck near Sydney. Officials report 14 injuries."
    props = ground_schema(schema, text)["properties"]
    # 14 is the injuries' (named), so the depth states none; no date; free text and defaults stay as they were
    assert set(props) == {"region", "injuries", "source", "level"} and props["level"]["const"] == 1
    # an object that allows, or counts, other keys keeps them all
    for extra in ({"additionalProperties": {"type": "number"}}, {"additionalProperties": True},
                  {"patternProperties": {"^x": {}}}, {"minProperties": 3}):
        assert "depthKm" in ground_schema({**schema, **extra}, text)["properties"], extra


def test_a_free_text_part_holds_a_word_that_names_something(tok4k, vocab):
    from structgen.constraints.quote_automaton import has_content, is_quoted

    text = "Adopt me: I'm Oskar, a female cat. Can I book Ben in?"
    for bad in ("I'm", "Can", "in", "a"):
        assert not has_content(bad) and not is_quoted(bad, text), bad
    for ok in ("I'm Oskar", "Oskar", "a female cat", "Ben"):
        assert is_quoted(ok, text), ok
    # nor ends with an article, a preposition, a conjunction or a possessive ("Thank you" may end)
    ad = "Selling my Volvo XC60. Need to pack for Praha. Thank you and bye"
    for bad in ("Selling my", "pack for", "Thank you and"):
        assert not is_quoted(bad, ad), bad
    for ok in ("Selling my Volvo XC60", "pack for Praha", "Thank you"):
        assert is_quoted(ok, ad), ok
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    c = compile_spec(Grounded(sg.JsonSchema(schema), text), vocab)
    assert c.accepts(tok4k('{"name": "Oskar"}', add_special_tokens=False)["input_ids"])
    assert not c.accepts(tok4k('{"name": "I\'m"}', add_special_tokens=False)["input_ids"])


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_calls_keep_their_tool_and_required_arguments(split):
    """Of the task data's gold calls, none has its tool dropped or leaves out an argument grounding requires."""
    from structgen.train.data import tool_calls

    for ex in tool_calls.examples(split, 120, seed=4):
        gold = json.loads(ex.target)
        branches = {b["properties"]["name"]["const"]: b for b in ground_schema(ex.spec.schema, ex.prompt)["anyOf"]}
        assert gold["name"] in branches, ex.prompt
        required = branches[gold["name"]]["properties"]["arguments"].get("required", [])
        assert set(required) <= set(gold["arguments"]), (ex.prompt, required)


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_calls_keep_their_roles_and_addresses(split):
    """No gold call of the task data has a direction value ruled out of its field, or an address list other
    than the one grounding makes it."""
    from structgen.train.data import tool_calls

    checked = 0
    for ex in tool_calls.examples(split, 120, seed=3):
        gold = json.loads(ex.target)
        marked = ground_schema(ex.spec.tool(gold["name"]).schema, ex.prompt)["properties"]
        for key, node in marked.items():
            if EXCLUDE_KEY in node:
                assert gold["arguments"].get(key) not in node[EXCLUDE_KEY], (ex.prompt, key)
                checked += 1
            if "const" in node and node.get("$comment", "").startswith("structgen grounding: every address"):
                assert gold["arguments"].get(key) == node["const"], (ex.prompt, key)
                checked += 1
    assert checked > 20


@pytest.mark.timeout(600)
@grounded_runs()
@given(request=st.sampled_from([MEETING, "Flying out of Chicago (ORD), heading to Tokyo (HND), party of 3"]),
       decoding=grounded_decoding())
def test_random_logits_never_swap_the_roles(release_grounded, request, decoding):
    r = release_grounded(request, sg.JsonSchema(FLIGHTS), 48, **decoding)
    if r is None:
        return
    call = json.loads(r.text)
    roles = value_roles([call["origin"], call["destination"]], request)
    assert roles.get(call["origin"]) != "to" and roles.get(call["destination"]) != "from", r.text
