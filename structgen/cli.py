"""The ``structgen`` command line (typer).

``structgen generate PROMPT --schema FILE | --regex R | --grammar FILE | --choice A,B`` prints the result;
``structgen sql --db FILE QUESTION [--run]`` prints a SELECT over the database (and its rows);
``--trace`` shows the canvas filling step by step; ``structgen train`` trains a model on the task data and
``structgen eval`` scores one on the held-out split; ``structgen serve`` runs the OpenAI-compatible server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.text import Text

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Valid-by-construction output from masked diffusion language models.")
err = Console(stderr=True, soft_wrap=True)  # never break an error's path or value across lines
out = Console()


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


def _generator(model: Optional[str], device: Optional[str], **settings):
    """Load the model (printing its warnings, e.g. "untrained") and build a Generator."""
    import warnings

    import structgen as sg

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = sg.load_model(model, device=device)
    for w in caught:
        err.print(f"[yellow]warning:[/] {w.message}")
    return sg.Generator(m, **settings)


def _trace_printer(gen):
    """An ``on_step`` callback that prints each step's canvas to stderr."""
    vocab = gen.vocab
    label = {"forced": "[cyan]forced[/]", "model": "[green]model[/]", "remask": "[red]re-mask[/]"}

    def on_step(ev):
        err.print(f"step {ev.step:>3} {label.get(ev.kind, ev.kind):<8} nfe={ev.nfe:<3} "
                  f"+{len(ev.positions)}", _render_canvas(ev, vocab), sep=" ")
        if ev.kind == "remask":
            err.print(f"          [red]{ev.note}[/]")

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


# sampler options shared by the commands that generate
_MODEL = typer.Option(None, "--model", help="Model directory ('random' for random logits).")
_BLOCK = typer.Option(32, "--block-length", help="Semi-autoregressive block length.")
_THRESHOLD = typer.Option(0.9, "--threshold", help="Confidence threshold for parallel commits.")
_TPS = typer.Option(None, "--tokens-per-step", help="Fixed commits per step.")
_TEMP = typer.Option(0.0, "--temperature", help="0 = greedy.")
_SEED = typer.Option(0, "--seed")
_DEVICE = typer.Option(None, "--device", help="cpu or cuda (default: cuda if available).")
_TRACE = typer.Option(False, "--trace", help="Show the canvas filling step by step.")
_JSON = typer.Option(False, "--json", help="Print the whole result as JSON.")


@app.command()
def generate(
    prompt: str = typer.Argument(..., help="The prompt (plain text)."),
    schema: Optional[Path] = typer.Option(None, "--schema", help="A JSON Schema file."),
    regex: Optional[str] = typer.Option(None, "--regex", help="A regular expression."),
    grammar: Optional[Path] = typer.Option(None, "--grammar", help="A Lark grammar file."),
    choice: Optional[str] = typer.Option(None, "--choice", help="Comma-separated options."),
    model: Optional[str] = _MODEL,
    max_tokens: int = typer.Option(128, "--max-tokens", "-n", help="Canvas length in tokens."),
    block_length: int = _BLOCK,
    threshold: float = _THRESHOLD,
    tokens_per_step: Optional[int] = _TPS,
    temperature: float = _TEMP,
    seed: int = _SEED,
    engine: str = typer.Option("auto", "--engine", help="auto | automaton | grammar"),
    device: Optional[str] = _DEVICE,
    trace: bool = _TRACE,
    as_json: bool = _JSON,
) -> None:
    """Generate output that satisfies a schema, regex, grammar or choice list."""
    import structgen as sg

    try:
        spec = _spec(schema, regex, grammar, choice)
        gen = _generator(model, device, block_length=block_length, threshold=threshold,
                         tokens_per_step=tokens_per_step, temperature=temperature, seed=seed, engine=engine)
        r = gen.generate(prompt, spec, max_tokens=max_tokens, on_step=_trace_printer(gen) if trace else None)
    except sg.StructgenError as e:
        err.print(f"[red]error:[/] {e}")
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
    model: Optional[str] = _MODEL,
    max_tokens: int = typer.Option(128, "--max-tokens", "-n", help="Canvas length in tokens."),
    block_length: int = _BLOCK,
    threshold: float = _THRESHOLD,
    tokens_per_step: Optional[int] = _TPS,
    temperature: float = _TEMP,
    seed: int = _SEED,
    device: Optional[str] = _DEVICE,
    trace: bool = _TRACE,
    as_json: bool = _JSON,
) -> None:
    """Answer a question over a SQLite database with one SELECT that parses, names only real tables and
    columns, and compiles against the database; ``--run`` also runs it and prints the rows."""
    import structgen as sg
    from structgen.sql import run_query

    try:
        spec = sg.Sql(db)
        gen = _generator(model, device, block_length=block_length, threshold=threshold,
                         tokens_per_step=tokens_per_step, temperature=temperature, seed=seed)
        r = gen.generate(question, spec, max_tokens=max_tokens, on_step=_trace_printer(gen) if trace else None)
        rows = run_query(db, r.text, max_rows=max_rows, timeout_s=timeout) if run else None
    except sg.StructgenError as e:
        err.print(f"[red]error:[/] {e}")
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


