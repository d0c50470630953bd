"""Negated booleans (``structgen.stated_booleans``): a boolean field whose word the request writes only after a
negation is ``false`` and written, through grounding, the compiled constraint and the validator; the task
data's gold answers agree wherever the rule applies."""

from __future__ import annotations

import json

import pytest

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.grounding import Grounded, ground_schema
from structgen.stated_booleans import negated
from structgen.validators import run_validators, validators_for

PET = {"type": "object", "properties": {"name": {"type": "string"}, "is_vaccinated": {"type": "boolean"}},
       "required": ["name"], "additionalProperties": False}


@pytest.mark.parametrize("key, text, false", [
    ("is_vaccinated", "This 12-year-old rabbit is not yet vaccinated", True),
    ("pets_allowed", "Toronto - four bed - no pets", True),
    ("breakfast_included", "9 nights; no breakfast.", True),
    ("isVegetarian", "It is not vegetarian.", True),
    ("isVaccinated", "fully vaccinated, not yet neutered", False),
    ("breakfast", "(breakfast included)", False),
    ("is_paid", "paid: no", False),  # a label's answer is left to the model
    ("online", "teaches it in person", False),  # nothing said of it
    ("is_vaccinated", "not vaccinated yet? She is vaccinated now.", False),  # once without a negation
])
def test_a_boolean_is_false_when_the_request_writes_its_word_only_after_a_negation(key, text, false):
    assert negated(key, text) is false


def test_a_negated_boolean_is_false_and_written_through_the_constraint(tok4k, vocab):
    request = "Meet Kira! This 12-year-old rabbit is not yet vaccinated."
    g = Grounded(sg.JsonSchema(PET), request)
    assert g.schema["properties"]["is_vaccinated"]["const"] is False and "is_vaccinated" in g.schema["required"]
    c = compile_spec(g, vocab)
    ok = '{"name": "Kira", "is_vaccinated": false}'
    for bad in ('{"name": "Kira", "is_vaccinated": true}', '{"name": "Kira"}'):
        assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"]), bad
        assert run_validators(validators_for(g), bad), bad
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"]) and run_validators(validators_for(g), ok) == []
    free = ground_schema(PET, "Meet Kira! This 12-year-old rabbit is fully vaccinated.")
    assert "const" not in free["properties"]["is_vaccinated"] and free.get("required") == ["name"]


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_answers_write_false_wherever_the_rule_says_so(split):
    from structgen.train.data import examples

    checked = 0
    for ex in examples("json", split, 800, seed=9):
        gold = json.loads(ex.target)
        for key, node in ground_schema(ex.spec.schema, ex.prompt).get("properties", {}).items():
            if node.get("type") == "boolean" and node.get("const") is False:
                assert gold.get(key) is False, (ex.prompt, key, gold.get(key))
                checked += 1
    assert checked > 10
