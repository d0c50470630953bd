"""Colours (``structgen.stated_colours``): a colour field is one of the colours the request names, written when
optional, and left out where it names none, through the real compiled constraint and the validator; gold
answers of the task data stay allowed."""

from __future__ import annotations

import pytest

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.grounding import Grounded, ground_schema
from structgen.stated_colours import holds_colour, stated_colours
from structgen.stated_spans import SPANS_KEY
from structgen.validators import run_validators, validators_for

pytestmark = pytest.mark.usefixtures("one_torch_thread")

AD = {"type": "object", "properties": {"price": {"type": "number"}, "colour": {"type": "string"}},
      "required": ["price"], "additionalProperties": False}


@pytest.mark.parametrize("key, colour", [
    ("colour", True), ("paintColor", True), ("color_code", False), ("hex_colour", False), ("fuel", False),
])
def test_a_colour_field_is_named_so(key, colour):
    assert holds_colour(key) is colour


@pytest.mark.parametrize("text, colours", [
    ("Selling my Volvo XC60 (2019) in grey - electric", ("grey",)),
    ("A dark blue coat, and a Red scarf", ("dark blue", "Red")),
    ("Asking €28,220. Call after 6pm.", ()),
])
def test_the_colours_a_request_names(text, colours):
    assert stated_colours(text) == colours


def test_an_optional_colour_is_written_as_stated(tok4k, vocab):
    text = "Selling my bike in navy, 250 EUR"
    marked = ground_schema(AD, text)
    assert marked["properties"]["colour"][SPANS_KEY] == ["navy"] and "colour" in marked["required"]
    g = Grounded(sg.JsonSchema(AD), text)
    c = compile_spec(g, vocab)

    def verdict(answer: str) -> tuple[bool, bool]:  # (the constraint allows it, the validators pass it)
        ids = tok4k(answer, add_special_tokens=False)["input_ids"]
        return c.accepts(ids), not run_validators(validators_for(g), answer)

    assert verdict('{"price": 250, "colour": "navy"}') == (True, True)
    assert verdict('{"price": 250, "colour": "EUR"}') == (False, False)
    assert verdict('{"price": 250}')[0] is False  # written, since the request names it


def test_an_optional_colour_the_request_does_not_name_is_left_out():
    marked = ground_schema(AD, "Selling my bike, 250 EUR. Call after 6pm.")
    assert "colour" not in marked["properties"]
    required = {**AD, "required": ["price", "colour"]}  # a required one stays free text
    assert "colour" in ground_schema(required, "Selling my bike, 250 EUR")["properties"]


def test_gold_answers_with_a_colour_field_stay_allowed():
    from structgen.train.data import examples

    seen = 0
    for split in ("train", "heldout"):
        for ex in examples("json", split, 600, 0):
            keys = ex.spec.schema.get("properties", {}) if isinstance(ex.spec, sg.JsonSchema) else {}
            if any(holds_colour(k) for k in keys):
                seen += 1
                assert run_validators(validators_for(Grounded(ex.spec, ex.prompt)), ex.target) == [], ex.prompt
    assert seen > 20
