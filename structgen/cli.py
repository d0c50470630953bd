"""The ``structgen`` command line (typer).

``structgen generate PROMPT --schema FILE | --regex R | --grammar FILE | --choice A,B`` prints the result;
``structgen sql --db FILE QUESTION [--run]`` prints a SELECT over the database (and its rows);
``--trace`` shows the canvas filling step by step; ``structgen train`` trains a model on the task data and
``structgen eval`` scores one on the held-out split (both in ``cli_training``); ``structgen serve`` runs the
OpenAI-compatible server. Consoles, shared options and model loading live in ``cli_shared``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.text import Text

from . import cli_training
from .cli_shared import (AS_JSON_OPT, BLOCK_OPT, DEVICE_OPT, MODEL_OPT, SEED_OPT, TEMP_OPT, THRESHOLD_OPT, TPS_OPT,
                         TRACE_OPT, err, load_generator, out, print_error)

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="markdown",
                  help="Valid-by-construction output from masked diffusion language models.")


@app.callback()
def main() -> None:
    """structgen: JSON, regex, grammar and choice constraints for diffusion LMs."""


def _spec(schema: Optional[Path], regex: Optional[str], grammar: Optional[Path], choice: Optional[str]):
    import structgen as sg

    given = [x is not None for x in (schema, regex, grammar, choice)]
    if sum(given) != 1:
        raise sg.SpecError("give exactly one of --schema FILE, --regex R, --grammar FILE, --choice A,B")
    if schema is not None:
        if not schema.exists():
            raise sg.SpecError(f"schema file {schema} not found")
        return sg.JsonSchema(schema.read_text())
    if regex is not None:
        return sg.Regex(regex)
    if grammar is not None:
        return sg.Grammar(Path(grammar))
    return sg.Choice([c.strip() for c in choice.split(",") if c.strip()])


def _render_canvas(ev, vocab, width: int = 100) -> Text:
    """Masked positions as grey dots, forced tokens blue, model-committed tokens green (new ones bold)."""
    t = Text()
    new = set(ev.positions)
    for i, tok in enumerate(ev.canvas):
        if tok < 0:
            t.append("·", style="grey50")
            continue
        piece = vocab.token_bytes[tok].decode("utf-8", "replace") if tok != vocab.eos_id else "⏎"
        style = ("bold " if i in new else "") + ("cyan" if ev.kind == "forced" and i in new else
                                                 "green" if i in new else "white")
        t.append(piece.replace("\n", "\\n") or "∅", style=style)
    return t


def _trace_printer(gen):
    """An ``on_step`` callback that prints each step's canvas to stderr."""
    vocab = gen.vocab
    label = {"forced": "[cyan]forced[/]", "model": "[green]model[/]", "remask": "[red]re-mask[/]"}

    def on_step(ev):
        err.print(f"step {ev.step:>3} {label.get(ev.kind, ev.kind):<8} nfe={ev.nfe:<3} "
                  f"+{len(ev.positions)}", _render_canvas(ev, vocab), sep=" ")
        if ev.kind == "remask":
            err.print(f"          [red]{escape(ev.note)}[/]")

    return on_step


def _summary(r) -> None:
    err.print(f"[dim]valid={r.valid} engine={r.engine} nfe={r.nfe} tokens={r.n_output_tokens} "
              f"forced={r.n_forced} repairs={r.repair_rounds}{' (fallback)' if r.fallback else ''} "
              f"{r.timings['total_s']:.2f}s[/]")


def _result_json(r, **extra) -> str:
    value = r.value.model_dump() if hasattr(r.value, "model_dump") else r.value
    return json.dumps({
        "text": r.text, "value": value, "valid": r.valid, "errors": r.errors, "nfe": r.nfe, "engine": r.engine,
        "timings": r.timings, "output_tokens": r.n_output_tokens, "forced_tokens": r.n_forced,
        "repair_rounds": r.repair_rounds, "fallback": r.fallback, **extra,
    }, default=str)


