"""Shared helpers of the benchmark scripts: schemas, tokenizers, the in-process model, data, tables.

Each script runs as ``python benchmarks/NAME.py`` from a source checkout (the repository root is put on
``sys.path`` when structgen is not installed) and prints a rich table; ``--json FILE`` also writes the
figures. Benchmarks print figures; they never assert on time.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
try:  # a source checkout without `pip install -e .`
    import structgen  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from rich.table import Table  # noqa: E402

# a wide console when the output is piped (rich falls back to 80 columns, which squeezes the tables)
console = Console(width=None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "220")))

# ------------------------------------------------------------------------------------------------------
# schemas
# ------------------------------------------------------------------------------------------------------

TOOLS = ["get_weather", "search_web", "send_email", "create_event", "get_stock_price"]

#: A tool-call envelope: the tool's name (one of five) and its arguments object.
TOOL_CALL_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "name": {"enum": TOOLS},
        "arguments": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "maxLength": 48},
                "location": {"type": "string", "maxLength": 32},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                "units": {"enum": ["metric", "imperial"]},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "arguments"],
    "additionalProperties": False,
}

#: An object with six typed fields.
OBJECT_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "email": {"type": "string", "format": "email"},
        "active": {"type": "boolean"},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 4},
    },
    "required": ["name", "age", "email", "active", "score", "tags"],
    "additionalProperties": False,
}

SCHEMAS: dict[str, dict] = {"tool_call": TOOL_CALL_SCHEMA, "object": OBJECT_SCHEMA}

PROMPTS = {
    "tool_call": "What is the weather in Porto this weekend, in metric units?",
    "object": "Maria Lopez, 41, maria@example.com, active member, score 8.5, tags: travel, food.",
}


def prompt_ids(tokenizer, n: int = 32, text: str | None = None) -> list[int]:
    """About ``n`` prompt token ids: ``text`` (default: a user request) encoded, repeated or cut to ``n``."""
    text = text or ("Call the right tool for this request and fill in its arguments: what is the weather in "
                    "Porto this weekend, and will it rain on Saturday afternoon? Use metric units please.")
    ids = list(tokenizer.encode(text, add_special_tokens=False))
    while len(ids) < n:
        ids += ids
    return ids[:n]


# ------------------------------------------------------------------------------------------------------
# tokenizers and the model
# ------------------------------------------------------------------------------------------------------

VOCABS = {
    "4k": (4096, "train_bpe(default_corpus(), 4096)"),
    "32k": (32768, "synthetic_bpe(32768)"),
    "128k": (131072, "synthetic_bpe(131072)"),
}


@functools.lru_cache(maxsize=None)
def tokenizer(name: str):
    """The benchmark tokenizer ``name`` ("4k", "32k", "128k"), built locally (no download)."""
    from structgen.tokenizers import default_corpus, synthetic_bpe, train_bpe

    size, _ = VOCABS[name]
    if name == "4k":
        return train_bpe(default_corpus(), size)
    # train_bpe on the default corpus stops near 9.6k tokens: larger vocabularies are synthetic
    return synthetic_bpe(size)


def vocab_recipe(name: str) -> str:
    return VOCABS[name][1]


def build_model(tok, device: str = "cpu", seed: int = 0):
    """A randomly initialised ModernBERT with the untrained default's config and ``tok``'s vocabulary.

    Returns (HFMaskedLM, info) where info has the parameter counts (total and embedding).
    """
    import torch
    from transformers import ModernBertForMaskedLM

    from structgen.models.default import untrained_config
    from structgen.models.hf_mlm import HFMaskedLM

    config = untrained_config(tok)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mlm = ModernBertForMaskedLM(config).eval()
    mlm.to(device)
    n_params = sum(p.numel() for p in mlm.parameters())
    n_emb = mlm.model.embeddings.tok_embeddings.weight.numel()
    n_head = sum(p.numel() for n, p in mlm.named_parameters() if n.startswith("decoder"))
    info = {"params": n_params, "embedding_params": n_emb, "decoder_params": n_head,
            "tied_embeddings": bool(getattr(config, "tie_word_embeddings", False)),
            "hidden": config.hidden_size, "layers": config.num_hidden_layers,
            "intermediate": config.intermediate_size, "heads": config.num_attention_heads}
    return HFMaskedLM.from_model(mlm, tok, name=f"modernbert-random-{len(tok)}"), info


# ------------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------------


def data_dir() -> Path:
    """``$STRUCTGEN_SHARED/data``, else ``<repo>/../shared/data``."""
    shared = os.environ.get("STRUCTGEN_SHARED")
    return (Path(shared) if shared else ROOT.parent / "shared") / "data"


def maskbench_files() -> list[Path]:
    d = data_dir() / "maskbench"
    if not d.is_dir():
        raise SystemExit(f"maskbench data not found at {d} (set STRUCTGEN_SHARED to the folder holding data/)")
    return sorted(p for p in d.glob("*.json"))


def load_case(path: Path) -> dict:
    return json.loads(path.read_text())


# ------------------------------------------------------------------------------------------------------
# run settings, timing and output
# ------------------------------------------------------------------------------------------------------


def add_common_args(ap, *, device: bool = True) -> None:
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads (default: $STRUCTGEN_BENCH_THREADS, else 1: the constraint engines run "
                         "on one thread, so one thread for the model too compares like with like, and several "
                         "threads on a busy shared machine make CPU timings erratic)")
    if device:
        ap.add_argument("--device", default="cpu", help="torch device for the model and the constraint "
                                                      "tensors, e.g. cpu or cuda (default cpu)")


def add_model_args(ap, *, n: int | None = None) -> None:
    """The trained-model probes' arguments: ``--model``; with ``n``, ``-n`` (examples per split, default ``n``)
    and ``--seed`` (``structgen eval``'s); then the common ones, on the CPU."""
    ap.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    if n is not None:
        ap.add_argument("-n", type=int, default=n, help=f"examples per split (default {n})")
        ap.add_argument("--seed", type=int, default=1234, help="seeds the examples (default: structgen eval's)")
    add_common_args(ap, device=False)


def load_probed_model(args):
    """``setup_torch`` and quiet warnings, then ``sg.load_model(args.model)`` (the embedded one by default)."""
    setup_torch(args)
    quiet_warnings()
    import structgen as sg

    return sg.load_model(args.model)


def setup_torch(args) -> int:
    """Apply ``--threads`` / ``$STRUCTGEN_BENCH_THREADS``; returns the thread count in use."""
    import torch

    n = args.threads or (int(os.environ["STRUCTGEN_BENCH_THREADS"]) if os.environ.get("STRUCTGEN_BENCH_THREADS")
                         else 1)
    torch.set_num_threads(n)
    device = getattr(args, "device", "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {device}: CUDA is not available on this machine")
    return torch.get_num_threads()


def environment(args) -> dict:
    import platform

    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
           "cpu_count": os.cpu_count(), "device": getattr(args, "device", "cpu"), "machine": platform.machine()}
    if str(env["device"]).startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name(torch.device(env["device"]))
    return env


