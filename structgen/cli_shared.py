"""What the ``structgen`` commands share: the two consoles, the sampler options and model loading."""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

err = Console(stderr=True, soft_wrap=True)  # never break an error's path or value across lines
out = Console()


def print_error(e: BaseException) -> None:
    """``error: <message>`` on stderr, the message printed as it is (``[a-z]+`` is not rich markup)."""
    err.print(f"[red]error:[/] {escape(str(e))}")


def load_generator(model: Optional[str], device: Optional[str], **settings):
    """Load the model (printing its warnings, e.g. "untrained") and build a Generator."""
    import warnings

    import structgen as sg

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = sg.load_model(model, device=device)
    for w in caught:
        err.print(f"[yellow]warning:[/] {escape(str(w.message))}")
    return sg.Generator(m, **settings)


# sampler options shared by the commands that generate
MODEL_OPT = typer.Option(None, "--model", help="Model directory ('random' for random logits).")
BLOCK_OPT = typer.Option(32, "--block-length", help="Semi-autoregressive block length.")
THRESHOLD_OPT = typer.Option(0.9, "--threshold", help="Confidence threshold for parallel commits.")
TPS_OPT = typer.Option(None, "--tokens-per-step", help="Fixed commits per step.")
TEMP_OPT = typer.Option(0.0, "--temperature", help="0 = greedy.")
SEED_OPT = typer.Option(0, "--seed")
DEVICE_OPT = typer.Option(None, "--device", help="cpu or cuda (default: cuda if available).")
TRACE_OPT = typer.Option(False, "--trace", help="Show the canvas filling step by step.")
AS_JSON_OPT = typer.Option(False, "--json", help="Print the whole result as JSON.")
