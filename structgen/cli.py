"""The ``structgen`` command line (typer): ``structgen generate PROMPT --schema FILE | --regex R |
--grammar FILE | --choice A,B`` prints the result; ``--trace`` shows the canvas filling step by step."""

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
err = Console(stderr=True)
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


@app.command()
def generate(
    prompt: str = typer.Argument(..., help="The prompt (plain text)."),
    schema: Optional[Path] = typer.Option(None, "--schema", help="A JSON Schema file."),
    regex: Optional[str] = typer.Option(None, "--regex", help="A regular expression."),
    grammar: Optional[Path] = typer.Option(None, "--grammar", help="A Lark grammar file."),
    choice: Optional[str] = typer.Option(None, "--choice", help="Comma-separated options."),
    model: Optional[str] = typer.Option(None, "--model", help="Model directory ('random' for random logits)."),
    max_tokens: int = typer.Option(128, "--max-tokens", "-n", help="Canvas length in tokens."),
    block_length: int = typer.Option(32, "--block-length", help="Semi-autoregressive block length."),
    threshold: float = typer.Option(0.9, "--threshold", help="Confidence threshold for parallel commits."),
    tokens_per_step: Optional[int] = typer.Option(None, "--tokens-per-step", help="Fixed commits per step."),
    temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy."),
    seed: int = typer.Option(0, "--seed"),
    engine: str = typer.Option("auto", "--engine", help="auto | automaton | grammar"),
    device: Optional[str] = typer.Option(None, "--device", help="cpu or cuda (default: cuda if available)."),
    trace: bool = typer.Option(False, "--trace", help="Show the canvas filling step by step."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result as JSON."),
) -> None:
    """Generate output that satisfies a schema, regex, grammar or choice list."""
    import warnings

    import structgen as sg

    try:
        spec = _spec(schema, regex, grammar, choice)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = sg.load_model(model, device=device)
        for w in caught:
            err.print(f"[yellow]warning:[/] {w.message}")
        gen = sg.Generator(m, block_length=block_length, threshold=threshold, tokens_per_step=tokens_per_step,
                           temperature=temperature, seed=seed, engine=engine)
        on_step = None
        if trace:
            vocab = gen.vocab

            def on_step(ev):
                label = {"forced": "[cyan]forced[/]", "model": "[green]model[/]", "remask": "[red]re-mask[/]"}
                err.print(f"step {ev.step:>3} {label.get(ev.kind, ev.kind):<8} nfe={ev.nfe:<3} "
                          f"+{len(ev.positions)}", _render_canvas(ev, vocab), sep=" ")
                if ev.kind == "remask":
                    err.print(f"          [red]{ev.note}[/]")
        r = gen.generate(prompt, spec, max_tokens=max_tokens, on_step=on_step)
    except sg.StructgenError as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    if as_json:
        out.print_json(json.dumps({
            "text": r.text, "value": r.value if not hasattr(r.value, "model_dump") else r.value.model_dump(),
            "valid": r.valid, "errors": r.errors, "nfe": r.nfe, "engine": r.engine, "timings": r.timings,
            "output_tokens": r.n_output_tokens, "forced_tokens": r.n_forced, "repair_rounds": r.repair_rounds,
        }, default=str))
    else:
        sys.stdout.write(r.text + "\n")
        err.print(f"[dim]valid={r.valid} engine={r.engine} nfe={r.nfe} tokens={r.n_output_tokens} "
                  f"forced={r.n_forced} {r.timings['total_s']:.2f}s[/]")


if __name__ == "__main__":  # pragma: no cover
    app()