def sync(device) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, *a, device="cpu", **kw) -> tuple[Any, float]:
    """(result, seconds) of one call, synchronising an accelerator around it."""
    sync(device)
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    sync(device)
    return out, time.perf_counter() - t0


def median(xs: Iterable[float]) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def progress() -> Progress:
    return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


def table(title: str, columns: list[str], rows: list[list[Any]], caption: str | None = None) -> Table:
    t = Table(title=title, caption=caption, caption_justify="left")
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*[fmt(x) for x in r])
    return t


def fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if x != x:
            return "-"
        if abs(x) >= 100:
            return f"{x:,.0f}"
        if abs(x) >= 10:
            return f"{x:.1f}"
        if abs(x) >= 0.1:
            return f"{x:.2f}"
        return f"{x:.3f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def write_json(path: str | None, payload: dict) -> None:
    if not path:
        return
    Path(path).write_text(json.dumps(payload, indent=2, default=str))
    console.print(f"figures written to {path}")


def quiet_warnings() -> None:
    """Silence structgen's 'untrained default model' warning and transformers' chatter in benchmark output."""
    import logging
    import warnings

    warnings.filterwarnings("ignore", message=".*untrained.*")
    warnings.filterwarnings("ignore", category=UserWarning, module="transformers")
    logging.getLogger("transformers").setLevel(logging.ERROR)
