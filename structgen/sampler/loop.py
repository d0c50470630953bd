"""The masked-diffusion canvas loop: forced commits for free, one model call per step, jointly feasible
commits chosen by the commit policy inside the current block.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..constraints.base import MASK, ConstraintSession
from .events import StepEvent
from .policy import CommitPolicy


@dataclass
class LoopStats:
    nfe: int = 0
    steps: int = 0
    forced: int = 0  # forced commits, EOS tail included (see ``forced_at`` for the final canvas)
    forced_at: torch.Tensor | None = None  # bool [T]: the position's current token was forced
    placed_at: torch.Tensor | None = None  # long [T]: the step that placed the position's current token
    on_step: Callable[[StepEvent], None] | None = None  # called with every step event
    record: bool = False  # keep the step events in ``events``

    def placed(self, where: torch.Tensor, size: int) -> None:
        """Record that the tokens at ``where`` (a bool mask or positions) were placed by the coming step."""
        if self.placed_at is None:
            self.placed_at = torch.full((size,), -1, dtype=torch.long, device=where.device)
        self.placed_at[where] = self.steps

    @property
    def wants_events(self) -> bool:
        return self.record or self.on_step is not None

    def publish(self, ev: StepEvent) -> None:
        """Record the event and/or hand it to ``on_step``."""
        if self.record:
            self.events.append(ev)
        if self.on_step is not None:
            self.on_step(ev)
    model_s: float = 0.0
    constraint_s: float = 0.0
    events: list = field(default_factory=list)


def gumbel(shape, gen: torch.Generator, device) -> torch.Tensor:
    """Standard Gumbel noise: argmax(logits + T * noise) samples from softmax(logits / T)."""
    u = torch.rand(shape, generator=gen, device=gen.device).to(device).clamp(1e-10, 1.0 - 1e-7)
    return -torch.log(-torch.log(u))


@torch.inference_mode()
def denoise(model, prompt_ids: torch.Tensor, session: ConstraintSession, canvas: torch.Tensor,
            policy: CommitPolicy, *, temperature: float = 0.0, gen: torch.Generator | None = None,
            penalty: torch.Tensor | None = None, stats: LoopStats, decode: Callable | None = None,
            ) -> torch.Tensor:
    """Fill every masked position of ``canvas`` (in place) and return it."""
    device = canvas.device
    P, T = prompt_ids.shape[0], canvas.shape[0]
    mask_id = model.mask_id
    # the tokens the no-stutter rule applies to: words, unless the prompt repeats them itself
    worded = policy.stutter_tokens(model.vocab().worded.to(device), prompt_ids) if policy.stutter_gap else None
    blank = policy.blank_tokens(model.vocab().blank.to(device), prompt_ids)  # and no run of spaces

    def emit(kind: str, positions: torch.Tensor, note: str = "") -> None:
        stats.steps += 1
        if stats.wants_events:
            stats.publish(StepEvent(step=stats.steps, kind=kind, nfe=stats.nfe, canvas=canvas.tolist(),
                                    positions=positions.tolist(), text=decode(canvas.tolist()) if decode else "",
                                    note=note))

    while bool((canvas == MASK).any()):
        # 1. forced tokens, no model call (repeat while a block is completed by them)
        while True:
            masked = canvas == MASK
            if not bool(masked.any()):
                break
            win = policy.window(masked)
            t0 = time.perf_counter()
            fz = session.forced(canvas, window=win)
            stats.constraint_s += time.perf_counter() - t0
            new = (fz != MASK) & masked
            if not bool(new.any()):
                break
            canvas[new] = fz[new]
            stats.placed(new, T)
            stats.forced += int(new.sum())
            if stats.forced_at is None:
                stats.forced_at = torch.zeros(T, dtype=torch.bool, device=device)
            stats.forced_at |= new
            emit("forced", torch.nonzero(new)[:, 0])
            if policy.window(canvas == MASK) == win:
                break
        masked = canvas == MASK
        if not bool(masked.any()):
            break
        win = policy.window(masked)
        # 2. one model call for every position; only the current block is scored
        w0, w1 = win
        t0 = time.perf_counter()
        ids = torch.cat([prompt_ids, torch.where(masked, torch.full_like(canvas, mask_id), canvas)])
        logits = model.logits(ids[None], start=P)[0, :T].to(device)
        stats.nfe += 1
        # the model's distribution (and sampling noise) for the block rows only; the engines read no other
        logprobs = logits if logits.dtype == torch.float32 else logits.float()
        policy.suppress_echoes(logprobs, canvas, win, worded, blank)  # no word next to the same committed word
        logprobs[w0:w1] = torch.log_softmax(logprobs[w0:w1], dim=-1)
        noise = None
        if temperature > 0 or penalty is not None:
            noise = torch.zeros_like(logprobs)
            if temperature > 0:
                noise[w0:w1] = temperature * gumbel((w1 - w0, logprobs.shape[1]), gen, device)
            if penalty is not None:
                noise[w0:w1] -= penalty[w0:w1]
        stats.model_s += time.perf_counter() - t0
        # 3. constrained proposal and commits
        t0 = time.perf_counter()
        prop = session.propose(canvas, logprobs, window=win, noise=noise, **policy.run_hints())
        prop.eligible[:w0] = False  # commits stay inside the block, whatever the engine proposed
        prop.eligible[w1:] = False
        pos = policy.choose(prop, worded, blank)
        canvas[pos] = prop.tokens[pos]
        stats.placed(pos, T)
        if stats.forced_at is not None:
            stats.forced_at[pos] = False
        stats.constraint_s += time.perf_counter() - t0
        emit("model", pos)
    return canvas
