"""Stated booleans (``structgen.stated_booleans``): a boolean field whose word the request writes only after a
negation is ``false``, one whose word it writes and never negates nor gives a value of its own ``true``, and
either is written, through grounding, the compiled constraint and the validator; the task data's gold
answers agree wherever the rules apply."""

from __future__ import annotations

import json

import pytest

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.grounding import Grounded, ground_schema
from structgen.stated_booleans import affirmed, negated
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
    ("online", "teaches it in person", True),  # its opposite, and the word not written
    ("works_remotely", "Office on-site in Porto", True),
    ("online", "online or in person, as you like", False),  # both: nothing said of it
    ("is_vaccinated", "not vaccinated yet? She is vaccinated now.", False),  # once without a negation
    ("inStock", "Volt 500 e-bike - $1780.04 - out of stock - beige", True),
    ("in_stock", "guitar, 709 EUR, not in stock", True),
])
def test_a_boolean_is_false_when_the_request_writes_its_word_only_after_a_negation(key, text, false):
    assert negated(key, text) is false


@pytest.mark.parametrize("key, text, true", [
    ("online", "Ana Sharma teaches it online over 14 weeks", True),
    ("isVaccinated", "fully vaccinated, not yet neutered", True),
    ("breakfast_included", "9 nights (breakfast included)", True),
    ("online", "teaches it in person", False),  # its opposite
    ("is_paid", "paid: no", False), ("remote", "Works remotely - yes", False),  # a label's answer: the model's
    ("remote", "Remote\tState\nn\topen", False), ("in_stock", "The in stock is n.", False),
    ("in_stock", "Enabled - true. false (in stock). With age 21.", False),
    ("remote", "No (works remotely). Atlas office chair", False), ("is_paid", "paid with - transfer", False),
    ("in_stock", "Fill in the fields: guitar, not in stock", False),  # "in" says nothing; negated
])
def test_a_boolean_is_true_when_the_request_writes_its_word_and_gives_it_no_value(key, text, true):
    assert affirmed(key, text) is true


def test_a_stated_boolean_is_that_value_and_written_through_the_constraint(tok4k, vocab):
    request = "Meet Kira! This 12-year-old rabbit is not yet vaccinated."
    g = Grounded(sg.JsonSchema(PET), request)
    assert g.schema["properties"]["is_vaccinated"]["const"] is False and "is_vaccinated" in g.schema["required"]
    c = compile_spec(g, vocab)
    ok = '{"name": "Kira", "is_vaccinated": false}'
    for bad in ('{"name": "Kira", "is_vaccinated": true}', '{"name": "Kira"}'):
        assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"]), bad
        assert run_validators(validators_for(g), bad), bad
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"]) and run_validators(validators_for(g), ok) == []
    said = ground_schema(PET, "Meet Kira! This 12-year-old rabbit is fully vaccinated.")
    assert said["properties"]["is_vaccinated"]["const"] is True and "is_vaccinated" in said["required"]
    free = ground_schema(PET, "Meet Kira! This 12-year-old rabbit is looking for a home.")
    assert "const" not in free["properties"]["is_vaccinated"] and free.get("required") == ["name"]


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_answers_write_what_the_rules_say_wherever_they_apply(split):
    from structgen.train.data import examples

    checked = {False: 0, True: 0}
    for ex in examples("json", split, 800, seed=9):
        gold = json.loads(ex.target)
        for key, node in ground_schema(ex.spec.schema, ex.prompt).get("properties", {}).items():
            if node.get("type") == "boolean" and "const" in node:
                assert gold.get(key) is node["const"], (ex.prompt, key, gold.get(key))
                checked[node["const"]] += 1
    assert min(checked.values()) > 10, checked
