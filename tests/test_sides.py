"""Home and away (``structgen.sides``): a pair of side fields takes each team on the side the request gives
it, through the real compiled constraint and the validator; gold answers of the task data stay allowed."""

from __future__ import annotations

import pytest

import structgen as sg
from grounded_checks import gold_answers_pass, verdicts
from structgen.grounding import EXCLUDE_KEY, ground_schema
from structgen.sides import name_sides, side_pair

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MATCH = {"type": "object", "properties": {
    "homeTeam": {"type": "string"}, "visitors": {"type": "string"},
    "home_goals": {"type": "integer", "minimum": 0}, "away_goals": {"type": "integer", "minimum": 0}},
    "required": ["homeTeam", "visitors"], "additionalProperties": False}
TEAMS = ["Atlético", "Ajax", "Malmö FF", "Bayern München", "Benfica"]


@pytest.mark.parametrize("text, sides", [
    ("Atlético 5-1 Ajax (21 Nov 2026)!", {"Ajax": "away"}),  # a result is written home side first
    ("On 2025-10-01, Malmö FF hosted Bayern München; the final score was 5 to 1", {"Bayern München": "away"}),
    ("Ajax vs. Benfica tonight", {"Benfica": "away"}),  # "vs." ends no clause
    ("Benfica visited Ajax on Sunday", {"Ajax": "home"}),
    ("Ajax were hosted by Benfica", {"Benfica": "home"}),
    ("Ajax and Benfica drew", {}),  # no cue: no side
    ("Ajax hosted Benfica", {"Benfica": "away"}),  # three names the fields may hold: no complement
    ("Ajax 2-1 Benfica. Benfica hosted Ajax in May.", {}),  # both sides for each: none
    ("On 2026-03-14 Ajax beat Benfica", {}),  # a date is no score
])
def test_the_side_of_a_team_is_read_from_the_words_before_it(text, sides):
    assert name_sides(TEAMS, text) == sides


@pytest.mark.parametrize("text, scores", [
    ("Atlético 5-1 Ajax", {5: "home", 1: "away"}),
    ("On July 14, 2026, Atlético hosted Ajax; the final score was 3 to 5", {3: "home", 5: "away"}),
    ("Ajax beat Atlético 3-1 away from home.", {3: "away", 1: "home"}),  # the order the sentence names them
    ("Atlético were beaten 3-1 by Ajax.", {}),  # the passive names the loser first: no order to read
    ("Atlético 2-2 Ajax", {}),  # equal numbers: nothing to tell apart
    ("It ended 3-1. Atlético hosted Ajax.", {}),  # the score's sentence names neither team
])
def test_a_score_is_read_in_the_order_its_sentence_names_the_teams(text, scores):
    from structgen.sides import score_sides

    assert score_sides("Atlético", "Ajax", text) == scores


def test_side_pairs_are_one_home_and_one_away_field():
    assert side_pair(MATCH["properties"]) == ("homeTeam", "visitors")
    assert side_pair({"home": {}, "away_team": {}}) == ("home", "away_team")
    assert side_pair({"home_city": {}, "away": {}}) is None  # a home city is no side
    assert side_pair({"home": {}, "away": {}, "guest": {}}) is None  # two away fields
    assert side_pair(MATCH["properties"], score=True) == ("home_goals", "away_goals")
    assert side_pair({"homeScore": {}, "visitors_points": {}}, score=True) == ("homeScore", "visitors_points")


def test_each_side_field_allows_no_team_of_the_other_side(tok4k, vocab):
    text = "Atlético 5-1 Ajax (21 Nov 2026)!"
    marked = ground_schema(MATCH, text)["properties"]
    assert marked["homeTeam"][EXCLUDE_KEY] == ["Ajax"] and marked["visitors"][EXCLUDE_KEY] == ["Atlético"]
    assert marked["home_goals"][EXCLUDE_KEY] == [1] and marked["away_goals"][EXCLUDE_KEY] == [5]
    verdict = verdicts(tok4k, vocab, sg.JsonSchema(MATCH), text)
    assert verdict('{"homeTeam": "Atlético", "visitors": "Ajax", "home_goals": 5, "away_goals": 1}') == (True, True)
    assert verdict('{"homeTeam": "Ajax", "visitors": "Atlético", "home_goals": 5, "away_goals": 1}') == (False, False)
    assert verdict('{"homeTeam": "Atlético", "visitors": "Ajax", "home_goals": 1, "away_goals": 5}') == (False, False)
    # a request that gives no team a side leaves both fields as they were
    assert EXCLUDE_KEY not in ground_schema(MATCH, "Atlético and Ajax drew 1-1")["properties"]["homeTeam"]


def test_gold_match_reports_stay_allowed():
    """Every gold answer of the task data with a pair of side fields passes the grounded spec's validators."""
    assert gold_answers_pass(side_pair, seeds=(0, 1, 2)) > 20
