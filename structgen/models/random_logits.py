"""``RandomLogits``: a model backend of random logits, for dry runs, tests and benchmarks.

Logits are Gaussian noise times ``scale`` from a ``torch.Generator`` on the device, so a run is
deterministic given the seed and the sequence of calls (independent of the ids passed). The mask token's
own column is ``-inf``: like a trained masked LM, the backend never predicts its mask token.
"""

from __future__ import annotations

import torch

from ..errors import ModelLoadError
from .base import DiffusionModel


class RandomLogits(DiffusionModel):
    """Random logits over ``tokenizer``'s vocabulary.

    The mask id is the tokenizer's mask token; when it has none, an extra id ``len(tokenizer)`` is used and
    the logits width grows by one. ``vocab_size`` (default ``len(tokenizer)``) may be larger than the
    tokenizer, as real models pad their output layer.
    """

    def __init__(self, tokenizer, seed: int = 0, vocab_size: int | None = None, device: str | torch.device = "cpu",
                 scale: float = 3.0):
        from ..constraints.vocab import _as_fast_tokenizer, _first_id

        self.tokenizer = _as_fast_tokenizer(tokenizer)
        n_tok = len(self.tokenizer)
        size = int(vocab_size) if vocab_size is not None else n_tok
        if size < n_tok:
            raise ModelLoadError(
                f"vocab_size={size} is smaller than the tokenizer's {n_tok} tokens; pass vocab_size >= {n_tok} "
                "or leave it out"
            )
        mask = getattr(self.tokenizer, "mask_token_id", None)
        if mask is None:
            mask, size = n_tok, max(size, n_tok + 1)
        eos = _first_id(self.tokenizer, "eos_token_id", "sep_token_id", "pad_token_id")
        if eos is None:
            raise ModelLoadError(
                "the tokenizer has no EOS (or SEP/PAD) token, which structgen needs to fill the canvas tail; "
                "add one, e.g. tokenizer.add_special_tokens({'eos_token': '<|eos|>'})"
            )
        self.vocab_size = size
        self.mask_id = int(mask)
        self.eos_id = int(eos)
        self.device = torch.device(device)
        self.seed = int(seed)
        self.scale = float(scale)
        self.name = f"random(seed={self.seed})"
        self.max_length = None
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(self.seed)
        self.calls = 0

    def reseed(self, seed: int | None = None) -> None:
        """Restart the random stream (from ``seed``, default the constructor's)."""
        if seed is not None:
            self.seed = int(seed)
            self.name = f"random(seed={self.seed})"
        self.generator.manual_seed(self.seed)
        self.calls = 0

    def _logits(self, ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        b, n = ids.shape
        out = torch.randn((b, n, self.vocab_size), generator=self.generator, device=self.device,
                          dtype=torch.float32)
        out.mul_(self.scale)
        out[..., self.mask_id] = float("-inf")
        self.calls += 1
        return out
