"""Commit policies: which of the proposed positions to commit after one model call.

* ``threshold`` (Fast-dLLM style): every eligible position whose constrained confidence is at least
  ``threshold``, and always the single most confident one, so each step makes progress;
* ``tokens_per_step`` (LLaDA style): the ``k`` most confident eligible positions.

Both work inside LLaDA-style semi-autoregressive blocks: only positions of the first block that still has
masked positions are eligible. For a frontier engine (``prefix_only``) the commits are a prefix of the
proposed run.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..constraints.base import Proposal
from ..errors import ConfigError


@dataclass(frozen=True)
class CommitPolicy:
    block_length: int = 32
    threshold: float | None = 0.9
    tokens_per_step: int | None = None

    def __post_init__(self):
        if self.block_length < 1:
            raise ConfigError(f"block_length must be >= 1, got {self.block_length}")
        if self.threshold is None and self.tokens_per_step is None:
            raise ConfigError("set either threshold (e.g. 0.9) or tokens_per_step (e.g. 2)")
        if self.threshold is not None and not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"threshold must be in (0, 1], got {self.threshold}")
        if self.tokens_per_step is not None and self.tokens_per_step < 1:
            raise ConfigError(f"tokens_per_step must be >= 1, got {self.tokens_per_step}")

    def window(self, masked: torch.Tensor) -> tuple[int, int]:
        """The current block: [start, end) of the first block that still has masked positions."""
        T = masked.shape[0]
        idx = torch.nonzero(masked)
        if len(idx) == 0:
            return T, T
        first = int(idx[0, 0])
        start = (first // self.block_length) * self.block_length
        return start, min(T, start + self.block_length)

    def run_hints(self) -> dict:
        """What a frontier engine's run need not go past (``propose(stop_below=, run_limit=)``): the prefix
        ``choose`` commits ends at the first token below the threshold, or after ``tokens_per_step``."""
        if self.tokens_per_step is not None:
            return {"stop_below": None, "run_limit": self.tokens_per_step}
        return {"stop_below": self.threshold, "run_limit": None}

    def choose(self, prop: Proposal) -> torch.Tensor:
        """LongTensor of positions to commit (never empty when something is eligible)."""
        idx = torch.nonzero(prop.eligible)[:, 0]
        if len(idx) == 0:
            return idx
        conf = prop.confidence[idx]
        if prop.prefix_only:
            # contiguous run from the frontier: commit while confident (fixed k: the first k)
            if self.tokens_per_step is not None:
                n = min(self.tokens_per_step, len(idx))
            else:
                below = torch.nonzero(conf < self.threshold)
                n = int(below[0, 0]) if len(below) else len(idx)
                n = max(1, n)
            return idx[:n]
        if self.tokens_per_step is not None:
            k = min(self.tokens_per_step, len(idx))
            return idx[conf.topk(k).indices]
        pick = conf >= self.threshold
        pick[conf.argmax()] = True
        return idx[pick]
