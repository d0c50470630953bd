"""LLaDA's masked-diffusion training objective, vectorised in torch.

For every row of a batch, ``t ~ U(0, 1)`` and the masking probability is ``p = eps + (1 - eps) * t`` (so
``p`` lies in ``[eps, 1]``, as in LLaDA's pre-training and SFT code). Each *canvas* position (the response
and its EOS tail) is replaced by the mask token with probability ``p``; the prompt and the padding never
are. A row that drew no mask gets one at a random canvas position, so every row contributes (this nudges
the effective ``p`` of such rows up by at most ``1 / canvas_len``, a negligible bias).

The loss of a row is the cross-entropy at its masked positions weighted by ``1 / p``, divided by the row's
canvas length (LLaDA's SFT normalisation: a Monte-Carlo estimate of the per-token negative ELBO); the batch
loss is the mean over rows. Only masked positions go through the output layer (``masked_logits``).

**Masking rates towards an empty canvas** (``mask_power``: 1 here, LLaDA's; 0.5 in the ``small`` preset).
``t = u ** mask_power`` with ``u`` uniform: below 1, more rows are drawn nearly all masked — the state
decoding starts from, where a small model is weakest and its first commits decide the rest. The ``1 / p``
weights are kept, so the loss then leans towards those states instead of estimating the ELBO; held-out
losses are always measured with uniform ``t``.

**Response prefixes as prompt** (``prefix_share``). With that probability a row's response is cut at a
uniform point ``c`` and its first ``c`` tokens join the prompt: never masked, not in the loss, and the
canvas length that normalises the row is what remains. This is LLaDA's SFT objective for the prompt
``prompt + response[:c]``, so the loss stays an ELBO term; it trains the state that semi-autoregressive
(block) decoding puts the model in — a committed left part, a partly masked block, masks to the right —
which uniform masking alone almost never shows: with ``t`` drawn uniformly, a position whose whole right
side is masked while its left side is visible is rare, and a small model learns to lean on the right
context (the arguments reveal the tool name) rather than on what was written before it.

**Decoding states** (``frontier_share``). Moving a prefix into the prompt still masks the rest at random.
The states the samplers actually visit are different: a frontier engine (the grammar engine, SQL) sees
a visible prefix and *every* position after the frontier masked; block decoding (the automaton, block
``frontier_block``) sees the blocks before the current one visible, the current block partly masked and
every later block masked. With probability ``frontier_share`` a row is noised into one of those two states
(half each): a frontier ``c`` uniform over the answer and its first EOS; a frontier row masks ``[c, n)``;
a block row shows the blocks before ``c``'s, masks the rest of ``c``'s block with the row's ``p`` (``c``
itself always) and masks every later block. The positions masked for certain are weighted as ``p = 1``
(``Noised.q``): the loss of such a row is its cross-entropy on the masked positions, with ``1 / p`` on the
block's random ones, over the canvas length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from ..errors import ConfigError


@dataclass
class Noised:
    """A batch after the forward (noising) process."""

    ids: torch.Tensor  # [B, L] input ids with the masked positions replaced by the mask id
    masked: torch.Tensor  # [B, L] bool: positions the model must predict
    p: torch.Tensor  # [B] the masking probability of each row
    canvas: torch.Tensor  # [B, L] bool: the positions that could be masked (the canvas minus any prefix)
    q: torch.Tensor | None = None  # [B, L] each position's masking probability, where rows differ (frontier)


def add_noise(input_ids: torch.Tensor, canvas: torch.Tensor, mask_id: int, *, eps: float = 1e-3,
              generator: torch.Generator | None = None, prefix_share: float = 0.0,
              eos_id: int | None = None, mask_power: float = 1.0, frontier_share: float = 0.0,
              frontier_block: int = 32) -> Noised:
    """Mask each canvas position of each row with that row's probability ``p = eps + (1 - eps) t``,
    ``t = u ** mask_power`` for ``u ~ U(0, 1)`` (``mask_power`` < 1 draws more rows near an empty canvas;
    see the module docstring).

    ``canvas`` is a bool ``[B, L]`` marking the response positions (EOS tail included); every row must have
    at least one. With probability ``prefix_share`` a row's first ``c`` canvas positions are left out of the
    canvas (see the module docstring): ``c`` is uniform in ``0 .. k`` where ``k`` is the number of canvas
    tokens that are not ``eos_id`` (the answer; the whole canvas when ``eos_id`` is None), and at most
    ``n - 1`` for a canvas of ``n``. With probability ``frontier_share`` a row is noised into a decoding
    state instead (frontier or block, see the module docstring; ``eos_id`` bounds the frontier the same way).
    Random numbers come from ``generator`` (on the CPU) for reproducibility.
    """
    B, L = input_ids.shape
    if not bool(canvas.any(dim=1).all()):
        raise ConfigError("every row needs at least one canvas position to mask; drop rows with an empty canvas")
    t = torch.rand(B, generator=generator)
    if mask_power != 1.0:
        t = t ** mask_power
    p = eps + (1.0 - eps) * t
    r = torch.rand(B, L, generator=generator)
    dev = input_ids.device
    if prefix_share > 0.0:
        n = canvas.sum(dim=1)
        cut = (torch.rand(B, generator=generator) * _answer_ends(input_ids, canvas, eos_id).cpu()).long()
        cut = torch.minimum(cut, n.cpu() - 1)  # at least one canvas position remains
        cut = torch.where(torch.rand(B, generator=generator) < prefix_share, cut, torch.zeros_like(cut)).to(dev)
        canvas = canvas & (_canvas_rank(canvas) >= cut[:, None])
    p, r = p.to(dev), r.to(dev)
    masked = (r < p[:, None]) & canvas
    q = None
    if frontier_share > 0.0:
        masked, q = _decoding_states(input_ids, canvas, masked, p, generator, frontier_share, frontier_block,
                                     eos_id)
    empty = ~masked.any(dim=1)
    if bool(empty.any()):  # at least one mask per row: the canvas position with the smallest draw
        pick = r.masked_fill(~canvas, 2.0).argmin(dim=1)
        rows = torch.nonzero(empty, as_tuple=True)[0]
        masked[rows, pick[rows]] = True
    ids = input_ids.masked_fill(masked, mask_id)
    return Noised(ids=ids, masked=masked, p=p, canvas=canvas, q=q)


def _answer_ends(input_ids: torch.Tensor, canvas: torch.Tensor, eos_id: int | None) -> torch.Tensor:
    """``[B]``: each row's canvas positions that are not ``eos_id``, plus one for the first EOS (the whole
    canvas when ``eos_id`` is None) — the bound of the uniform cut points of prefix and frontier rows."""
    if eos_id is None:
        return canvas.sum(dim=1)
    return (canvas & (input_ids != eos_id)).sum(dim=1) + 1


def _canvas_rank(canvas: torch.Tensor) -> torch.Tensor:
    """``[B, L]``: the index of each canvas position within its row's canvas."""
    return canvas.long().cumsum(dim=1) - 1


