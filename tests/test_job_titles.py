"""Job titles (``structgen.job_titles``): a signature's job field is one of the request's job titles and its
name fields hold none, through the real compiled constraint and the validator; gold answers of the task data
stay allowed."""

from __future__ import annotations

import pytest

import structgen as sg
from grounded_checks import gold_answers_pass, verdicts
from structgen.grounding import EXCLUDE_KEY, STATED_KEY, ground_schema
from structgen.job_titles import job_field, job_title, job_titles
from structgen.proper_names import holds_name, key_words
from structgen.stated_spans import SPANS_KEY

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CARD = {"type": "object", "properties": {"full_name": {"type": "string"}, "title": {"type": "string"},
                                         "company": {"type": "string"}},
        "required": ["full_name", "title", "company"], "additionalProperties": False}


@pytest.mark.parametrize("name, job", [
    ("Project Manager", True), ("CTO", True), ("Head of Sales", True), ("Director of Product Marketing", True),
    ("Lead Designer", True), ("Blue Fjord AS", False), ("Ana Okafor", False), ("Bank of America", False),
    ("CTO Øresund Logistics", False), ("Head of Sales Marketing Europe", False),
])
def test_a_job_title_ends_with_a_job_word_or_takes_of_and_its_field(name, job):
    assert job_title(name) is job


@pytest.mark.parametrize("text, jobs", [
    ("-- \nMehmet Horvat | Head of Sales\nBlue Fjord AS\nm: mehmet@acme.test", ["Head of Sales"]),  # not "Head"
    ("Best regards,\nŁukasz Kovács\nCTO Øresund Logistics", ["CTO"]),
    ("Product Manager: requires Excel and Rust", ["Product Manager"]),  # a label's name counts
    ("Best regards,\nBen Ivanova\nHead of Sales Globex", ["Head of Sales", "Head of Sales Globex"]),
    ("Meet Ana at the Lisbon office", []),
])
def test_the_job_titles_a_request_writes(text, jobs):
    assert job_titles(text) == jobs


def test_title_is_a_job_only_beside_a_person_or_an_organisation():
    assert job_field(CARD["properties"]) == "title"
    assert job_field({"position": {}, "email": {}}) == "position"
    assert job_field({"title": {}, "date": {}, "attendees": {}}) is None  # an event's title
    assert job_field({"course_title": {}, "teacher": {}}) is None
    assert job_field({"title": {}, "job_title": {}, "name": {}}) is None  # two job fields


def test_the_job_field_takes_a_job_title_and_the_company_none(tok4k, vocab):
    text = "-- \nDana Ivanova | CTO | Nordwind GmbH\nM: dana.ivanova@mail.example.net"
    marked = ground_schema(CARD, text)["properties"]
    assert marked["title"][STATED_KEY] == text and marked["title"][SPANS_KEY] == ["CTO"]
    verdict = verdicts(tok4k, vocab, sg.JsonSchema(CARD), text)
    good = '{"full_name": "Dana Ivanova", "title": "CTO", "company": "Nordwind GmbH"}'
    assert verdict(good) == (True, True)
    assert verdict(good.replace('"CTO"', '"Nordwind GmbH"')) == (False, False)
    assert verdict(good.replace('"Nordwind GmbH"}', '"CTO"}')) == (False, False)


def test_a_name_written_only_inside_a_job_title_is_no_company():
    text = "François Silva | Head of Sales | Globex | M: francois.silva53@globex.example"
    assert "Sales" in ground_schema(CARD, text)["properties"]["company"][EXCLUDE_KEY]


def test_a_request_with_no_job_title_leaves_the_fields_as_they_were():
    text = "Dana Ivanova, Nordwind GmbH, dana@mail.example.net"
    assert SPANS_KEY not in ground_schema(CARD, text)["properties"]["title"]


def test_gold_answers_with_a_job_field_stay_allowed():
    assert gold_answers_pass(lambda properties: job_field(properties) and [  # the job field and the name fields
        k for k in properties if k == job_field(properties) or holds_name(k) or key_words(k) == ["name"]]) > 20
