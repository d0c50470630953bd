"""``load_model``: the one entry point that turns a path, ``"random"`` or nothing into a model backend.

- a path (str or PathLike) → the adapter its ``config.json`` names (``backend_for``): ``LLaDAModel`` for
  ``model_type: "llada"`` / ``LLaDAModelLM``, ``DreamModel`` for ``"Dream"`` / ``DreamModel``, else
  ``HFMaskedLM``, then ``from_pretrained`` on that local directory;
- ``"random"`` (or ``"random:SEED"``) → ``RandomLogits`` over the default tokenizer;
- nothing → the embedded default that ships inside the package at ``structgen/models/default_model/`` (a
  normal Hugging Face model directory written by ``structgen train``: ModernBERT with a copy head, named
  ``structgen-default``). Where that directory is missing (an install that left out package data, or a
  checkout that removed it), a small *untrained* ModernBERT is built instead (fixed seed, the default 4k
  BPE tokenizer), cached on disk so the next call only loads it, and a ``StructgenWarning`` says that
  outputs will be valid but not meaningful.

The cache lives in ``$STRUCTGEN_CACHE`` if set, else ``$XDG_CACHE_HOME/structgen``, else
``~/.cache/structgen``; the untrained model in its ``untrained-default/`` folder, rebuilt only when the
recipe below changes. Nothing here ever downloads.

The untrained stand-in is ModernBERT, hidden 128, 4 layers, 4 heads, 1,024 positions, SDPA attention, and
*global* attention in every layer (ModernBERT's default alternates global with 128-token sliding windows,
which changes nothing on short canvases and only costs quality on long ones at this size); the embedded
model has the same shape at hidden 256 plus its copy head (``structgen.train.config``).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import torch

from ..errors import ModelLoadError, StructgenWarning
from .base import DiffusionModel
from .dream import DreamModel
from .hf_mlm import HFMaskedLM, quiet_loading
from .llada import LLaDAModel, read_config
from .random_logits import RandomLogits

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
UNTRAINED_DIRNAME = "untrained-default"
RECIPE_FILE = "structgen_recipe.json"

# Everything that determines the untrained default; bump "version" when the build itself changes.
UNTRAINED_RECIPE: dict[str, Any] = {
    "version": 1,
    "tokenizer": {"kind": "train_bpe(default_corpus())", "vocab_size": 4096},
    "model": {"arch": "ModernBertForMaskedLM", "hidden_size": 128, "intermediate_size": 256,
              "num_hidden_layers": 4, "num_attention_heads": 4, "max_position_embeddings": 1024,
              "attention": "global"},
    "seed": 0,
}


def cache_root() -> Path:
    """structgen's cache folder: ``$STRUCTGEN_CACHE``, else ``$XDG_CACHE_HOME/structgen``, else ``~/.cache/structgen``."""
    if os.environ.get("STRUCTGEN_CACHE"):
        return Path(os.environ["STRUCTGEN_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "structgen"


def embedded_model_present() -> bool:
    return (DEFAULT_MODEL_DIR / "config.json").is_file()


def load_model(path: str | os.PathLike | None = None, *, device: str | torch.device | None = None,
               dtype: Any = None) -> DiffusionModel:
    """A model backend: a local model directory, ``"random"`` / ``"random:SEED"``, or (no argument) the default."""
    if isinstance(path, DiffusionModel):
        return path
    if isinstance(path, str) and (path == "random" or path.startswith("random:")):
        seed = _parse_seed(path)
        return RandomLogits(default_tokenizer(), seed=seed, device=device or "cpu")
    if path is not None:
        return backend_for(path).from_pretrained(path, device=device, dtype=dtype)
    if embedded_model_present():
        model = HFMaskedLM.from_pretrained(DEFAULT_MODEL_DIR, device=device, dtype=dtype)
        model.name = "structgen-default"
        return model
    directory = untrained_default_dir()
    warnings.warn(
        "no embedded model is installed yet (structgen/models/default_model/ is missing): using a small "
        f"untrained ModernBERT cached in {directory}. Outputs will be valid (the constraints guarantee it) but "
        "not meaningful; pass load_model(PATH) with a local masked LM for real content.",
        StructgenWarning, stacklevel=2,
    )
    model = HFMaskedLM.from_pretrained(directory, device=device, dtype=dtype)
    model.name = "untrained-default"
    return model


def backend_for(path: str | os.PathLike) -> type[DiffusionModel]:
    """The adapter class for a local model directory, from its config.json (``HFMaskedLM`` when none matches)."""
    config = read_config(path)
    return next((cls for cls in (LLaDAModel, DreamModel) if cls.matches(config)), HFMaskedLM)


def _parse_seed(spec: str) -> int:
    if spec == "random":
        return 0
    try:
        return int(spec.split(":", 1)[1])
    except ValueError:
        raise ModelLoadError(f"{spec!r}: write 'random' or 'random:SEED' with an integer seed, e.g. 'random:7'") from None


@functools.lru_cache(maxsize=1)
def default_tokenizer():
    """The default model's tokenizer: the embedded model's, else the 4k BPE trained on ``default_corpus()``."""
    if embedded_model_present():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(DEFAULT_MODEL_DIR), use_fast=True, local_files_only=True)
    cached = cache_root() / UNTRAINED_DIRNAME
    if _recipe_matches(cached) and (cached / "tokenizer.json").is_file():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(cached), use_fast=True, local_files_only=True)
    return _train_default_tokenizer()


