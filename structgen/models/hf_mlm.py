"""``HFMaskedLM``: any Hugging Face masked LM in a local directory, as a structgen model backend.

Loads with ``AutoModelForMaskedLM`` and ``AutoTokenizer`` (fast tokenizer) with ``local_files_only=True``:
nothing is ever downloaded. The model's own mask token is the diffusion mask; the logits width is
``model.config.vocab_size``. A directory that cannot work (missing, no config, no weights, no fast
tokenizer, no mask token) raises ``ModelLoadError`` saying what is missing and how to fix it, before any
weights are read.

Defaults: the device is CUDA when available, else the CPU; the dtype is float32 on the CPU and the
checkpoint's own dtype on an accelerator. Attention uses the model's default implementation (SDPA for
ModernBERT); a config that asks for flash-attention falls back to SDPA when flash-attn is not installed.
A directory whose ``config.json`` names ``ModernBertWithCopyHead`` (``structgen train``'s pointer-head
model, ``copy_head.py``) loads with that class.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator

import torch

from ..errors import ModelLoadError
from .base import DiffusionModel

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def default_device() -> torch.device:
    """CUDA when available, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _resolve_dtype(dtype: Any, device: torch.device) -> Any:
    if dtype is None:
        return torch.float32 if device.type == "cpu" else "auto"
    if isinstance(dtype, torch.dtype) or dtype == "auto":
        return dtype
    if isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype):
        return getattr(torch, dtype)
    raise ModelLoadError(f"unknown dtype {dtype!r}; pass a torch.dtype or one of 'float32', 'bfloat16', "
                         "'float16', 'auto'")


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Silence transformers' progress bars while structgen loads or saves a small local model."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _model_class(p: Path, default):
    """The class that loads the model in ``p``: structgen's copy-head ModernBERT when ``config.json`` names it
    (``transformers`` does not know it), else ``default`` (``AutoModelForMaskedLM``)."""
    import json

    try:
        archs = json.loads((p / "config.json").read_text()).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return default
    from .copy_head import ARCHITECTURE, ModernBertWithCopyHead

    return ModernBertWithCopyHead if ARCHITECTURE in archs else default


def notes_version(value: Any, name: str) -> int:
    """The request-notes version of a config's ``structgen_request_notes`` (absent, false or 0: none; ``true``
    from a model of the first version: 1); ModelLoadError for a version this structgen does not know."""
    from ..errors import StructgenError
    from ..request_notes import check_version

    try:
        return check_version(int(value) if isinstance(value, bool) else 0 if value is None else value)
    except StructgenError as e:
        raise ModelLoadError(f"{name}: {e}") from None


def check_model_dir(path: str | os.PathLike) -> Path:
    """The directory as a Path, after checking it can hold a model; ModelLoadError otherwise."""
    p = Path(path).expanduser()
    if not p.exists():
        hint = ""
        if not str(path).startswith((".", "/", "~")) and str(path).count("/") == 1:
            hint = (f" It looks like a hub id: structgen never downloads; fetch it yourself, e.g. "
                    f"`hf download {path} --local-dir DIR`, and pass DIR.")
        raise ModelLoadError(f"model directory {str(p)!r} does not exist.{hint} Pass the path of a local Hugging "
                             "Face model directory (config.json, weights, tokenizer.json), or call load_model() "
                             "for the embedded default.")
    if not p.is_dir():
        raise ModelLoadError(f"{str(p)!r} is a file, not a model directory; pass the directory that holds "
                             "config.json, the weights and tokenizer.json")
    if not (p / "config.json").is_file():
        raise ModelLoadError(f"no config.json in {str(p)!r}: not a Hugging Face model directory. Save one with "
                             "model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR).")
    if not any((p / w).is_file() for w in WEIGHT_FILES):
        raise ModelLoadError(f"no weights in {str(p)!r} (looked for {', '.join(WEIGHT_FILES)}). Save them with "
                             "model.save_pretrained(DIR), or finish copying the checkpoint.")
    return p


