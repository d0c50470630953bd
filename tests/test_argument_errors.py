"""benchmarks/argument_errors.py: which arguments of a decoded tool call differ from the gold call."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def spec():
    from structgen.agent.tools import load_tools, tool_call_spec

    return tool_call_spec(load_tools("examples/tools.py"))


def call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def test_a_default_written_out_is_the_same_call(bench_script, spec):
    ae = bench_script("argument_errors")
    gold = call("get_weather", city="Porto", days=3)
    assert ae.wrong_arguments(spec, call("get_weather", city="Porto", unit="celsius", days=3), gold) == []
    assert ae.wrong_arguments(spec, call("get_weather", city="Porto", unit="fahrenheit", days=3), gold) == [
        "get_weather.unit"]


def test_each_differing_argument_is_named_once(bench_script, spec):
    ae = bench_script("argument_errors")
    gold = call("search_flights", origin="VIE", destination="EZE", date="2026-08-11")
    swapped = call("search_flights", origin="EZE", destination="VIE", date="2026-08-11")
    assert ae.wrong_arguments(spec, swapped, gold) == ["search_flights.destination", "search_flights.origin"]


def test_another_tool_or_an_invalid_call_is_not_broken_down(bench_script, spec):
    ae = bench_script("argument_errors")
    gold = call("get_weather", city="Porto")
    assert ae.wrong_arguments(spec, call("delete_file", path="Porto"), gold) == [ae.NAME]
    assert ae.wrong_arguments(spec, call("get_weather", city=""), gold) == [ae.INVALID]
    assert ae.wrong_arguments(spec, '{"name": "get_weather", "argu', gold) == [ae.INVALID]


def test_the_tally_counts_a_lone_wrong_argument_and_refuses_rows_of_another_split(bench_script):
    from structgen.train.data import examples

    ae = bench_script("argument_errors")
    exs = list(examples("tool", "heldout", 3, 1234))
    rows = [{"template": ex.template, "text": ex.target} for ex in exs]
    rows[0]["text"] = ""  # an eval row that raised: nothing decoded
    got = ae.tally(rows, exs)
    assert got["right"] == 2 and got["wrong"] == {ae.INVALID: 1} and got["only_wrong"] == {ae.INVALID: 1}
    with pytest.raises(SystemExit, match="--split and --seed"):
        ae.tally(rows, list(examples("tool", "train", 3, 1234)))