def _train_default_tokenizer():
    from ..tokenizers import default_corpus, train_bpe

    return train_bpe(default_corpus(), UNTRAINED_RECIPE["tokenizer"]["vocab_size"])


def _recipe_matches(directory: Path) -> bool:
    try:
        return json.loads((directory / RECIPE_FILE).read_text()) == UNTRAINED_RECIPE
    except (OSError, ValueError):
        return False


def untrained_config(tokenizer):
    """The ModernBERT config of the untrained stand-in."""
    from transformers import ModernBertConfig

    m = UNTRAINED_RECIPE["model"]
    n_layers = m["num_hidden_layers"]
    return ModernBertConfig(
        vocab_size=len(tokenizer), hidden_size=m["hidden_size"], intermediate_size=m["intermediate_size"],
        num_hidden_layers=n_layers, num_attention_heads=m["num_attention_heads"],
        max_position_embeddings=m["max_position_embeddings"], layer_types=["full_attention"] * n_layers,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        sep_token_id=tokenizer.eos_token_id, bos_token_id=None, cls_token_id=None,
        attn_implementation="sdpa",
    )


def build_untrained_default(directory: str | os.PathLike) -> Path:
    """Build the untrained default model (deterministic: fixed seed, deterministic tokenizer) into ``directory``."""
    from transformers import ModernBertForMaskedLM

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_default_tokenizer()
    config = untrained_config(tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(UNTRAINED_RECIPE["seed"])
        model = ModernBertForMaskedLM(config).eval()
    with quiet_loading():
        model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    (out / RECIPE_FILE).write_text(json.dumps(UNTRAINED_RECIPE, indent=2, sort_keys=True))
    return out


def untrained_default_dir() -> Path:
    """The cached untrained default model, built on first use (atomically: build aside, then rename)."""
    target = cache_root() / UNTRAINED_DIRNAME
    if _recipe_matches(target):
        return target
    root = target.parent
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{UNTRAINED_DIRNAME}-", dir=root))
    except OSError as e:
        raise ModelLoadError(
            f"cannot write the model cache in {str(root)!r} ({e}); set STRUCTGEN_CACHE to a writable folder"
        ) from e
    try:
        build_untrained_default(tmp)
        if target.exists():
            if _recipe_matches(target):  # another process finished first
                return target
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            if not _recipe_matches(target):
                raise
    except OSError as e:
        raise ModelLoadError(f"could not build the untrained default model in {str(target)!r} ({e}); "
                             "set STRUCTGEN_CACHE to a writable folder") from e
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
