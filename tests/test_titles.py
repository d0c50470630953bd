"""Titles (``structgen.titles``): a course's or a book's title field is one of the request's title-case
phrases and no person's name, through the real compiled constraint and the validator; gold answers of the task
data stay allowed."""

from __future__ import annotations

import pytest

import structgen as sg
from grounded_checks import gold_answers_pass, verdicts
from structgen.grounding import ground_schema
from structgen.stated_spans import SPANS_KEY
from structgen.titles import holds_title, titles

pytestmark = pytest.mark.usefixtures("one_torch_thread")

COURSE = {"type": "object", "properties": {"course_title": {"type": "string"}, "teacher": {"type": "string"}},
          "required": ["course_title", "teacher"], "additionalProperties": False}


@pytest.mark.parametrize("key, title", [
    ("course", True), ("courseTitle", True), ("book_title", True), ("talk", True),
    ("title", False),  # an event's, a task's or a job's too
    ("course_start_date", False), ("course_teacher", False), ("job_title", False),
])
def test_a_title_field_is_named_so(key, title):
    assert holds_title(key) is title


@pytest.mark.parametrize("text, found", [
    # a capital right after a sentence's end on its line says nothing ("Runs", "Jonas García")
    ("NEW THIS TERM >> Python for Beginners with Anna Novák. Runs 11 weeks.", ["Python for Beginners"]),
    ("Q: When does Intro to Statistics begin?\nA: In May. Jonas García teaches it.", ["Intro to Statistics"]),
    ("Northern Lights - Olivia Kovács - 1987", ["Northern Lights", "Olivia Kovács"]),  # a line's start does
    ("Jonas García teaches it. It runs 6 weeks.", ["Jonas García"]),  # and nothing else: kept
    ("Extract: “Kaze no Uta” by Ali Brown, published in 1950", ["Kaze no Uta"]),  # quoted; its author's not
    ("Sara Horvat wrote The Silent Fjord in 1902", ["Sara Horvat", "The Silent Fjord"]),  # the article kept
    ("Hi, I'm Ana Park and I teach Watercolour Basics", ["Watercolour Basics"]),  # an introduced name is a person
])
def test_the_titles_a_request_writes(text, found):
    assert titles(text) == found


def test_the_title_is_written_from_the_titles_and_never_as_the_teacher(tok4k, vocab):
    text = "NEW THIS TERM >> Conversational Spanish with Liam Lopez. Starts January 7, 2026."
    assert ground_schema(COURSE, text)["properties"]["course_title"][SPANS_KEY] == ["Conversational Spanish"]
    verdict = verdicts(tok4k, vocab, sg.JsonSchema(COURSE), text)
    assert verdict('{"course_title": "Conversational Spanish", "teacher": "Liam Lopez"}') == (True, True)
    assert verdict('{"course_title": "Liam Lopez", "teacher": "Liam Lopez"}') == (False, False)
    assert verdict('{"course_title": "Spanish", "teacher": "Liam Lopez"}') == (False, False)  # whole


def test_a_request_with_no_title_case_phrase_leaves_the_title_free_text():
    assert SPANS_KEY not in ground_schema(COURSE, "a cooking course, every monday")["properties"]["course_title"]


def test_gold_answers_with_a_title_field_stay_allowed():
    assert gold_answers_pass(lambda properties: [k for k in properties if holds_title(k)]) > 20
