"""Phone numbers (``structgen.stated_phones``): a field whose name says it holds a phone number is one of the
request's phone numbers, through the real compiled constraint and the validator; the task data's gold phone
numbers stay allowed."""

from __future__ import annotations

import json

import pytest

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.grounding import GROUND_KEY, Grounded, ground_schema
from structgen.stated_phones import holds_phone, stated_phones
from structgen.stated_spans import spans_of
from structgen.validators import run_validators, validators_for

SIGNATURE = "Thanks for your help!\n\nBest regards,\nAna Okafor\nCTO, Øresund Logistics\nana@x.org | +45 303 94262"


@pytest.mark.parametrize("key, holds", [
    ("phone", True), ("phone_number", True), ("phoneNumber", True), ("direct_line", True), ("directLine", True),
    ("mobile", True), ("tel", True), ("fax", True), ("phone_type", False), ("phone_verified", False),
    ("line", False), ("headline", False), ("city", False), ("contact_number", False)])
def test_a_field_holds_a_phone_number_when_its_own_name_says_so(key, holds):
    assert holds_phone(key) is holds


@pytest.mark.parametrize("text, phones", [
    (SIGNATURE, ["+45 303 94262"]),
    ("Olivia Costa | Lead Designer\nHelix Bio\nT: +45 381 51708\nM: olivia@acme.test", ["+45 381 51708"]),
    ("Send it to Chloé Costa, Kungsgatan 83, Barcelona, tel 0471074736!", ["0471074736"]),
    ("call (555) 123-4567 or 555-0134 today", ["(555) 123-4567", "555-0134"]),
    ("On 2025-10-01 (or 01.10.2025), asking 53083.20 EUR for 118,000 km; parcel 1Z165837225, order 57777", []),
])
def test_the_phone_numbers_of_a_request_are_its_digit_groups_of_seven_digits_or_more(text, phones):
    assert list(stated_phones(text)) == phones


def test_a_phone_field_is_a_stated_phone_number_through_the_constraint(tok4k, vocab):
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "direct_line": {"type": "string"}},
              "required": ["name", "direct_line"], "additionalProperties": False}
    g = Grounded(sg.JsonSchema(schema), SIGNATURE)
    assert spans_of(g.schema["properties"]["direct_line"]) == {"kind": "phone number", "values": ["+45 303 94262"]}
    c = compile_spec(g, vocab)
    ok = '{"name": "Ana Okafor", "direct_line": "+45 303 94262"}'
    bad = '{"name": "Ana Okafor", "direct_line": "Thanks for your help"}'
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"]) and run_validators(validators_for(g), ok) == []
    assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"])
    (issue,) = run_validators(validators_for(g), bad)
    assert "is not a phone number the request states (it states +45 303 94262)" in issue.message
    plain = ground_schema(schema, "Ana Okafor, no number yet")  # none stated: free text, as before
    assert GROUND_KEY in plain["properties"]["direct_line"] and spans_of(plain["properties"]["direct_line"]) is None


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_phone_numbers_of_the_task_data_are_stated_phone_numbers(split):
    from structgen.train.data import examples

    checked = 0
    for ex in examples("json", split, 600, seed=8):
        gold = json.loads(ex.target)
        for key, node in ground_schema(ex.spec.schema, ex.prompt).get("properties", {}).items():
            spans = spans_of(node)
            if spans and spans["kind"] == "phone number" and key in gold:
                assert gold[key] in spans["values"], (ex.prompt, key, gold[key], spans["values"])
                checked += 1
    assert checked > 10


def test_an_optional_phone_field_of_a_request_that_states_a_phone_number_is_written():
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "phone": {"type": "string"}},
              "required": ["name"]}
    stated = ground_schema(schema, "-- Olivia Costa | Lead Designer | T: +45 381 51708")
    assert stated["required"] == ["name", "phone"]
    assert ground_schema(schema, "-- Olivia Costa | Lead Designer").get("required") == ["name"]  # none stated
