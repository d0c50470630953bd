"""Colours (``structgen.stated_colours``): a colour field is one of the colours the request names, written when
optional, and left out where it names none, through the real compiled constraint and the validator; gold
answers of the task data stay allowed."""

from __future__ import annotations

import pytest

import structgen as sg
from grounded_checks import gold_answers_pass, verdicts
from structgen.grounding import ground_schema
from structgen.stated_colours import holds_colour, stated_colours
from structgen.stated_spans import SPANS_KEY

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
    verdict = verdicts(tok4k, vocab, sg.JsonSchema(AD), text)
    assert verdict('{"price": 250, "colour": "navy"}') == (True, True)
    assert verdict('{"price": 250, "colour": "EUR"}') == (False, False)
    assert verdict('{"price": 250}')[0] is False  # written, since the request names it


def test_an_optional_colour_the_request_does_not_name_is_left_out():
    marked = ground_schema(AD, "Selling my bike, 250 EUR. Call after 6pm.")
    assert "colour" not in marked["properties"]
    required = {**AD, "required": ["price", "colour"]}  # a required one stays free text
    assert "colour" in ground_schema(required, "Selling my bike, 250 EUR")["properties"]


def test_gold_answers_with_a_colour_field_stay_allowed():
    assert gold_answers_pass(lambda properties: [k for k in properties if holds_colour(k)]) > 20
