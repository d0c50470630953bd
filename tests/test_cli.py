"""The ``structgen`` command line, run in-process with typer's runner."""

from __future__ import annotations

import json
import re

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


def test_generate_ground_quotes_the_prompt(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"city": {"type": "string"}},
                                  "required": ["city"], "additionalProperties": False}))
    prompt = "She lives in Porto, near the river."
    r = runner.invoke(app, ["generate", prompt, "--schema", str(schema), "--model", "random", "-n", "24", "--json",
                            "--ground"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["value"]["city"] in prompt


def test_errors_print_brackets_as_they_are():
    r = runner.invoke(app, ["generate", "abc", "--regex", "[a-z]+", "--model", "random", "--ground"])
    assert r.exit_code == 2 and "Regex('[a-z]+')" in r.output and "JSON Schema specs" in r.output


# ------------------------------------------------------------------------------------------ structgen sql
QUESTION = "How many customers are from Germany?"


def _sql_args(shop_db, *extra, model: str | None = None):
    """``structgen sql`` on the shop database; the embedded model unless ``model`` (``"random"``: random
    logits, whose queries take the endgame search 30 s each on two cores; the embedded model answers in 3)."""
    chosen = [] if model is None else ["--model", model]
    return ["sql", "--db", str(shop_db), QUESTION, *chosen, "--max-tokens", "48", *extra]


def test_sql_prints_one_valid_select(shop_db):
    from structgen.sql.schema import DbSchema
    from structgen.validators.sql import sql_validators

    r = runner.invoke(app, _sql_args(shop_db))
    assert r.exit_code == 0, r.output
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("SELECT "), r.stdout
    for check in sql_validators(DbSchema.read(shop_db)):
        assert check(lines[0]) == [], (check.name, lines[0])
    assert "valid=True" in r.output  # the summary, on stderr


def test_sql_run_prints_a_table(shop_db):
    from structgen.sql import run_query

    # a wide console, so that rich does not wrap the headers (they are the expressions as written)
    r = runner.invoke(app, _sql_args(shop_db, "--run"), env={"COLUMNS": "2000"})
    assert r.exit_code == 0, r.output
    sql, table = r.stdout.split("\n", 1)
    assert sql.startswith("SELECT ")
    columns = run_query(shop_db, sql).columns
    assert columns and columns[0] in table, (columns, table)
    assert re.search(r"\d+ rows? in [0-9.]+ ms", table), table


def test_sql_json_run(shop_db):
    from structgen.sql import run_query

    r = runner.invoke(app, _sql_args(shop_db, "--json", "--run"))
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert {"text", "valid", "columns", "rows"} <= set(out), sorted(out)
    assert out["valid"] is True and out["text"].startswith("SELECT ")
    expected = run_query(shop_db, out["text"], max_rows=20)
    assert out["columns"] == expected.columns
    assert out["rows"] == json.loads(json.dumps([list(x) for x in expected.rows], default=str))
    assert out["truncated"] == expected.truncated


def test_sql_ground_writes_only_stated_literals(shop_db):
    from structgen.sql.grounded import StatedLiteralsValidator, stated_literals
    from structgen.sql.schema import DbSchema

    # one run: --seed only moves sampling, and greedy decoding of --model random writes the same query for
    # every seed (three seeds here were three identical runs of 30 s); the grounded property itself is
    # driven through many random-logit runs in tests/test_sql_grounded.py
    r = runner.invoke(app, _sql_args(shop_db, "--ground", model="random"))
    assert r.exit_code == 0, r.output
    text = r.stdout.strip().splitlines()[0]
    assert "'" in text, text  # the query writes string literals, so the check below reads something
    assert StatedLiteralsValidator(stated_literals(QUESTION, DbSchema.read(shop_db)))(text) == [], text


def test_sql_strict_writes_in_the_strict_grammar(shop_db, tok4k, vocab):
    import structgen as sg
    from structgen.sql import run_query

    # the embedded model answers this with an output alias in ORDER BY ("... AS n ... ORDER BY n DESC"), which
    # the default grammar allows and the strict one does not
    question = "How many orders per status?"
    strict = sg.compile(sg.Sql(shop_db, strict=True), tok4k)
    r = runner.invoke(app, ["sql", "--db", str(shop_db), question, "--strict", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["valid"] is True and not out["fallback"], out
    assert strict.accepts(vocab.encode(out["text"])), out["text"]
    run_query(shop_db, out["text"])
    default = json.loads(runner.invoke(app, ["sql", "--db", str(shop_db), question, "--json"]).stdout)["text"]
    assert not strict.accepts(vocab.encode(default)), default  # the option is what made the difference


def test_sql_missing_database_exits_2(tmp_path):
    missing = tmp_path / "nowhere" / "missing.sqlite"
    r = runner.invoke(app, ["sql", "--db", str(missing), QUESTION, "--model", "random", "--max-tokens", "48"])
    assert r.exit_code == 2, r.output
    flat = "".join(r.output.split())  # rich wraps long lines: compare without whitespace
    assert str(missing) in flat and "notfound" in flat, r.output
    assert not missing.exists()


def test_eval_writes_the_table_and_chart(tmp_path):
    out = tmp_path / "ev"
    r = runner.invoke(app, ["eval", "--model", "random", "-n", "1", "--families", "json,alert",
                            "--modes", "constrained,unconstrained", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert {p.name for p in out.iterdir()} == {"eval.json", "eval.md", "eval.svg", "examples.jsonl"}
    rows = json.loads((out / "eval.json").read_text())["rows"]
    streamed = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    assert [(x["family"], x["mode"]) for x in streamed] == [("json", "constrained"), ("json", "unconstrained"),
                                                            ("alert", "constrained"), ("alert", "unconstrained")]
    assert streamed == json.loads((out / "eval.json").read_text())["examples"]
    assert [(x["family"], x["mode"]) for x in rows] == [("json", "constrained"), ("json", "unconstrained"),
                                                        ("alert", "constrained"), ("alert", "unconstrained")]
    bad = runner.invoke(app, ["eval", "--model", "random", "-n", "1", "--modes", "fastest", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown eval mode" in bad.output
    frontier = runner.invoke(app, ["eval", "--model", "random", "-n", "1", "--families", "json", "--modes",
                                   "constrained", "--engine", "grammar", "--out", str(tmp_path / "g")])
    assert frontier.exit_code == 0, frontier.output
    report = json.loads((tmp_path / "g" / "eval.json").read_text())
    assert report["meta"]["engine"] == "grammar" and report["rows"][0]["valid"] == 1.0
    assert report["meta"]["threshold"] == 0.9
    bad = runner.invoke(app, ["eval", "--model", "random", "-n", "1", "--engine", "fast", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown engine" in bad.output
    for args, says in ((["--stutter-gap", "-1"], "stutter_gap"), (["--families", "jsno"], "unknown data family"),
                       (["--split", "dev"], "split"), (["--threshold", "0"], "commit threshold")):
        bad = runner.invoke(app, ["eval", "--model", "random", "-n", "1", *args, "--out", str(out)])
        assert bad.exit_code == 2 and says in bad.output, bad.output
    # none of the refused runs touched the first run's files
    assert [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()] == streamed
    fresh = tmp_path / "never"
    assert runner.invoke(app, ["eval", "--model", "random", "--modes", "fast", "--out", str(fresh)]).exit_code == 2
    assert not fresh.exists()


def test_the_help_reads_as_prose():
    """Docstrings wrap at 120 columns in the source; the help rewraps them to the terminal (markdown mode) and
    shows no reStructuredText quoting."""
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert top.exit_code == 0, top.output
    assert re.search(r"names only real tables and columns, and compiles against the database", top.stdout)
    for command in ("generate", "sql", "train", "eval", "serve"):
        r = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}, terminal_width=200)
        assert r.exit_code == 0 and "``" not in r.stdout, (command, r.stdout)
