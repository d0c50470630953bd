"""One optimisation step of ``structgen train``: the optimiser and the update on one batch.

The trainer's loop (``trainer.train``) and ``benchmarks/train_step.py`` both call ``training_step``, so the
benchmark times exactly what a run does.
"""

from __future__ import annotations

import torch

from .batches import Batch
from .config import TrainConfig
from .objective import llada_loss


def make_optimizer(model, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW over ``model``: weight decay on matrices only, each tied parameter once."""
    decay, no_decay, seen = [], [], set()
    for p in model.parameters():
        if id(p) in seen or not p.requires_grad:
            continue
        seen.add(id(p))
        (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas)


def training_step(model, opt, batch: Batch, cfg: TrainConfig, mask_id: int, eos_id: int,
                  noise: torch.Generator, bf16: bool) -> float | None:
    """One optimisation step on ``batch`` (on the model's device): the LLaDA loss with ``cfg``'s noise
    settings (bfloat16 autocast when ``bf16``), backward, gradient clipping and ``opt``'s update. The
    loss, or None with the weights untouched when it is not finite."""
    with torch.autocast(batch.input_ids.device.type, dtype=torch.bfloat16, enabled=bf16):
        loss, _ = llada_loss(model, batch.input_ids, batch.attention_mask, batch.canvas, mask_id, eps=cfg.eps,
                             generator=noise, prefix_share=cfg.prefix_share, eos_id=eos_id,
                             mask_power=cfg.mask_power, frontier_share=cfg.frontier_share,
                             frontier_block=cfg.frontier_block,
                             sources=batch.sources() if cfg.source_loss else None, source_loss=cfg.source_loss,
                             pointer_on_sources=cfg.pointer_loss_on == "sources", source_loss_on=cfg.source_loss_on)
    if not bool(torch.isfinite(loss)):
        return None
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    opt.step()
    return float(loss.detach())


__all__ = ["make_optimizer", "training_step"]