@app.command()
def generate(
    prompt: str = typer.Argument(..., help="The prompt (plain text)."),
    schema: Optional[Path] = typer.Option(None, "--schema", help="A JSON Schema file."),
    regex: Optional[str] = typer.Option(None, "--regex", help="A regular expression."),
    grammar: Optional[Path] = typer.Option(None, "--grammar", help="A Lark grammar file."),
    choice: Optional[str] = typer.Option(None, "--choice", help="Comma-separated options."),
    model: Optional[str] = MODEL_OPT,
    max_tokens: int = typer.Option(128, "--max-tokens", "-n", help="Canvas length in tokens."),
    block_length: int = BLOCK_OPT,
    threshold: float = THRESHOLD_OPT,
    tokens_per_step: Optional[int] = TPS_OPT,
    temperature: float = TEMP_OPT,
    seed: int = SEED_OPT,
    engine: str = typer.Option("auto", "--engine", help="auto | automaton | grammar"),
    ground: bool = typer.Option(False, "--ground", help="JSON Schema only: every free-text string is a part "
                                "of the prompt made of whole words; e-mails, dates, codes and numbers as it states them."),
    device: Optional[str] = DEVICE_OPT,
    trace: bool = TRACE_OPT,
    as_json: bool = AS_JSON_OPT,
) -> None:
    """Generate output that satisfies a schema, regex, grammar or choice list."""
    import structgen as sg

    try:
        spec = _spec(schema, regex, grammar, choice)
        gen = load_generator(model, device, block_length=block_length, threshold=threshold,
                         tokens_per_step=tokens_per_step, temperature=temperature, seed=seed, engine=engine)
        r = gen.generate(prompt, spec, max_tokens=max_tokens, on_step=_trace_printer(gen) if trace else None,
                         ground=ground)
    except sg.StructgenError as e:
        print_error(e)
        raise typer.Exit(2)
    if as_json:
        out.print_json(_result_json(r))
    else:
        sys.stdout.write(r.text + "\n")
        _summary(r)


@app.command()
def sql(
    question: str = typer.Argument(..., help="The question, in plain language."),
    db: Path = typer.Option(..., "--db", help="The SQLite database to query (opened read-only)."),
    run: bool = typer.Option(False, "--run", help="Also run the query (read-only) and print the rows."),
    max_rows: int = typer.Option(20, "--max-rows", help="Rows to fetch when running."),
    timeout: float = typer.Option(5.0, "--timeout", help="Seconds a query may run."),
    ground: bool = typer.Option(False, "--ground", help="Every string literal is a part of the question, a "
                                "value it states, a value of a low-cardinality column or a date format."),
    strict: bool = typer.Option(False, "--strict", help="Write in the strict grammar from the start, every query "
                                "of which runs: one table or a join of each table once, subqueries of one table "
                                "and one column, no output alias in ORDER BY (the default grammar turns to it "
                                "only when repair runs out)."),
    model: Optional[str] = MODEL_OPT,
    max_tokens: int = typer.Option(128, "--max-tokens", "-n", help="Canvas length in tokens."),
    block_length: int = BLOCK_OPT,
    threshold: float = THRESHOLD_OPT,
    tokens_per_step: Optional[int] = TPS_OPT,
    temperature: float = TEMP_OPT,
    seed: int = SEED_OPT,
    device: Optional[str] = DEVICE_OPT,
    trace: bool = TRACE_OPT,
    as_json: bool = AS_JSON_OPT,
) -> None:
    """Answer a question over a SQLite database with one SELECT that parses, names only real tables and
    columns, and compiles against the database; ``--run`` also runs it and prints the rows."""
    import structgen as sg
    from structgen.sql import run_query

    try:
        spec = sg.Sql(db, strict=strict)
        gen = load_generator(model, device, block_length=block_length, threshold=threshold,
                         tokens_per_step=tokens_per_step, temperature=temperature, seed=seed)
        r = gen.generate(question, spec, max_tokens=max_tokens, on_step=_trace_printer(gen) if trace else None,
                         ground=ground)
        rows = run_query(db, r.text, max_rows=max_rows, timeout_s=timeout) if run else None
    except sg.StructgenError as e:
        print_error(e)
        raise typer.Exit(2)
    if as_json:
        extra = {} if rows is None else {"columns": rows.columns, "rows": [list(x) for x in rows.rows],
                                         "truncated": rows.truncated}
        out.print_json(_result_json(r, **extra))
        return
    sys.stdout.write(r.text + "\n")
    _summary(r)
    if rows is not None:
        out.print(rows.to_table())
        if rows.truncated:
            err.print(f"[dim](first {max_rows} rows shown; --max-rows for more)[/]")