@app.command()
def train(
    out_dir: Path = typer.Option(Path("structgen-model"), "--out", help="Where to save the trained model "
                                 "(a new folder, or a previous trained model to replace)."),
    preset: str = typer.Option("small", "--preset", help="small (the embedded default's recipe) | tiny (seconds)."),
    minutes: Optional[float] = typer.Option(None, "--minutes", help="Wall-clock budget; the run stops and saves."),
    steps: Optional[int] = typer.Option(None, "--steps", help="Most optimisation steps."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seeds the data, the initialisation and the noise."),
    device: Optional[str] = typer.Option(None, "--device", help="cpu or cuda."),
    threads: Optional[int] = typer.Option(None, "--threads", help="CPU threads for torch."),
    precision: Optional[str] = typer.Option(None, "--precision", help="auto (bfloat16 autocast where the device "
                                            "has fast bfloat16 matmuls) | bf16 | fp32."),
    examples_per_family: Optional[int] = typer.Option(None, "--examples-per-family", help="Training examples "
                                                      "per task family."),
    drill_examples: Optional[int] = typer.Option(None, "--drill-examples", help="JSON drill records added to the "
                                                 "training data: values to convert, not copy (default 0; "
                                                 "docs/training.md)."),
    pretokenizer: Optional[str] = typer.Option(None, "--pretokenizer", help="How text is cut before BPE merges: "
                                               "words (the default) | json-words | gpt2 (docs/training.md)."),
    dropout: Optional[float] = typer.Option(None, "--dropout", help="ModernBERT dropout while training, "
                                            "0 <= p < 1 (default 0)."),
    attention_dropout: Optional[float] = typer.Option(None, "--attention-dropout", help="Dropout of the "
                                                      "attention probabilities (default: --dropout; 0 keeps "
                                                      "the fast attention kernel on CPU)."),
    convert_path: Optional[bool] = typer.Option(None, "--convert-path/--no-convert-path", help="Give the copy "
                                                "head a conversion path (July -> 07 read off the source; "
                                                "default off; docs/training.md)."),
    convert_maps: Optional[int] = typer.Option(None, "--convert-maps", help="With --convert-path: conversion "
                                               "maps per source word that the reading slot chooses among "
                                               "(January -> 01 in a date, 1 as an integer; default 1)."),
    convert_topk: Optional[int] = typer.Option(None, "--convert-topk", help="With --convert-path: convert "
                                               "through each position's k likeliest sources only (faster; "
                                               "default 0 = every source)."),
    source_loss: Optional[float] = typer.Option(None, "--source-loss", help="Weight of the pointer's source loss: "
                                                "teach the copy head which request words each value comes "
                                                "from (default 0 = off; docs/training.md)."),
    pointer_loss_on: Optional[str] = typer.Option(None, "--pointer-loss-on", help="Where the conversion path's "
                                                  "pointer loss trains: content (every non-EOS token, the "
                                                  "default) | sources (only value tokens read off the "
                                                  "request; needs --source-loss)."),
    keep: Optional[str] = typer.Option(None, "--keep", help="The weights saved: last (the default) | best "
                                       "(those with the lowest held-out loss at an evaluation)."),
    data: Optional[Path] = typer.Option(None, "--data", help="Train on your own examples instead: a .jsonl file, "
                                        "one {prompt, target, schema|tool|regex} per line (docs/training.md)."),
    tools: Optional[Path] = typer.Option(None, "--tools", help="The tools that 'tool' lines of --data call "
                                         "(a .py file with TOOLS or a .json list)."),
    as_json: bool = _JSON,
) -> None:
    """Train a small masked-diffusion model from scratch on the generated task data (LLaDA's objective) and
    save it as a Hugging Face model directory (load it with --model DIR, or sg.load_model(DIR) in Python)."""
    import dataclasses

    import structgen as sg
    from structgen.train.config import TrainConfig
    from structgen.train.trainer import train as run_training

    try:
        cfg = TrainConfig.preset(preset, minutes=minutes, steps=steps, seed=seed, device=device, threads=threads,
                                 precision=precision, examples_per_family=examples_per_family,
                                 drill_examples=drill_examples, pretokenizer=pretokenizer, dropout=dropout,
                                 attention_dropout=attention_dropout, copy_convert=convert_path,
                                 convert_maps=convert_maps, convert_topk=convert_topk, source_loss=source_loss,
                                 pointer_loss_on=pointer_loss_on, keep=keep)
        err.print(f"[dim]training preset {preset}: {cfg.num_layers} layers x {cfg.hidden_size}, "
                  f"{cfg.examples_per_family} examples per family, budget "
                  f"{f'{cfg.minutes:g} min' if cfg.minutes else 'none'} / {cfg.steps} steps, {cfg.device}[/]")
        own = None
        if data is not None:
            from structgen.train.data.from_file import load_file
            from structgen.train.trainer import TrainData

            train_rows, heldout_rows = load_file(data, tools)
            own = TrainData(train=train_rows, heldout=heldout_rows)
            err.print(f"[dim]data: {len(train_rows)} training and {len(heldout_rows)} held-out examples from "
                      f"{data}[/]")
        elif tools is not None:
            raise sg.ConfigError("--tools names the tools of --data's 'tool' lines; pass --data too")
        report = run_training(cfg, out_dir, progress=True, data=own)
    except sg.StructgenError as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    if as_json:
        out.print_json(json.dumps(dataclasses.asdict(report), default=str))
    else:
        out.print(report.summary())


@app.command("eval")
def eval_(
    model: Optional[str] = typer.Option(None, "--model", help="Model directory (default: the embedded model)."),
    n: int = typer.Option(50, "-n", help="Held-out examples per family."),
    families: str = typer.Option("json,tool,sql,alert", "--families", help="Comma-separated task families."),
    modes: str = typer.Option("constrained,unconstrained,one-token", "--modes", help="Decoding modes to compare."),
    out_dir: Path = typer.Option(Path("eval-out"), "--out", help="Folder for eval.json, eval.md and eval.svg."),
    seed: int = typer.Option(1234, "--seed", help="Seeds the held-out examples."),
    split: str = typer.Option("heldout", "--split",
                              help="heldout (templates never seen in training) or train (how well they were fitted)."),
    block_length: int = _BLOCK,
    engine: str = typer.Option("auto", "--engine", help="auto | automaton | grammar (constrained modes)."),
    stutter_gap: int = typer.Option(2, "--stutter-gap", help="No-stutter rule: a word the model would write "
                                    "twice this close commits once, unless the prompt repeats it, and no two "
                                    "spaces touch (0: off; sampler.policy)."),
    device: Optional[str] = _DEVICE,
) -> None:
    """Score a model on the held-out split of every task family: constrained decoding beside unconstrained
    and one-token-per-step decoding of the same model; prints the table and writes it with a chart (and
    every decoded example to OUT/examples.jsonl as it goes)."""
    import dataclasses
    import platform

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    import structgen as sg
    from structgen.train.eval_report import rich_table, write_report
    from structgen.train.evaluate import eval_generator, evaluate

    fams = [f.strip() for f in families.split(",") if f.strip()]
    mode_list = [m.strip() for m in modes.split(",") if m.strip()]
    try:
        gen = _generator(model, device)
        # every argument is checked before OUT is touched: a typo never empties an earlier run's examples
        eval_generator(gen.model, families=fams, modes=mode_list, split=split, block_length=block_length,
                       engine=engine, stutter_gap=stutter_gap)
        total = n * len(fams) * len(mode_list)
        out_dir.mkdir(parents=True, exist_ok=True)
        # every decoded example is appended as it comes: a long run that is stopped keeps what it decoded
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err) as bar, open(out_dir / "examples.jsonl", "w", encoding="utf-8") as stream:
            task = bar.add_task("eval", total=total)

            def tick(s):
                stream.write(json.dumps(dataclasses.asdict(s), ensure_ascii=False) + "\n")
                stream.flush()
                bar.update(task, advance=1, description=f"eval {s.family}/{s.mode}")

            rows = evaluate(gen.model, families=fams, n=n, seed=seed, modes=mode_list, block_length=block_length,
                            split=split, on_example=tick, engine=engine, stutter_gap=stutter_gap)
        which = "Held-out" if split == "heldout" else "Train-split"
        title = f"{which} evaluation of {getattr(gen.model, 'name', model or 'the default model')}"
        meta = {"model": model or "default", "n": n, "seed": seed, "split": split, "block_length": block_length,
                "engine": engine, "stutter_gap": stutter_gap, "machine": platform.platform(),
                "threads": __import__("torch").get_num_threads()}
        paths = write_report(rows, out_dir, title=title, meta=meta)
    except sg.StructgenError as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    out.print(rich_table(rows, title))
    err.print("written: " + ", ".join(str(p) for p in paths))


