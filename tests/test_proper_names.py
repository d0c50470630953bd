"""Proper names (``structgen.proper_names``): a free-text field whose name says it holds a proper name (a city,
a team, a make, a person) is one of the request's capitalised names, through the real compiled constraint
and the validator; the task data's gold values stay allowed; random logits release only names."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from schema_strategies import grounded_decoding, grounded_runs

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.grounding import GROUND_KEY, STATED_KEY, Grounded, ground_schema
from structgen.proper_names import NAMES_KEY, holds_name, proper_names
from structgen.validators import run_validators, validators_for

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MATCH = {"type": "object", "properties": {
    "home_team": {"type": "string"}, "visitors": {"type": "string"}, "home_goals": {"type": "integer"},
    "event_name": {"type": "string"}}, "required": ["home_team", "visitors", "home_goals"],
    "additionalProperties": False}
REPORT = "On 2026-08-16, FC Porto hosted Malmö FF; the final score was 3 to 2 at the Summer Cup."


@pytest.mark.parametrize("key, holds", [
    ("city", True), ("shelterCity", True), ("home_team", True), ("homeTeam", True), ("visitors", True),
    ("make", True), ("patient_name", True), ("full_name", True), ("place_of_birth", True), ("employer", True),
    ("name", False), ("event_name", False), ("file_name", False), ("product_name", False), ("title", False),
    ("course", False), ("model_year", False), ("homepage", False), ("contact_email", False), ("city_code", False),
])
def test_a_field_holds_a_name_when_its_own_name_says_so(key, holds):
    assert holds_name(key) is holds


@pytest.mark.parametrize("text, names, not_names", [
    (REPORT, ["FC Porto", "Malmö FF", "Porto", "Summer Cup"], ["On", "the final", "2026-08-16", "Malmö FF;"]),
    ("Meet Kira! This 4-year-old rabbit waits for a home at our Paris shelter.", ["Kira", "Paris"],
     ["Meet", "Meet Kira", "This", "home at our Paris"]),
    ("FOR SALE: 2019 Volvo XC60, 11,000 km, asking EUR 3,843. Call after 6pm.", ["Volvo", "Volvo XC60", "XC60"],
     ["SALE", "FOR SALE", "Call", "2019 Volvo"]),
    ("Parse this: BREAKING - A magnitude 4.2 quake struck near Dublin on July 3. Attendance: 12",
     ["Dublin"], ["BREAKING", "A magnitude", "July", "Attendance"]),
    ("--\nAna Okafor | Head of Sales\nPão & Cia\nM: ana@x.org", ["Ana Okafor", "Head of Sales", "Pão & Cia"],
     ["M", "Okafor | Head", "Ana Okafor Head", "ana@x.org"]),
    ("Caller: Hi, I'd like to see Dr. Weber.\nCountry=Finland; Employer=Blue Fjord AS",
     ["Dr. Weber", "Weber", "Finland", "Blue Fjord AS"], ["Caller", "Hi", "Dr.", "Country", "Employer"]),
    ("Hotel Astoria, New York: check-in Oct 25. Based in Wien (VIE)", ["New York", "Wien", "VIE"],
     ["Oct", "Wien (VIE"]),
])
def test_the_proper_names_of_a_request_are_its_capitalised_runs(text, names, not_names):
    found = proper_names(text)
    assert all(n in found for n in names), found
    assert not any(n in found for n in not_names), found


def test_a_name_field_is_one_of_the_request_s_names_and_a_value_written_twice_is_a_repeat(tok4k, vocab):
    marked = ground_schema(MATCH, REPORT)["properties"]
    assert STATED_KEY in marked["home_team"] and GROUND_KEY not in marked["home_team"]
    assert "Malmö FF" in marked["visitors"][NAMES_KEY] and "the final" not in marked["visitors"][NAMES_KEY]
    assert GROUND_KEY in marked["event_name"] and NAMES_KEY not in marked["event_name"]  # an event's name: free text
    g = Grounded(sg.JsonSchema(MATCH), REPORT)
    c = compile_spec(g, vocab)
    ok = '{"home_team": "FC Porto", "visitors": "Malmö FF", "home_goals": 3}'
    for bad in ('{"home_team": "FC Porto", "visitors": "the final", "home_goals": 3}',
                '{"home_team": "FC Porto", "visitors": "2026", "home_goals": 3}'):
        assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"]), bad
        (issue,) = run_validators(validators_for(g), bad)
        assert issue.path == "/visitors" and "is not a name the request states (it states " in issue.message
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"]) and run_validators(validators_for(g), ok) == []
    from structgen.repeats import repeated_values

    twice = json.loads(ok.replace('"FC Porto"', '"Malmö FF"'))
    assert repeated_values(g.schema, twice) == [("Malmö FF", 1, [("home_team",), ("visitors",)])]


def test_titles_doctors_currencies_and_requests_without_names():
    dialogue = "Caller: Hi, this is Maria Park. I'd like to see Dr. Mensah.\nReceptionist: Dr. Mensah is free."
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in ("patient", "doctor", "surname")}}
    props = ground_schema(schema, dialogue)["properties"]
    assert props["doctor"][NAMES_KEY] == ["Dr. Mensah"]  # a doctor's field: the name written with "Dr."
    assert "Maria Park" in props["patient"][NAMES_KEY] and not {"Dr. Mensah", "Mensah"} & set(props["patient"][NAMES_KEY])
    assert "Mensah" in props["surname"][NAMES_KEY]  # a part of a name: the bare one
    car = ground_schema({"type": "object", "properties": {"make": {"type": "string"}}},
                        "Selling my Citroën C3, €28,220 or best offer; EUR only")["properties"]["make"]
    assert "EUR" not in car[NAMES_KEY] and "Citroën" in car[NAMES_KEY]
    # no capitalised name at all, or a length bound none fits: the field stays free text
    plain = ground_schema({"type": "object", "properties": {"city": {"type": "string"}}}, "weather in porto pls")
    assert GROUND_KEY in plain["properties"]["city"] and NAMES_KEY not in plain["properties"]["city"]
    short = ground_schema({"type": "object", "properties": {"city": {"type": "string", "maxLength": 1}}}, REPORT)
    assert NAMES_KEY not in short["properties"]["city"]


@pytest.mark.parametrize("family", ["json", "tool"])
@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_values_of_the_task_data_are_names_grounding_allows(family, split):
    """Every gold value of a field the rule makes a choice of names is one of those names."""
    from structgen.train.data import examples

    checked = 0
    for ex in examples(family, split, 150, seed=6):
        gold = json.loads(ex.target)
        schema, value = ((ex.spec.tool(gold["name"]).schema, gold["arguments"]) if family == "tool"
                         else (ex.spec.schema, gold))
        for key, node in ground_schema(schema, ex.prompt).get("properties", {}).items():
            if isinstance(node, dict) and node.get(NAMES_KEY) and key in value:
                assert value[key] in node[NAMES_KEY], (ex.prompt, key, value[key], node[NAMES_KEY])
                checked += 1
    assert checked > 20


@pytest.mark.timeout(600)
@grounded_runs()
@given(decoding=grounded_decoding())
def test_random_logits_write_names_into_name_fields(release_grounded, decoding):
    r = release_grounded(REPORT, sg.JsonSchema(MATCH), 48, **decoding)
    if r is None:
        return
    value = json.loads(r.text)
    names = proper_names(REPORT)
    assert value["home_team"] in names and value["visitors"] in names, r.text