cli_training.register(app)  # train, eval


@app.command()
def serve(
    model: Optional[str] = MODEL_OPT,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
    port: int = typer.Option(8000, "--port", help="TCP port."),
    policy: Optional[Path] = typer.Option(None, "--policy", help="Permission policy TOML (default: destructive "
                                          "tools denied, tools with side effects ask, others allowed)."),
    audit: Optional[Path] = typer.Option(None, "--audit", help="Audit log SQLite file (default: a temporary file)."),
    api_key: Optional[list[str]] = typer.Option(None, "--api-key", help="Accepted API key (repeat for several); "
                                                "none: no key needed."),
    tools: Optional[Path] = typer.Option(None, "--tools", help="Tools the server knows (a .py with TOOLS or a "
                                         ".json list); they replace client tools of the same name."),
    execute: Optional[Path] = typer.Option(None, "--execute", help="Tool implementations to run released calls "
                                           "with (a .py with functions(sandbox=...) or FUNCTIONS)."),
    sandbox: Path = typer.Option(Path("/tmp/structgen-sandbox"), "--sandbox", help="Folder given to --execute."),
    workers: int = typer.Option(2, "--workers", help="Generations running at once (batched on the model)."),
    queue_size: int = typer.Option(32, "--queue-size", help="Requests that may wait; beyond that, 503."),
    max_batch: int = typer.Option(8, "--max-batch", help="Most sequences in one forward pass."),
    model_id: str = typer.Option("structgen", "--model-id", help="The model name clients send."),
    approval_ttl: float = typer.Option(300.0, "--approval-ttl", help="Seconds a parked call can be approved."),
    block_length: int = BLOCK_OPT,
    threshold: float = THRESHOLD_OPT,
    device: Optional[str] = DEVICE_OPT,
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level."),
) -> None:
    """Serve the OpenAI Chat Completions API (tools, response_format, streaming) for agent frameworks."""
    import warnings

    import structgen as sg

    try:
        import uvicorn

        from structgen.server import ServerLimits, create_app
        from structgen.server.config import executor_from_file
    except ImportError as e:
        err.print(f"[red]error:[/] the server needs its extra: pip install 'structgen[server]' ({e})")
        raise typer.Exit(2)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = sg.load_model(model, device=device)
        for w in caught:
            err.print(f"[yellow]warning:[/] {escape(str(w.message))}")
        limits = ServerLimits(workers=workers, queue_size=queue_size, max_batch=max_batch)
        executor = executor_from_file(execute, sandbox=sandbox) if execute else None
        application = create_app(m, policy=policy, audit_path=audit, api_keys=api_key or (), executor=executor,
                                 limits=limits, tools=tools, model_id=model_id, approval_ttl_s=approval_ttl,
                                 generator_settings={"block_length": block_length, "threshold": threshold})
    except sg.StructgenError as e:
        print_error(e)
        raise typer.Exit(2)
    if not api_key and host not in ("127.0.0.1", "localhost", "::1"):
        err.print(f"[yellow]warning:[/] serving on {host} without --api-key: anyone who can reach it can use it")
    err.print(f"[dim]structgen serve: model {m.name} as '{model_id}' on http://{host}:{port}/v1, audit "
              f"{application.state.audit.path}, tools executed: {'yes' if executor else 'no'}[/]")
    err.print(f"playground: http://{host}:{port}/playground")
    uvicorn.run(application, host=host, port=port, log_level=log_level)


if __name__ == "__main__":  # pragma: no cover
    app()