@app.command()
def serve(
    model: Optional[str] = _MODEL,
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
    block_length: int = _BLOCK,
    threshold: float = _THRESHOLD,
    device: Optional[str] = _DEVICE,
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
            err.print(f"[yellow]warning:[/] {w.message}")
        limits = ServerLimits(workers=workers, queue_size=queue_size, max_batch=max_batch)
        executor = executor_from_file(execute, sandbox=sandbox) if execute else None
        application = create_app(m, policy=policy, audit_path=audit, api_keys=api_key or (), executor=executor,
                                 limits=limits, tools=tools, model_id=model_id, approval_ttl_s=approval_ttl,
                                 generator_settings={"block_length": block_length, "threshold": threshold})
    except sg.StructgenError as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    if not api_key and host not in ("127.0.0.1", "localhost", "::1"):
        err.print(f"[yellow]warning:[/] serving on {host} without --api-key: anyone who can reach it can use it")
    err.print(f"[dim]structgen serve: model {m.name} as '{model_id}' on http://{host}:{port}/v1, audit "
              f"{application.state.audit.path}, tools executed: {'yes' if executor else 'no'}[/]")
    err.print(f"playground: http://{host}:{port}/playground")
    uvicorn.run(application, host=host, port=port, log_level=log_level)


if __name__ == "__main__":  # pragma: no cover
    app()
