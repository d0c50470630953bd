"""`structgen train --data FILE.jsonl`: training on your own schemas, tools and regexes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import structgen as sg
from structgen.errors import ConfigError
from structgen.train.data.from_file import load_file

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "examples" / "tools.py"
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _write(tmp_path, rows) -> Path:
    p = tmp_path / "data.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                 encoding="utf-8")
    return p


GOOD = [
    {"prompt": "Maria Lopez, 41", "schema": PERSON, "target": {"age": 41, "name": "Maria Lopez"}},
    {"prompt": [{"role": "user", "content": "Zoë Ång is 33"}], "schema": PERSON, "target": {"name": "Zoë Ång", "age": 33}},
    {"prompt": "Weather in Oslo for 3 days?", "tool": True,
     "target": {"name": "get_weather", "arguments": {"days": 3, "city": "Oslo"}}},
    {"prompt": "the code is QZX-7302", "regex": "[A-Z]{3}-[0-9]{4}", "target": "QZX-7302", "split": "heldout"},
]


def test_lines_become_canonical_examples_with_their_specs(tmp_path):
    train, held = load_file(_write(tmp_path, GOOD), TOOLS)
    assert [e.family for e in train] == ["json", "json", "tool"] and [e.family for e in held] == ["regex"]
    assert train[0].target == '{"name": "Maria Lopez", "age": 41}'  # keys in schema order, canonical spacing
    assert train[0].spec is train[1].spec  # one spec (one compiled constraint) per distinct schema
    assert train[2].target == '{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}'
    assert "### Tools" in train[2].spec.render_prompt(train[2].prompt)  # the prompt lists the tools
    assert held[0].target == "QZX-7302" and isinstance(held[0].spec, sg.Regex)
    # --source-loss: the values the prompt spells, and a call's tool name (found in the prompt's tool list)
    assert {(s.key, s.value) for s in train[0].sources} == {("name", '"Maria Lopez"'), ("age", "41")}
    name, *args = train[2].sources
    assert (name.key, name.texts) == ("name", ("get_weather",))
    assert {(s.key, s.texts) for s in args} == {("city", ("Oslo",)), ("days", ("3",))}


@pytest.mark.parametrize("bad, message", [
    ("{not json", r"data.jsonl:2: not JSON"),
    ({"prompt": "x", "target": 1}, "exactly one of schema, tool, regex"),
    ({"prompt": "x", "target": "A", "regex": "[A-Z]", "schema": PERSON}, "exactly one of"),
    ({"prompt": "x", "target": "A", "regex": "[A-Z]", "weight": 2}, r"unknown key\(s\) \['weight'\]"),
    ({"prompt": "x", "schema": PERSON, "target": {"name": "Ana", "age": "old"}}, "does not satisfy its spec"),
    ({"prompt": "x", "regex": "[A-Z]{3}", "target": "ab"}, "does not satisfy its spec"),
    ({"prompt": "x", "tool": True, "target": {"name": "fly_to_mars", "arguments": {}}}, "no tool named 'fly_to_mars'"),
    ({"prompt": "x", "tool": True, "target": {"name": "get_weather", "arguments": {"days": 3}}},
     "does not satisfy its spec"),
    ({"prompt": 5, "regex": "a", "target": "a"}, "prompt must be a string"),
    ({"prompt": "x", "regex": "a", "target": "a", "split": "test"}, "split must be"),
])
def test_bad_lines_are_refused_naming_the_line(tmp_path, bad, message):
    with pytest.raises(ConfigError, match=message) as e:
        load_file(_write(tmp_path, [GOOD[0], bad]), TOOLS)
    assert "data.jsonl:2" in str(e.value)


def test_tool_lines_need_the_tools_and_a_file_needs_training_rows(tmp_path):
    with pytest.raises(ConfigError, match="pass --tools FILE"):
        load_file(_write(tmp_path, GOOD[2:3]))
    with pytest.raises(ConfigError, match="no training examples"):
        load_file(_write(tmp_path, GOOD[3:]))
    with pytest.raises(ConfigError, match="not found"):
        load_file(tmp_path / "missing.jsonl")


def test_cli_trains_on_the_file(tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app

    data = _write(tmp_path, GOOD * 3)
    out = tmp_path / "model"
    res = CliRunner().invoke(app, ["train", "--preset", "tiny", "--steps", "3", "--out", str(out), "--data",
                                   str(data), "--tools", str(TOOLS), "--json"])
    assert res.exit_code == 0, res.output
    recipe = json.loads((out / "structgen_recipe.json").read_text())
    assert recipe["data"]["families"] == {"json": 6, "tool": 3} and recipe["data"]["n_heldout"] == 3
    model = sg.load_model(out, device="cpu")
    r = sg.Generator(model).generate("Maria Lopez, 41", sg.JsonSchema(PERSON), max_tokens=24)
    assert r.valid  # a 3-step model writes nonsense, but valid nonsense
    only_tools = CliRunner().invoke(app, ["train", "--preset", "tiny", "--out", str(tmp_path / "x"), "--tools",
                                          str(TOOLS)])
    assert only_tools.exit_code == 2 and "pass --data too" in only_tools.output