def _decoding_states(input_ids, canvas, masked, p, generator, share: float, block: int, eos_id):
    """``(masked, q)`` with a ``share`` of the rows re-noised into frontier and block states (module doc)."""
    if block < 1:
        raise ConfigError(f"frontier_block must be >= 1, got {block}")
    B = input_ids.shape[0]
    dev = input_ids.device
    k = torch.minimum(_answer_ends(input_ids, canvas, eos_id), canvas.sum(dim=1))
    c = (torch.rand(B, generator=generator) * k.cpu()).long().to(dev)  # the frontier: 0 .. k-1
    pick = torch.rand(B, generator=generator).to(dev)
    use = pick < share
    as_block = pick < share / 2  # half the chosen rows: a block state, the other half a frontier
    rank = _canvas_rank(canvas)
    start = (c // block) * block
    at_c = rank == c[:, None]
    after = canvas & (rank >= c[:, None])  # the frontier's masks: c and everything after it
    in_block = canvas & (rank >= start[:, None]) & (rank < (start + block)[:, None])
    later = canvas & (rank >= (start + block)[:, None])
    blk = (in_block & (masked | at_c)) | later  # the block at the row's p, c always, every later block
    masked = torch.where(use[:, None], torch.where(as_block[:, None], blk, after), masked)
    certain = use[:, None] & torch.where(as_block[:, None], later | at_c, after)
    return masked, torch.where(certain, 1.0, p[:, None])


def masked_logits(model, ids: torch.Tensor, attention_mask: torch.Tensor | None,
                  masked: torch.Tensor, prompt: torch.Tensor | None = None) -> torch.Tensor:
    """Logits ``[N, V]`` at the ``N`` masked positions (row-major order) of a Hugging Face masked LM.

    For ModernBERT (and any model with ``model`` / ``head`` / ``decoder`` parts) only the masked positions
    go through the prediction head and the vocabulary projection; the copy-head model returns the log of its
    mixed distribution there (``masked_log_probs``, given ``prompt``, the request's positions, for a lookup
    that reads the request only); other models compute all logits first.
    """
    if hasattr(model, "masked_log_probs"):  # the copy-head model: log-probabilities of its mixture
        return model.masked_log_probs(ids, attention_mask, masked, prompt=prompt)
    if all(hasattr(model, a) for a in ("model", "head", "decoder")):
        hidden = model.model(input_ids=ids, attention_mask=attention_mask).last_hidden_state
        return model.decoder(model.head(hidden[masked]))
    return model(input_ids=ids, attention_mask=attention_mask).logits[masked]


def diffusion_loss(logits: torch.Tensor, targets: torch.Tensor, noised: Noised, canvas_len: torch.Tensor,
                   *, per_row: bool = False) -> torch.Tensor:
    """The LLaDA loss from the logits at the masked positions: the batch mean, or ``[B]`` with ``per_row``.

    ``logits`` ``[N, V]`` and ``targets`` ``[N]`` are the masked positions in row-major order (as
    ``tensor[noised.masked]`` gives them); ``canvas_len`` ``[B]`` is each row's canvas length.
    """
    B = noised.masked.shape[0]
    row = torch.nonzero(noised.masked, as_tuple=True)[0]
    ce = F.cross_entropy(logits.float(), targets, reduction="none")
    p = noised.p[row] if noised.q is None else noised.q[noised.masked]
    w = 1.0 / (p * canvas_len.to(ce.device, ce.dtype)[row])
    if per_row:
        return torch.zeros(B, dtype=ce.dtype, device=ce.device).index_add_(0, row, ce * w)
    return (ce * w).sum() / B


def source_nll(attn: torch.Tensor, where: torch.Tensor, masked: torch.Tensor, *,
               per_row: bool = False) -> torch.Tensor:
    """The source loss: the mean over masked positions with pointer targets of ``-log sum_{j in where} a_j``
    (the pointer's weight ``attn`` ``[N, L]`` on the positions ``where`` ``[N, L]`` marks), or ``[B]`` with
    ``per_row`` (each row's share of that mean). Any of the marked positions will do (a word the request
    states twice is marked twice); ``structgen.train.sources`` keeps them narrow. Zero when no position has
    targets."""
    has = where.any(dim=-1)
    B = masked.shape[0]
    if not bool(has.any()):
        return attn.new_zeros(B) if per_row else attn.new_zeros(())
    nll = -torch.log((attn[has] * where[has]).sum(dim=-1) + 1e-6)
    if not per_row:
        return nll.mean()
    row = torch.nonzero(masked, as_tuple=True)[0][has]
    return attn.new_zeros(B).index_add_(0, row, nll) * (B / nll.numel())


def llada_loss(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, canvas: torch.Tensor,
               mask_id: int, *, eps: float = 1e-3, generator: torch.Generator | None = None,
               logits_fn: Callable | None = None, per_row: bool = False,
               prefix_share: float = 0.0, eos_id: int | None = None,
               mask_power: float = 1.0, frontier_share: float = 0.0,
               frontier_block: int = 32, sources: torch.Tensor | None = None,
               source_loss: float = 0.0, pointer_on_sources: bool = False,
               source_loss_on: str = "both") -> tuple[torch.Tensor, Noised]:
    """Noise the batch, run the model on it and return ``(loss, noised)`` (``loss`` is ``[B]`` with
    ``per_row``). ``logits_fn(model, ids, attention_mask, masked) -> [N, V]`` defaults to ``masked_logits``.

    A copy-head model with a ``pointer_loss_weight`` (the conversion path) adds, in training mode only, its
    pointer's own loss times that weight, on the masked positions whose target is not ``eos_id``. With
    ``sources`` (``Batch.sources``) and ``source_loss`` > 0, a copy-head model in training mode also adds
    ``source_loss`` times the *source loss* (``source_nll``): at each masked position that has pointer
    targets, ``-log`` of the pointer's weight on the prompt positions its value was rendered from, and the
    same of the lookup's weights for a model with the lookup (``source_loss_on``: ``"both"``, or only
    ``"pointer"`` or ``"lookup"``). With
    ``pointer_on_sources`` (and ``sources``) the pointer's own loss is kept to the masked positions that have
    pointer targets, the value tokens read off the request; keys, punctuation and other generated tokens are
    left to the mixture (run 23: a loss on every non-EOS token spends whatever freedom the conversion path
    has on JSON punctuation first).
    """
    noised = add_noise(input_ids, canvas, mask_id, eps=eps, generator=generator, prefix_share=prefix_share,
                       eos_id=eos_id, mask_power=mask_power, frontier_share=frontier_share,
                       frontier_block=frontier_block)
    targets, canvas_len = input_ids[noised.masked], noised.canvas.sum(dim=1)
    has_parts = logits_fn is None and model.training and hasattr(model, "masked_log_probs")
    w = getattr(model, "pointer_loss_weight", 0.0) if has_parts else 0.0
    ws = source_loss if has_parts and sources is not None else 0.0
    # the request, before any prefix joins it: what a lookup on the request only reads, as the sampler's
    # start gives it at inference (copy_head's docstring, lookup)
    prompt = ~canvas if attention_mask is None else (attention_mask > 0) & ~canvas
    if w or ws:  # the copy head's pointer trains on its own losses too (copy_head.PointerParts)
        parts = model.masked_log_probs(noised.ids, attention_mask, noised.masked, pointer=True, prompt=prompt)
        logits, pointer, attn = parts.mixed, parts.pointer, parts.attn
    elif logits_fn is None:
        logits = masked_logits(model, noised.ids, attention_mask, noised.masked, prompt=prompt)
    else:
        logits = logits_fn(model, noised.ids, attention_mask, noised.masked)
    loss = diffusion_loss(logits, targets, noised, canvas_len, per_row=per_row)
    if ws:
        where = sources[noised.masked]
        if source_loss_on != "lookup" or parts.lookup is None:
            loss = loss + ws * source_nll(attn, where, noised.masked, per_row=per_row)
        if parts.lookup is not None and source_loss_on != "pointer":  # the lookup reads the same words
            loss = loss + ws * source_nll(parts.lookup, where, noised.masked, per_row=per_row)
    if w:
        keep = None
        if eos_id is not None:  # not on the EOS tail: most of a canvas, it would teach every source to say EOS
            keep = targets != eos_id
        if pointer_on_sources and sources is not None:
            sourced = sources[noised.masked].any(dim=-1)
            keep = sourced if keep is None else keep & sourced
        if keep is not None:  # elsewhere the pointer's term is the mixture's value, with no gradient
            pointer = torch.where(keep[:, None], pointer, logits.detach())
        loss = loss + w * diffusion_loss(pointer, targets, noised, canvas_len, per_row=per_row)
    return loss, noised
