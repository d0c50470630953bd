"""The interface every constraint engine implements.

A *canvas* is a ``LongTensor[T]`` of token ids with ``MASK`` (-1) at the positions not yet decided; it is
the model-independent view of the sampler's canvas (the sampler swaps in the model's own mask id when it
calls the model). The language of a canvas of length ``T`` is ``L · EOS*`` cut to exactly ``T`` tokens:
the output, then EOS filling the tail.

A ``Constraint`` is a spec compiled against one ``TokenVocab``; it is immutable and cached. Each
generation opens a ``ConstraintSession`` on it, which answers for one canvas:

* ``forced(canvas)``: masked positions that have exactly one allowed token (committed without a model call);
* ``propose(canvas, logprobs)``: a jointly feasible proposal for the masked positions, with a confidence
  per position and which positions the sampler may commit now;
* ``allowed(canvas)``: the exact per-position allowed-token masks (for traces, tests and the playground).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Sequence

import torch

MASK = -1


@dataclass
class Proposal:
    """What a session proposes for one canvas.

    ``tokens[t]`` is the proposed token at every position (the committed token where already committed).
    ``confidence[t]`` is the constrained probability of that token (0 where not eligible).
    ``eligible[t]`` marks masked positions the sampler may commit now. If ``prefix_only`` is set, the
    sampler may only commit a contiguous run of eligible positions starting at the first masked position
    (the grammar engine: exact at the frontier); otherwise any subset of eligible positions is jointly
    feasible (the automaton engine: every proposal is one valid completion).
    """

    tokens: torch.Tensor
    confidence: torch.Tensor
    eligible: torch.Tensor
    prefix_only: bool = False


class ConstraintSession(ABC):
    """Per-generation state of a constraint over a canvas of ``length`` positions."""

    def __init__(self, constraint: "Constraint", length: int, device: torch.device | str = "cpu"):
        self.constraint = constraint
        self.length = int(length)
        self.device = torch.device(device)

    @abstractmethod
    def forced(self, canvas: torch.Tensor) -> torch.Tensor:
        """LongTensor[T]: the forced token at masked positions with exactly one allowed token, else MASK."""

    @abstractmethod
    def propose(self, canvas: torch.Tensor, logprobs: torch.Tensor) -> Proposal:
        """Restrict ``logprobs`` [T, V] to the constraint and propose tokens for the masked positions.

        The sampler passes keywords too: ``window`` (its block), ``noise`` (sampling noise and repair
        penalties) and, for a ``prefix_only`` proposal, ``stop_below`` / ``run_limit`` (its commit rule: the
        run while confident, at least one token, or the first k), past which a run need not go."""

    @abstractmethod
    def allowed(self, canvas: torch.Tensor) -> torch.Tensor:
        """BoolTensor[T, V]: tokens allowed at each position given the rest of the canvas.

        Exact for the automaton engine; the grammar engine is exact at the frontier and returns
        all-False rows beyond it (it cannot tell yet)."""

    def feasible(self, canvas: torch.Tensor) -> bool:
        """True when the canvas still has at least one valid completion."""
        return bool(self.allowed(canvas)[canvas == MASK].any(dim=-1).all())


class Constraint(ABC):
    """A spec compiled against one vocabulary. Immutable; cached by (spec key, vocab key)."""

    engine: str = "?"

    def __init__(self, spec, vocab):
        self.spec = spec
        self.vocab = vocab

    @abstractmethod
    def accepts(self, token_ids: Sequence[int]) -> bool:
        """True when ``token_ids`` (optionally followed by EOS tokens) is a complete valid output."""

    @abstractmethod
    def accepts_prefix(self, token_ids: Sequence[int]) -> bool:
        """True when ``token_ids`` can still be extended to a complete valid output."""

    @abstractmethod
    def min_tokens(self) -> int:
        """Length in tokens (EOS not counted) of the shortest valid output."""

    @abstractmethod
    def session(self, length: int, device: torch.device | str = "cpu") -> ConstraintSession:
        """Open a session over a canvas of ``length`` positions."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} engine={self.engine} spec={self.spec!r}>"