class HFMaskedLM(DiffusionModel):
    """A Hugging Face masked LM (``*ForMaskedLM``) and its fast tokenizer."""

    def __init__(self, model, tokenizer, *, name: str | None = None):
        from ..constraints.vocab import _first_id

        if not getattr(tokenizer, "is_fast", False):
            raise ModelLoadError(
                f"structgen needs a fast tokenizer, got {type(tokenizer).__name__}; load it with "
                "AutoTokenizer.from_pretrained(DIR, use_fast=True) or save a tokenizer.json beside the model"
            )
        mask_id = getattr(tokenizer, "mask_token_id", None)
        if mask_id is None:
            raise ModelLoadError(
                "the tokenizer has no mask token, which a masked diffusion model needs; set one with "
                "tokenizer.add_special_tokens({'mask_token': '<|mask|>'}) (and resize the model's embeddings), "
                "then save both"
            )
        eos_id = _first_id(tokenizer, "eos_token_id", "sep_token_id", "pad_token_id")
        if eos_id is None:
            raise ModelLoadError(
                "the tokenizer has no EOS (or SEP/PAD) token to fill the canvas tail; add one with "
                "tokenizer.add_special_tokens({'eos_token': '<|eos|>'}) and save it"
            )
        vocab_size = int(model.config.vocab_size)
        if len(tokenizer) > vocab_size or mask_id >= vocab_size:
            raise ModelLoadError(
                f"the tokenizer has {len(tokenizer)} tokens (mask id {mask_id}) but the model outputs only "
                f"{vocab_size}; call model.resize_token_embeddings(len(tokenizer)) and save the model again"
            )
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.mask_id = int(mask_id)
        self.eos_id = int(eos_id)
        self.device = next(model.parameters()).device
        self.name = name or str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        max_pos = getattr(model.config, "max_position_embeddings", None)
        self.max_length = int(max_pos) if max_pos else None
        self.request_notes = notes_version(getattr(model.config, "structgen_request_notes", 0), self.name)

    @classmethod
    def from_model(cls, model, tokenizer, *, name: str | None = None) -> "HFMaskedLM":
        """Wrap a masked LM and tokenizer already in memory (the model stays on its device)."""
        return cls(model, tokenizer, name=name)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device: str | torch.device | None = None,
                        dtype: Any = None) -> "HFMaskedLM":
        """Load a masked LM from a local directory; never downloads."""
        p = check_model_dir(path)
        dev = torch.device(device) if device is not None else default_device()
        torch_dtype = _resolve_dtype(dtype, dev)
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(str(p), use_fast=True, local_files_only=True)
        except Exception as e:  # transformers raises OSError/ValueError/KeyError depending on what is missing
            raise ModelLoadError(
                f"could not load a fast tokenizer from {str(p)!r} ({type(e).__name__}: {e}). Save one beside the "
                "model with tokenizer.save_pretrained(DIR) (it writes tokenizer.json)."
            ) from e
        if not getattr(tokenizer, "is_fast", False):
            raise ModelLoadError(f"{str(p)!r} has only a slow tokenizer; structgen needs tokenizer.json. Convert "
                                 "it once with AutoTokenizer.from_pretrained(DIR, use_fast=True).save_pretrained(DIR)")
        if getattr(tokenizer, "mask_token_id", None) is None:
            raise ModelLoadError(
                f"the tokenizer in {str(p)!r} has no mask token, which a masked diffusion model needs; set one "
                "with tokenizer.add_special_tokens({'mask_token': '<|mask|>'}), resize the model's embeddings, "
                "and save both"
            )
        model = cls._load_model(_model_class(p, AutoModelForMaskedLM), p, torch_dtype)
        model.to(dev)
        return cls(model, tokenizer, name=p.name or str(p))

    @staticmethod
    def _load_model(auto_cls, p: Path, torch_dtype: Any):
        kw: dict[str, Any] = {"local_files_only": True, "dtype": torch_dtype}
        with quiet_loading():
            try:
                return auto_cls.from_pretrained(str(p), **kw)
            except (ImportError, ValueError) as e:
                if "flash" not in str(e).lower():
                    raise ModelLoadError(
                        f"{str(p)!r} could not be loaded as a masked LM ({type(e).__name__}: {e}). structgen needs "
                        "a *ForMaskedLM architecture that transformers knows, with its config and weights."
                    ) from e
            except Exception as e:
                raise ModelLoadError(
                    f"loading the weights in {str(p)!r} failed ({type(e).__name__}: {e}); check the checkpoint is "
                    "complete and matches config.json"
                ) from e
            try:  # the config asked for flash-attention, which is not installed: SDPA computes the same
                return auto_cls.from_pretrained(str(p), attn_implementation="sdpa", **kw)
            except Exception as e:
                raise ModelLoadError(f"{str(p)!r} could not be loaded with SDPA attention either ({e})") from e

    def _logits(self, ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        out = self.model(input_ids=ids, attention_mask=attention_mask)
        return out.logits

    def _logits_from(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, start: int) -> torch.Tensor:
        """The output layer at positions ``start..`` only: the copy-head model's ``tail_log_probs``, or
        ModernBERT-style ``model`` / ``head`` / ``decoder`` parts; other models slice the full logits."""
        m = self.model
        if hasattr(m, "tail_log_probs"):
            return m.tail_log_probs(ids, attention_mask, start)
        if all(hasattr(m, a) for a in ("model", "head", "decoder")):
            hidden = m.model(input_ids=ids, attention_mask=attention_mask).last_hidden_state
            return m.decoder(m.head(hidden[:, start:]))
        return self._logits(ids, attention_mask)[:, start:]
