"""Which weights a run saves: the last ones, or those with the lowest held-out loss (``TrainConfig.keep``).

A run of the small recipe fits its training templates long after the held-out loss has stopped falling
(run 11 of docs/training-log.md: 0.647 at step 6,000, 0.713 at the end). ``BestWeights`` keeps a CPU copy
of the weights at the lowest held-out loss seen so far, so that the trainer can put them back before
saving. The copy costs one model's size in memory (about 19 MB for the small recipe) and a copy per
improvement, at most one per ``eval_every`` steps.
"""

from __future__ import annotations

import math

import torch


class BestWeights:
    """The weights at the lowest finite held-out loss ``offer``ed so far, and the step they were seen at."""

    def __init__(self) -> None:
        self.loss = math.inf
        self.step: int | None = None
        self.by_family: dict[str, float] = {}
        self._state: dict[str, torch.Tensor] | None = None

    def offer(self, model: torch.nn.Module, step: int, loss: float, by_family: dict[str, float]) -> bool:
        """Keep ``model``'s weights if ``loss`` is finite and lower than any before; whether it was."""
        if not math.isfinite(loss) or loss >= self.loss:
            return False
        self.loss, self.step, self.by_family = loss, step, dict(by_family)
        self._state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        return True

    def restore(self, model: torch.nn.Module) -> bool:
        """Put the kept weights back into ``model`` (on its own device); False when nothing was kept."""
        if self._state is None:
            return False
        model.load_state_dict(self._state)
        return True


__all__ = ["BestWeights"]
