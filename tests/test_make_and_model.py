"""Make and model (``structgen.make_and_model``): the make is the start of a product's name and the model its
end, through the real compiled constraint and the validator; gold answers of the task data stay allowed."""

from __future__ import annotations

import pytest

import structgen as sg
from grounded_checks import gold_answers_pass, verdicts
from structgen.grounding import EXCLUDE_KEY, ground_schema
from structgen.make_and_model import make_model_pair

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CAR = {"type": "object", "properties": {"brand": {"type": "string"}, "model": {"type": "string"},
                                        "model_year": {"type": "integer"}},
       "required": ["brand", "model"], "additionalProperties": False}


def test_a_pair_is_one_make_field_and_one_model_field():
    assert make_model_pair(CAR["properties"]) == ("brand", "model")  # model_year holds no model's name
    assert make_model_pair({"manufacturer": {}, "model_name": {}}) == ("manufacturer", "model_name")
    assert make_model_pair({"make": {}, "brand": {}, "model": {}}) is None  # two make fields
    assert make_model_pair({"make": {}, "colour": {}}) is None


@pytest.mark.parametrize("text, make, model", [
    ("Selling my Volvo XC60 (2019) in grey", ["Volvo XC60", "XC60"], ["Volvo", "Volvo XC60"]),
    ("FOR SALE: 2021 Land Rover Defender, diesel", ["Land Rover Defender", "Rover", "Rover Defender", "Defender"],
     ["Land", "Land Rover", "Land Rover Defender", "Rover"]),  # a middle word is neither part
])
def test_each_field_allows_only_its_own_part_of_a_name(text, make, model):
    marked = ground_schema(CAR, text)["properties"]
    assert marked["brand"][EXCLUDE_KEY] == make and marked["model"][EXCLUDE_KEY] == model


def test_a_name_written_on_its_own_stays_allowed_in_both_fields():
    marked = ground_schema(CAR, "A Volvo, and the model is an XC60. Call Ana.")["properties"]
    assert EXCLUDE_KEY not in marked["brand"] and EXCLUDE_KEY not in marked["model"]


def test_the_swap_is_neither_written_nor_passed(tok4k, vocab):
    verdict = verdicts(tok4k, vocab, sg.JsonSchema(CAR), "Selling my Citroën C3 (2009) - hybrid - 174,000 km.")
    assert verdict('{"brand": "Citroën", "model": "C3", "model_year": 2009}') == (True, True)
    assert verdict('{"brand": "C3", "model": "Citroën", "model_year": 2009}') == (False, False)
    assert verdict('{"brand": "Citroën C3", "model": "C3", "model_year": 2009}') == (False, False)


def test_gold_answers_with_a_make_and_a_model_stay_allowed():
    assert gold_answers_pass(make_model_pair) > 20
