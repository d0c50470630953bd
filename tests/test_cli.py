"""The ``structgen`` command line, run in-process with typer's runner."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from structgen.cli import app

runner = CliRunner()


def test_generate_regex_with_random_model():
    r = runner.invoke(app, ["generate", "a code", "--regex", "[A-Z]{2}[0-9]{3}", "--model", "random", "-n", "8"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().splitlines()[0][:2].isupper()


def test_generate_schema_json_output(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"ok": {"type": "boolean"}},
                                  "required": ["ok"]}))
    r = runner.invoke(app, ["generate", "x", "--schema", str(schema), "--model", "random", "-n", "16", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["valid"] and isinstance(out["value"]["ok"], bool) and out["engine"] == "automaton"


def test_trace_shows_steps():
    r = runner.invoke(app, ["generate", "x", "--choice", "yes,no", "--model", "random", "-n", "4", "--trace"])
    assert r.exit_code == 0, r.output
    assert "step" in r.output and ("forced" in r.output or "model" in r.output)


def test_clear_errors_exit_2(tmp_path):
    r = runner.invoke(app, ["generate", "x", "--schema", str(tmp_path / "missing.json"), "--model", "random"])
    assert r.exit_code == 2 and "not found" in r.output
    r = runner.invoke(app, ["generate", "x", "--regex", "a", "--choice", "b", "--model", "random"])
    assert r.exit_code == 2 and "exactly one" in r.output
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}')
    r = runner.invoke(app, ["generate", "x", "--schema", str(schema), "--model", "random", "-n", "2"])
    assert r.exit_code == 2 and "too small" in r.output
