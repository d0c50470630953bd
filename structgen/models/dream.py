"""``DreamModel``: Dream checkpoints (Dream-org/Dream-v0-Base-7B, -Instruct-7B) as a structgen backend.

Loading, checks, turn-end folding and chat rendering are shared with LLaDA (``llada.RemoteCodeModel``);
this module owns what differs (from DreamLM/Dream's ``generation_utils.py`` and the checkpoint's
``config.json`` / ``tokenizer_config.json``):

- **the logit shift.** Dream was initialised from an autoregressive model (Qwen2.5) and keeps its output
  convention: the logit at position ``i`` predicts the token at ``i + 1``. The adapter shifts it back one
  position (position 0 repeats its own row, as Dream's sampler does), so ``logits()[:, i]`` is about token
  ``i`` like every other backend.
- **the mask token** ``<|mask|>`` (151666): ``config.mask_token_id``, else the tokenizer's mask token.
- **EOS**: ``<|endoftext|>`` (151643, ``config.eos_token_id``; also the pad token) fills the canvas tail; the
  ChatML turn end ``<|im_end|>`` (151645) is folded into it.
- **attention masks**: without padding the model is called with ``attention_mask="full"`` (bidirectional, no
  mask tensor), as Dream's sampler does. With left padding (a 2-D ``[B, L]`` mask, 1 = attend) it gets a
  boolean ``[B, 1, L, L]`` mask, true where both positions are real, and position ids that count real tokens
  only. Padding rows also attend to themselves so that no row is fully masked (SDPA returns NaN for one).
- **transformers 5**: Dream's modeling code (written for transformers 4.46) looks up
  ``ROPE_INIT_FUNCTIONS["default"]``, gone in 5.x; ``_loading_context`` provides it while Dream loads, and
  ``_after_load`` recomputes the RoPE frequency buffer that 5.x's meta-device loading leaves uninitialised.
- **the tokenizer**: Dream ships a Python (slow) ``DreamTokenizer`` (Qwen2's byte-level BPE). structgen needs
  a fast one: ``tokenizer.json`` when the directory has it, else a fast Qwen2 tokenizer built from the same
  ``vocab.json`` / ``merges.txt`` and the added tokens in ``tokenizer_config.json``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import torch

from ..errors import ModelLoadError
from .llada import RemoteCodeModel


def default_rope_parameters(config=None, device=None, seq_len=None, **rope_kwargs):
    """Unscaled RoPE: ``(inv_freq, attention_factor)`` with ``inv_freq[j] = theta ** (-2j / dim)`` and factor 1,
    the transformers 4.x "default" entry Dream's modeling code calls (``rope_kwargs`` may give dim and base)."""
    params = getattr(config, "rope_parameters", None)
    params = params if isinstance(params, dict) else {}
    base = rope_kwargs.get("base") or getattr(config, "rope_theta", None) or params.get("rope_theta") or 10000.0
    dim = rope_kwargs.get("dim") or getattr(config, "head_dim", None) or \
        config.hidden_size // config.num_attention_heads
    dim = int(dim * getattr(config, "partial_rotary_factor", 1.0))
    exponent = torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim
    return 1.0 / (float(base) ** exponent), 1.0


class DreamModel(RemoteCodeModel):
    """Dream (``model_type: "Dream"``, ``DreamModel``): logits shifted back one position, ``<|im_end|>`` folded
    into EOS ``<|endoftext|>``."""

    family = "Dream"
    model_types = ("dream",)
    architectures = ("DreamModel",)
    turn_end_tokens = ("<|im_end|>",)
    hub_id = "Dream-org/Dream-v0-Instruct-7B"
    max_length_keys = ("max_position_embeddings",)

    @classmethod
    @contextlib.contextmanager
    def _loading_context(cls) -> Iterator[None]:
        """Dream's rotary embedding asks ``ROPE_INIT_FUNCTIONS["default"]``, which transformers 5 dropped (each
        model computes default RoPE itself). The plain RoPE formula is registered under that name while Dream
        loads (its modules keep a reference), then removed: left in place, transformers 5 would also use it to
        re-initialise other models' rotary buffers, whose defaults may differ (ModernBERT's per-layer thetas)."""
        from transformers import modeling_rope_utils

        table = modeling_rope_utils.ROPE_INIT_FUNCTIONS
        added = "default" not in table
        if added:
            table["default"] = default_rope_parameters
        try:
            yield
        finally:
            if added:
                table.pop("default", None)

    @classmethod
    def _after_load(cls, model) -> None:
        """Recompute the RoPE frequencies. They are a non-persistent buffer computed in ``__init__``;
        transformers 5 builds the model without running that computation for real (meta device) and refills
        such buffers only through ``_init_weights``, which Dream overrides without them: left alone,
        ``inv_freq`` would be uninitialised memory."""
        for module in model.modules():
            init_fn, buf = getattr(module, "rope_init_fn", None), getattr(module, "inv_freq", None)
            if not callable(init_fn) or not isinstance(buf, torch.Tensor):
                continue
            inv_freq, scale = init_fn(getattr(module, "config", None), torch.device("cpu"),
                                      **(getattr(module, "rope_kwargs", None) or {}))
            device = buf.device if buf.device.type != "meta" else torch.device("cpu")
            module.register_buffer("inv_freq", inv_freq.float().to(device), persistent=False)
            module.original_inv_freq = module.inv_freq
            module.attention_scaling = scale

    @classmethod
    def _load_tokenizer(cls, p: Path):
        if (p / "tokenizer.json").is_file():
            return super()._load_tokenizer(p)
        if not ((p / "vocab.json").is_file() and (p / "merges.txt").is_file()):
            raise ModelLoadError(f"no tokenizer in {str(p)!r}: copy vocab.json, merges.txt and tokenizer_config.json "
                                 f"from {cls.hub_id} (or a tokenizer.json)")
        from transformers import Qwen2Tokenizer

        try:
            return Qwen2Tokenizer.from_pretrained(str(p), local_files_only=True)
        except Exception as e:
            raise ModelLoadError(f"could not build a fast tokenizer from vocab.json and merges.txt in {str(p)!r} "
                                 f"({type(e).__name__}: {e}); copy the tokenizer files again from {cls.hub_id}") from e

    def _logits(self, ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if attention_mask is None or bool(attention_mask.bool().all()):
            out = self.model(input_ids=ids, attention_mask="full")
        else:
            real = attention_mask.bool()
            n = ids.shape[1]
            pair = real[:, None, :, None] & real[:, None, None, :]
            pair |= torch.eye(n, dtype=torch.bool, device=ids.device)
            positions = (real.long().cumsum(-1) - 1).clamp_min(0)
            out = self.model(input_ids=ids, attention_mask=pair, position_ids=positions)
        logits = self._raw(out)
        return self._fold(torch.cat([logits[:, :1], logits[:, :-1]], dim=1))


__all__ = ["DreamModel", "default_rope_parameters"]
