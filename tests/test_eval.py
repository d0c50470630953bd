"""``structgen eval``'s scoring and report: field accuracy, execution accuracy on the real shop database,
semantic equality of alert rules, and a tiny end-to-end run with random logits that writes the report."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import structgen as sg
from structgen.train.evaluate import MODES, Row, evaluate, field_accuracy, score
from structgen.train.eval_report import markdown, write_report

from scripted_model import ScriptedLogits


def test_field_accuracy_counts_missing_and_extra_fields():
    gold = {"name": "Ana", "age": 41, "tags": ["a", "b"], "home": {"city": "Porto"}}
    assert field_accuracy(gold, gold) == 1.0
    assert field_accuracy({"name": "Ana", "age": 41.0, "tags": ["a", "b"], "home": {"city": "Porto"}}, gold) == 1.0
    assert field_accuracy({"name": "Ana", "age": 40, "tags": ["a", "b"], "home": {"city": "Porto"}}, gold) == 0.8
    assert field_accuracy({"name": "Ana"}, gold) == 0.2  # four gold leaves missing
    assert field_accuracy({**gold, "extra": 1}, gold) == 5 / 6  # an extra field is wrong too
    assert field_accuracy({"ok": True}, {"ok": 1}) == 0.0  # booleans are not numbers


def _ex(family, target, gold, spec=None):
    return SimpleNamespace(family=family, target=target, gold=gold, spec=spec)


def test_tool_calls_need_the_name_and_every_argument():
    from structgen.train.data.tool_calls import spec

    gold = {"name": "get_weather", "arguments": {"city": "Porto", "days": 2}}
    ex = _ex("tool", json.dumps(gold), gold, spec())
    assert score(ex, json.dumps(gold), True) == (1.0, True)
    assert score(ex, '{"name": "get_weather", "arguments": {"city": "Porto"}}', True)[0] == 0.0
    assert score(ex, '{"name": "get_weather", "arguments": {"city": "Porto", "days": 3}}', True)[0] == 0.0
    assert score(ex, '{"name": "get_weather", "arguments": {"city": "Porto", "days": 2, "unit": "fahrenheit"}}',
                 True)[0] == 0.0
    assert score(ex, '{"name": "search_flights", "arguments": {"city": "Porto", "days": 2}}', True)[0] == 0.0
    assert score(ex, '{"name": "get_weather", "arguments": {"city": "Porto", "days": 20}}', False)[0] == 0.0
    assert score(ex, "not json", False) == (0.0, False)


def test_a_default_written_out_is_the_same_call():
    """The tool receives the same arguments whether a default is written out or left to apply."""
    from structgen.train.data.tool_calls import spec

    gold = {"name": "get_weather", "arguments": {"city": "Porto", "days": 2}}
    ex = _ex("tool", json.dumps(gold), gold, spec())
    written = '{"name": "get_weather", "arguments": {"city": "Porto", "unit": "celsius", "days": 2}}'
    assert score(ex, written, True) == (1.0, False)  # the same call, not the same text
    flight = {"name": "search_flights", "arguments": {"origin": "LIS", "destination": "OPO", "date": "2026-03-01",
                                                      "cabin": "economy"}}
    ex = _ex("tool", json.dumps(flight), flight, spec())
    assert score(ex, json.dumps({**flight, "arguments": {**flight["arguments"], "passengers": 1}}), True)[0] == 1.0
    unstated = {k: v for k, v in flight["arguments"].items() if k != "cabin"}
    assert score(ex, json.dumps({**flight, "arguments": unstated}), True)[0] == 1.0
    assert score(ex, json.dumps({**flight, "arguments": {**unstated, "passengers": 2}}), True)[0] == 0.0


def test_same_call_fills_the_defaults_of_a_schema_tool():
    from structgen.agent.tools import Tool, tool_call_spec
    from structgen.train.evaluate import same_call

    t = Tool("ping", "Ping a host.", {"type": "object", "properties": {
        "host": {"type": "string"}, "count": {"type": "integer", "default": 4}}, "required": ["host"]})
    s = tool_call_spec([t])
    gold = {"name": "ping", "arguments": {"host": "a.example"}}
    assert same_call(s, {"name": "ping", "arguments": {"host": "a.example", "count": 4}}, gold)
    assert not same_call(s, {"name": "ping", "arguments": {"host": "a.example", "count": 5}}, gold)
    assert not same_call(s, {"name": "ping", "arguments": {"host": 7}}, gold)  # not a valid call


def test_sql_execution_accuracy_on_the_shop_database(shop_db):
    spec = sg.Sql(shop_db)
    gold = "SELECT COUNT(*) FROM customers WHERE country = 'Germany'"
    ex = _ex("sql", gold, gold, spec)
    assert score(ex, gold, True) == (1.0, True)
    same_rows = "SELECT COUNT(id) FROM customers WHERE country = 'Germany'"
    assert score(ex, same_rows, True) == (1.0, False)  # other text, the same rows
    assert score(ex, "SELECT COUNT(*) FROM customers", True)[0] == 0.0
    assert score(ex, "SELECT nope FROM customers", False)[0] == 0.0  # does not run: wrong, not a crash
    ordered = _ex("sql", "", "SELECT name FROM products ORDER BY price DESC LIMIT 3", spec)
    assert score(ordered, "SELECT name FROM products ORDER BY price ASC LIMIT 3", True)[0] == 0.0


def test_alert_rules_compare_canonical_forms():
    gold = 'when cpu.usage > 90% and host in ["web-1", "web-2"] then notify "#ops" severity high'
    ex = _ex("alert", gold, gold)
    swapped = 'when host in ["web-2", "web-1"] and cpu.usage > 90% then notify "#ops" severity high'
    assert score(ex, swapped, True) == (1.0, False)
    assert score(ex, gold.replace("90%", "80%"), True)[0] == 0.0
    assert score(ex, "when", False)[0] == 0.0


def test_a_random_logits_run_writes_the_report(tmp_path, tok4k):
    model = sg.models.RandomLogits(tok4k, seed=0)
    rows = evaluate(model, families=("json", "alert"), n=1, modes=("constrained", "unconstrained"))
    assert [(r.family, r.mode) for r in rows] == [("json", "constrained"), ("json", "unconstrained"),
                                                  ("alert", "constrained"), ("alert", "unconstrained")]
    by = {(r.family, r.mode): r for r in rows}
    assert by[("json", "constrained")].valid == 1.0 and by[("alert", "constrained")].valid == 1.0
    assert all(isinstance(r, Row) and r.n == 1 and 0 <= r.accuracy <= 1 for r in rows)
    paths = write_report(rows, tmp_path / "eval", title="random logits", meta={"model": "random"})
    assert [p.name for p in paths] == ["eval.json", "eval.md", "eval.svg"]
    data = json.loads(paths[0].read_text())
    assert len(data["rows"]) == 4 and len(data["examples"]) == 4
    assert paths[2].read_text().startswith("<svg") and "json" in paths[2].read_text()
    assert "| json | constrained |" in markdown(rows, "t")
    with pytest.raises(sg.StructgenError, match="unknown eval mode"):
        evaluate(model, families=("json",), n=1, modes=("fast",))
    assert set(MODES) == {"constrained", "unconstrained", "one-token", "grounded", "grounded-one-token"}


def test_the_threshold_applies_to_the_threshold_modes_only(tok4k, monkeypatch):
    """``threshold``: what the constrained, unconstrained and grounded modes commit at; the one-token modes
    decode one token per call whatever it is; a threshold out of (0, 1] is refused before anything runs."""
    from structgen.sampler import Generator

    seen: list[tuple] = []
    real = Generator.generate

    def spy(self, prompt, spec, max_tokens=128, **kw):
        seen.append((kw.get("threshold"), kw.get("tokens_per_step"), bool(kw.get("ground"))))
        return real(self, prompt, spec, max_tokens, **kw)

    monkeypatch.setattr(Generator, "generate", spy)
    model = sg.models.RandomLogits(tok4k, seed=0)
    evaluate(model, families=("json",), n=1, modes=tuple(MODES), threshold=0.7)
    assert seen == [(0.7, None, False), (0.7, None, False), (None, 1, False), (0.7, None, True), (None, 1, True)]
    for bad in (0, 1.5, -0.1):
        with pytest.raises(sg.StructgenError, match="commit threshold"):
            evaluate(model, families=("json",), n=1, modes=("constrained",), threshold=bad)


def test_the_fallback_column_counts_answers_the_strict_grammar_wrote(tok4k):
    # a model that insists on a column index out of range: valid only through the strict fallback
    model = ScriptedLogits(tok4k, "SELECT name FROM customers ORDER BY 3")
    rows = evaluate(model, families=("sql",), n=1, modes=("constrained", "unconstrained"))
    by = {r.mode: r for r in rows}
    assert by["constrained"].valid == 1.0 and by["constrained"].fallback == 1.0
    assert by["unconstrained"].valid == 0.0 and by["unconstrained"].fallback == 0.0
    assert by["constrained"].examples[0].fallback and "fallback" in by["constrained"].as_dict()


def test_value_lookup_tells_converted_values_from_copied_ones(tok4k):
    """benchmarks/value_lookup.py's classes: a value token the request shows is copied, one it states in
    other words (the month of "2 July 2027") is converted; keys and punctuation are neither."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "value_lookup.py"
    spec = importlib.util.spec_from_file_location("value_lookup", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    gold = {"name": "create_event", "arguments": {"title": "Dentist", "date": "2027-07-02", "start_time": "16:30"}}
    ex = SimpleNamespace(family="tool", prompt="Dentist on 2 July 2027 at 16:30, please.",
                         target=json.dumps(gold), gold=gold)
    slots = {text: (converted, month) for _, text, converted, month in bench.value_tokens(tok4k, ex)}
    assert slots["07"] == (True, True)  # the month, stated as a name
    assert slots["02"] == (True, False)  # "2 July": the day is padded
    assert slots["16"] == slots["30"] == (False, False)  # copied
    dentist = [v for t, v in slots.items() if t in "Dentist"]  # however the tokenizer cuts the word
    assert dentist and all(v == (False, False) for v in dentist)
    assert not {"create", "ate", "title", "date"} & set(slots)  # the tool's name and the keys are not values


def _data_file(tmp_path):
    person = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    lines = [{"prompt": "Maria Lopez, 41", "schema": person, "target": {"name": "Maria Lopez", "age": 41}},
             {"prompt": "Tom Berg is 35", "schema": person, "target": {"name": "Tom Berg", "age": 35},
              "split": "heldout"},
             {"prompt": "The ticket is QZX-7302.", "regex": "[A-Z]{3}-[0-9]{4}", "target": "QZX-7302",
              "split": "heldout"},
             {"prompt": "A long list", "regex": "[a-z ]+", "target": "word " * 60 + "end", "split": "heldout"}]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_your_own_examples_are_scored_by_family(tmp_path, tok4k):
    """``structgen eval --data``: a data file's held-out lines (or its training lines), by family; a regex
    answer is right or not; a long answer gets a canvas that holds it; a family the file lacks is refused."""
    from structgen.sampler import Generator
    from structgen.train.evaluate import canvas_for, file_examples

    path = _data_file(tmp_path)
    held, train = file_examples(path), file_examples(path, split="train")
    assert {k: [e.prompt for e in v] for k, v in held.items()} == {
        "json": ["Tom Berg is 35"], "regex": ["The ticket is QZX-7302.", "A long list"]}
    assert list(train) == ["json"] and train["json"][0].prompt == "Maria Lopez, 41"
    gen = Generator(sg.models.RandomLogits(tok4k, seed=0))
    assert canvas_for(held["json"][0], gen) == 128 and canvas_for(held["regex"][0], gen) == 64
    assert canvas_for(held["regex"][1], gen) > 64 and canvas_for(held["regex"][1], gen) % 32 == 0
    rows = evaluate(ScriptedLogits(tok4k, "QZX-7302"), families=("regex",), n=1, modes=("constrained",), own=held)
    assert (rows[0].n, rows[0].accuracy, rows[0].exact) == (1, 1.0, 1.0)
    rows = evaluate(ScriptedLogits(tok4k, '{"name": "Tom Berg", "age": 53}'), families=("json",), n=5,
                    modes=("constrained", "grounded"), own=held)
    assert [(r.mode, r.n, r.accuracy) for r in rows] == [("constrained", 1, 0.5), ("grounded", 1, 1.0)]
    with pytest.raises(sg.StructgenError, match=r"no heldout lines of family tool; it has: json \(1\), regex \(2\)"):
        evaluate(gen.model, families=("tool",), n=1, modes=("constrained",), own=held)


def test_cli_eval_of_a_data_file(tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app

    path = _data_file(tmp_path)
    res = CliRunner().invoke(app, ["eval", "--model", "random", "--data", str(path), "--modes", "constrained",
                                   "--out", str(tmp_path / "ev")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert [r["family"] for r in report["rows"]] == ["json", "regex"] and report["meta"]["data"] == str(path)
    assert [r["n"] for r in report["rows"]] == [1, 2] and "on mine.jsonl" in res.output
    bad = CliRunner().invoke(app, ["eval", "--model", "random", "--data", str(path), "--families", "sql",
                                   "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "no heldout lines of family sql" in bad.output and not (tmp_path / "x").exists()
    bad = CliRunner().invoke(app, ["eval", "--tools", "examples/tools.py", "--out", str(tmp_path / "y")])
    assert bad.exit_code == 2 and "pass --data too" in bad.output
    only_train = tmp_path / "train.jsonl"
    only_train.write_text(path.read_text().splitlines()[0] + "\n")
    bad = CliRunner().invoke(app, ["eval", "--model", "random", "--data", str(only_train),
                                   "--out", str(tmp_path / "z")])
    assert bad.exit_code == 2 and "has no heldout lines to score" in bad.output and not (tmp_path / "z").exists()
    only_held = tmp_path / "held.jsonl"  # a test set of your own, no training line: scored as it is
    only_held.write_text("\n".join(path.read_text().splitlines()[1:]) + "\n")
    res = CliRunner().invoke(app, ["eval", "--model", "random", "--data", str(only_held), "--modes", "constrained",
                                   "--out", str(tmp_path / "held")])
    assert res.exit_code == 0, res.output
    assert [r["n"] for r in json.loads((tmp_path / "held" / "eval.json").read_text())["rows"]] == [1, 2]


def test_the_training_split_is_scored_on_the_sql_templates_of_the_models_recipe(tmp_path):
    """``--split train`` of a model trained with ``--sql-shapes 2`` draws version 2's composed SQL templates
    too (its recipe says so); a model without a recipe, or with a broken one, is scored on version 1's."""
    from structgen.models.default import RECIPE_FILE
    from structgen.train.evaluate import trained_sql_shapes

    model = SimpleNamespace(model=SimpleNamespace(config=SimpleNamespace(_name_or_path=str(tmp_path))))
    assert trained_sql_shapes(model) == 1  # no recipe
    (tmp_path / RECIPE_FILE).write_text(json.dumps({"kind": "structgen-trained", "config": {"sql_shapes": 2}}))
    assert trained_sql_shapes(model) == 2
    (tmp_path / RECIPE_FILE).write_text("{not json")
    assert trained_sql_shapes(model) == 1
    assert trained_sql_shapes(sg.load_model()) == 1  # the shipped model: run 11's data
    assert trained_sql_shapes(SimpleNamespace()) == 1  # not a Hugging Face model at all


def test_the_first_contact_set_is_a_held_out_file_whose_answers_satisfy_their_specs():
    """``benchmarks/first_contact.jsonl``: every line held out, every target valid for its spec (``load_file``
    checks each with the validators decoding uses), every example tool called twice."""
    from collections import Counter
    from pathlib import Path

    from structgen.train.evaluate import file_examples

    root = Path(__file__).resolve().parent.parent
    path = root / "benchmarks" / "first_contact.jsonl"
    held = file_examples(path, root / "examples" / "tools.py")
    assert file_examples(path, root / "examples" / "tools.py", split="train") == {}
    assert len(held["json"]) == 10
    assert Counter(json.loads(ex.target)["name"] for ex in held["tool"]) == {
        name: 2 for name in ("get_weather", "create_event", "send_email", "search_flights", "set_reminder",
                             "convert_currency", "delete_file")}
