"""``ModernBertWithCopyHead``: a ModernBERT masked LM whose predictions can point at visible tokens.

A small model trained for an hour on a CPU learns the *form* of a tool call and which tool a request asks
for, but not to copy the request's values into the arguments (docs/training-log.md, runs 1-3): carrying a
token's identity from the prompt to an output position through the residual stream is a circuit it does
not find in that budget. This model adds a pointer (copy) head, as in pointer-generator networks and
CopyNet: at each predicted position ``i``

    p(v) = g_i * softmax(W h_i)[v]  +  (1 - g_i) * sum_j a_ij [x_j = v]

where ``a_i = softmax_j(q_i . k_j / 8)`` attends over the *visible* tokens ``x_j`` (not masks, not padding,
not ``i`` itself: prompt and committed canvas tokens alike) with ``q = W_q h``, ``k = W_k h`` (64
dimensions), and ``g_i = sigmoid(w_g . h_i)`` gates generating against copying.

**Span continuation** (``config.copy_head_neighbours``): a copied value is a *span* of the request, and a
model of this size does not learn the induction circuit ("copy the token after the one my left neighbour
copied") within its budget — run 6 wrote ``"body": "... month to plan the trip, month to plan ..."`` and
``"city": "par you live"``. So the pointer's score gets learnt bonuses for matching neighbours,

    s_ij += w_i1 [x_{i-1} = x_{j-1}] + w_i2 [x_{i-2..i-1} = x_{j-2..j-1}]
          + w_i3 [x_{i+1} = x_{j+1}] + w_i4 [x_{i+1..i+2} = x_{j+1..j+2}],   w_i = W_n h_i + b_n

counted only where both neighbours are visible. The weights are per position, so the model can lean on
them inside a copied value and ignore them where a match means little (after a quote or a comma). Both
sides, because a diffusion canvas is filled in any order: a span may grow from its left end, its right
end, or both. This is the "smeared key" shortcut to induction heads, as a fixed feature rather than a
learnt one.

**Conversion path** (``config.copy_head_convert``): many values are not copied but *converted* — "July"
becomes ``07``, "euros" ``EUR``, "business class" ``business`` — and a model of this size does not learn to
route a source word through its layers into the vocabulary head (runs 16-17 wrote one month for every month
name). So the pointer may also emit, from the source it points at, a token read off that source:

    p(v) = g_i gen_i(v) + (1 - g_i) [ (1 - c_i) sum_j a_ij [x_j = v] + c_i sum_j a_ij conv_j(v) ]
    conv_j = softmax(decoder(head(C [h_j ; e(x_j)]))),   c_i = sigmoid(w_c . h_i)

with ``e(x_j)`` the source token's own (normalised) input embedding beside its last hidden state: the last
layer's state at a visible position keeps little of the token's identity (nothing in the loss asks it to),
so without ``e`` every source converted to the same token. The decoder is the generator's. ``July -> 07``
is then a per-token map learnt where the word is, found through the same pointer that copies. It costs one
vocabulary projection per position and a ``[L, L] x [L, V]`` product per row.

**Maps the slot chooses** (``config.copy_head_convert_maps`` = K, default 1): one map per source converts a
word to one token wherever it is read, but "January" is ``01`` inside a date and ``1`` as an integer (run
21 wrote dates' months right and bare months wrong). With K maps per source the reading slot mixes them,

    conv_i(v) = sum_k m_ik sum_j a_ij conv_jk(v),   m_i = softmax(M h_i),  conv_jk from the k-th slice of C

with ``M`` initialised at random, so that slots pick differently from the start (from an even mix every map
gets the same gradient and they never part). The slot only *chooses* among what the source offers: it cannot
write a token of its own through this path. (A product of experts, ``conv_i ∝ f_i * sum_j a_ij conv_j``
with a slot distribution ``f_i`` over the vocabulary, was tried first: on the full data ``f`` became a
second generator and the maps went flat; training log, run 22.) It costs K vocabulary projections per
position and K ``[Q, L] x [L, V]`` products per row (Q: the row's reading positions).

**Reading the likeliest sources only** (``config.copy_head_convert_topk`` = k, default 0 = every source): the
vocabulary projection of every position is most of the path's cost, and more than half of a training step's
(training log, run 24: 3,864 against 9,106 tokens per second without the path). With k > 0 each reading
position converts through its k heaviest sources alone, ``conv_i = sum_{j in top_k(a_i)} a_ij conv_j``, and
only the sources some position reads get a projection (in training a row's values come from a few request
words). The weights are not renormalised: the mass off the top k is lost from the conversion part (so the
loss pulls the pointer towards a few sources), and a pointer whose weight sits on k sources or fewer gives
exactly the dense value.

**Pointer loss** (``config.copy_head_pointer_loss``, the trainer sets it with the conversion path): a
mixture trains each part in proportion to its share of the right answer, so when the generator is ahead at
a slot early on (a constant month is right one time in twelve), the pointer's part there gets almost no
gradient and never catches up. The pointer's own loss, beside the mixture's while training, keeps it
learning until the gate can prefer it (``structgen.train.objective.llada_loss``; ``benchmarks/
conversion_task.py``). Not on the EOS tail: that is most of a canvas, and trained there the path learnt to
turn every source word into EOS (training log, run 18).

**Lookup** (``config.copy_head_lookup``): a cheaper way to convert, through the generator instead of the
pointer. The generator reads the visible tokens themselves before its projection,

    gen_i = softmax(W (h_i + sum_j b_ij V [h_j ; e(x_j)])),   b_i = softmax_j(Q h_i . K [h_j ; e(x_j)] / 8)

over the same visible tokens the pointer sees, with ``e(x_j)`` the token's own input embedding as in the
conversion path. ``V`` starts at zero, so an untrained lookup is the plain generator. "July" -> ``07`` is then
a lookup of the word's embedding mapped by ``V`` and the generator's head: one ``[L, L]`` attention per row
and no extra vocabulary projection, and the pointer stays a pure copier (the conversion path shares the
pointer between copying and converting, and runs 25-32 lost tool names and clean spans with it).

**The lookup on the request only** (``config.copy_head_lookup_prompt``): over every visible token, run 33's
lookup read the canvas token beside a date's month slot (the year's last digit), not the month word. With
this set, its keys are the prompt's tokens alone: the boundary is ``start`` in ``tail_log_probs`` (where the
sampler's canvas begins), the ``prompt`` mask ``masked_log_probs`` is given in training, and
``prompt_length`` in ``forward`` (without it, ``forward`` reads every visible token, as before).

The model's ``logits`` are ``log p``: every sampler, constraint and loss that takes logits works unchanged
(softmax of ``log p`` is ``p``). Saved as a normal Hugging Face directory whose ``config.architectures``
names this class and whose config holds ``copy_head_mask_id``; ``structgen.models.hf_mlm`` loads it with
this class.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import ModernBertForMaskedLM
from transformers.modeling_outputs import MaskedLMOutput

from ..errors import ModelLoadError

ARCHITECTURE = "ModernBertWithCopyHead"
COPY_DIM = 64
_NEG = -1e9
#: the neighbour bonuses' initial weights (left 1, left 2, right 1, right 2), in units of the score
NEIGHBOUR_INIT = (2.0, 1.0, 2.0, 1.0)


class PointerParts(NamedTuple):
    """What the training losses read at the predicted positions besides the mixture: the pointer's own
    ``log p`` (``pointer_loss_weight``) and its weights over the sources (the source loss)."""

    mixed: torch.Tensor  # [N, V] log p of the mixture (what ``forward`` gives)
    pointer: torch.Tensor  # [N, V] log p of the pointer alone (the generator's where nothing is visible)
    attn: torch.Tensor  # [N, L] the pointer's weights over each row's positions (0 off the sources)
    lookup: torch.Tensor | None = None  # [N, L] the lookup's weights likewise (None without the lookup)


class ModernBertWithCopyHead(ModernBertForMaskedLM):
    """``ModernBertForMaskedLM`` plus a pointer head (see the module docstring)."""

    def __init__(self, config):
        super().__init__(config)
        d = config.hidden_size
        self.copy_q = nn.Linear(d, COPY_DIM, bias=False)
        self.copy_k = nn.Linear(d, COPY_DIM, bias=False)
        self.copy_gate = nn.Linear(d, 1)
        for lin in (self.copy_q, self.copy_k, self.copy_gate):
            nn.init.normal_(lin.weight, std=0.02)
        nn.init.zeros_(self.copy_gate.bias)
        if getattr(config, "copy_head_convert", False):
            self.copy_convert = nn.Linear(2 * d, self.convert_maps * d, bias=False)
            self.copy_convert_gate = nn.Linear(d, 1)
            nn.init.normal_(self.copy_convert.weight, std=0.02)
            nn.init.normal_(self.copy_convert_gate.weight, std=0.02)
            nn.init.zeros_(self.copy_convert_gate.bias)
            if self.convert_maps > 1:
                self.copy_convert_pick = nn.Linear(d, self.convert_maps)
                # picks that differ from slot to slot from the start: an even mix gives every map the same
                # gradient, and they never part (benchmarks/conversion_task.py --forms 2)
                nn.init.normal_(self.copy_convert_pick.weight, std=3 * d ** -0.5)
                nn.init.zeros_(self.copy_convert_pick.bias)
        if getattr(config, "copy_head_lookup", False):
            self.lookup_q = nn.Linear(d, COPY_DIM, bias=False)
            self.lookup_k = nn.Linear(2 * d, COPY_DIM, bias=False)
            self.lookup_v = nn.Linear(2 * d, d, bias=False)
            nn.init.normal_(self.lookup_q.weight, std=0.02)
            nn.init.normal_(self.lookup_k.weight, std=0.02)
            nn.init.zeros_(self.lookup_v.weight)  # an untrained lookup adds nothing: the plain generator
        if getattr(config, "copy_head_neighbours", False):
            self.copy_neighbour = nn.Linear(d, len(NEIGHBOUR_INIT))
            nn.init.normal_(self.copy_neighbour.weight, std=0.02)
            with torch.no_grad():
                self.copy_neighbour.bias.copy_(torch.tensor(NEIGHBOUR_INIT))
        config.architectures = [ARCHITECTURE]

    @property
    def convert_maps(self) -> int:
        """K: the conversion maps per source that a slot chooses among (module docstring; 1 without it)."""
        k = getattr(self.config, "copy_head_convert_maps", 1) or 1
        if not isinstance(k, int) or k < 1:
            raise ModelLoadError(f"config.copy_head_convert_maps must be a positive integer, got {k!r}")
        return k

    @property
    def convert_topk(self) -> int:
        """k: the sources each reading position converts through (module docstring; 0 = every source)."""
        k = getattr(self.config, "copy_head_convert_topk", 0) or 0
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise ModelLoadError(f"config.copy_head_convert_topk must be an integer >= 0, got {k!r}")
        return k

    @property
    def lookup_on_prompt(self) -> bool:
        """Whether the lookup reads the prompt's tokens only (module docstring; needs the lookup)."""
        return bool(getattr(self.config, "copy_head_lookup_prompt", False))

    @property
    def copy_mask_id(self) -> int:
        mask_id = getattr(self.config, "copy_head_mask_id", None)
        if mask_id is None:
            raise ModelLoadError("the model's config has no copy_head_mask_id; set config.copy_head_mask_id to "
                                 "the tokenizer's mask token id and save the model again")
        return int(mask_id)

    def mixed_log_probs(self, hidden: torch.Tensor, ids: torch.Tensor, sources: torch.Tensor,
                        rows: torch.Tensor, cols: torch.Tensor, *, q_start: int = 0,
                        pointer: bool = False, prompt: torch.Tensor | None = None) -> torch.Tensor | PointerParts:
        """``log p`` ``[N, V]`` at positions ``(rows, cols)`` from the last hidden states ``[B, L, d]``;
        ``sources`` ``[B, L]`` marks the tokens a position may copy from. Every ``cols`` is at least
        ``q_start``: the pointer's queries are computed from there on only. With ``pointer``, the
        :class:`PointerParts` the training losses read (the pointer's own ``log p`` and weights).
        ``prompt`` ``[B, L]`` marks the prompt's positions: a lookup on the request only reads those of
        ``sources`` (module docstring)."""
        q = self.copy_q(hidden[:, q_start:])
        k = self.copy_k(hidden)
        scores = torch.matmul(q, k.transpose(1, 2)).float() / COPY_DIM ** 0.5  # [B, L - q_start, L]
        n = torch.arange(rows.numel(), device=hidden.device)
        src = sources[rows]  # [N, L]: what each position may copy from ...
        src[n, cols] = False  # ... never itself
        scores = scores[rows, cols - q_start]
        if hasattr(self, "copy_neighbour"):
            weights = self.copy_neighbour(hidden[rows, cols]).float()  # [N, 4]
            scores = scores + self._neighbour_bonus(ids, sources, rows, cols, weights)
        scores = scores.masked_fill(~src, _NEG)
        attn = torch.softmax(scores, dim=-1) * src  # exact zeros off the sources
        p_copy = torch.zeros(rows.numel(), self.config.vocab_size, dtype=attn.dtype, device=attn.device)
        p_copy.scatter_add_(1, ids[rows], attn)
        h = hidden[rows, cols]
        gen_in, looked = h, None
        if hasattr(self, "lookup_q"):
            keys = sources & prompt if prompt is not None and self.lookup_on_prompt else sources
            read, looked = self._looked_up(hidden, ids, keys, rows, cols, q_start)
            gen_in = h + read
        gen_logp = F.log_softmax(self.decoder(self.head(gen_in)).float(), dim=-1)
        gate = self.copy_gate(h).float()
        has_src = src.any(dim=-1, keepdim=True)  # nothing to copy: the generator alone
        log_g = torch.where(has_src, F.logsigmoid(gate), torch.zeros_like(gate))
        log_not_g = torch.where(has_src, F.logsigmoid(-gate), torch.full_like(gate, _NEG))
        log_pointer = torch.log(p_copy + 1e-9)
        if hasattr(self, "copy_convert"):
            p_conv = self._converted(hidden, ids, attn, rows, slot=h)
            c = self.copy_convert_gate(h).float()
            log_pointer = torch.logaddexp(F.logsigmoid(-c) + log_pointer,
                                          F.logsigmoid(c) + torch.log(p_conv + 1e-9))
        mixed = torch.logaddexp(log_g + gen_logp, log_not_g + log_pointer)
        if not pointer:
            return mixed
        return PointerParts(mixed, torch.where(has_src, log_pointer, gen_logp), attn, looked)

    @property
    def pointer_loss_weight(self) -> float:
        """The weight of the pointer's own loss beside the mixture's while training (0: none). A mixture
        trains each part in proportion to its share of the right answer, so a pointer that starts behind
        the generator at a slot never catches up there (a conversion path collapses to the generator's
        constant); its own loss keeps it learning until the gate can prefer it."""
        return float(getattr(self.config, "copy_head_pointer_loss", 0.0) or 0.0)

    def _converted(self, hidden: torch.Tensor, ids: torch.Tensor, attn: torch.Tensor, rows: torch.Tensor,
                   slot: torch.Tensor) -> torch.Tensor:
        """``[N, V]``: ``sum_k m_ik sum_j a_ij conv_jk`` for each position (module docstring), as batched
        products of the pointer weights ``attn`` ``[N, L]`` with every position's ``conv_jk``, one per map;
        ``slot`` ``[N, d]``: the reading positions' hidden states, which pick. The products run over the
        reading positions alone, packed per row (``_packed``): in training a row has a few masked
        positions, and a product over all ``L`` of them cost about 5% of a training step."""
        B, L = hidden.shape[:2]
        K = self.convert_maps
        top = self.convert_topk
        if 0 < top < L:
            return self._converted_topk(hidden, ids, attn, rows, slot, top)
        conv = self._conversions(hidden, ids)  # [B, L, K, V]
        at, Q = _packed(rows, B)
        dense = attn.new_zeros(B, Q, L).index_put((rows, at), attn)
        if K == 1:
            return torch.bmm(dense, conv[:, :, 0])[rows, at]
        pick = torch.softmax(self.copy_convert_pick(slot).float(), dim=-1)  # [N, K]
        return sum(pick[:, k:k + 1] * torch.bmm(dense, conv[:, :, k])[rows, at] for k in range(K))

    def _with_own_tokens(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """``[h_j ; e(x_j)]`` (``[..., 2d]``): each position's hidden state beside its token's own normalised
        input embedding, which the last layer's state keeps little of (module docstring)."""
        own = self.model.embeddings.norm(self.model.embeddings.tok_embeddings(ids))
        return torch.cat([hidden, own.to(hidden.dtype)], dim=-1)

    def _conversions(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """``conv_jk``: each source's K distributions over the vocabulary (``[..., K, V]`` for hidden states
        ``[..., d]`` and their token ids ``[...]``), read off ``[h_j ; e(x_j)]`` (module docstring)."""
        maps = self.copy_convert(self._with_own_tokens(hidden, ids))
        maps = maps.view(*ids.shape, self.convert_maps, hidden.shape[-1])
        return torch.softmax(self.decoder(self.head(maps)).float(), dim=-1)

    def _converted_topk(self, hidden: torch.Tensor, ids: torch.Tensor, attn: torch.Tensor, rows: torch.Tensor,
                        slot: torch.Tensor, top: int) -> torch.Tensor:
        """``[N, V]``: ``sum_k m_ik sum_{j in top(a_i)} a_ij conv_jk`` (module docstring, ``convert_topk``):
        the maps are projected at the distinct sources the reading positions' ``top`` heaviest weights name
        (``[U, K, V]``), and each position mixes its own ``top x K`` of them."""
        L = hidden.shape[1]
        K = self.convert_maps
        weight, where = attn.topk(top, dim=-1)  # [N, top]
        key = rows[:, None] * L + where  # a source as one number: row * L + position
        keys, inverse = torch.unique(key, return_inverse=True)  # [U], [N, top]
        r, j = keys // L, keys % L
        conv = self._conversions(hidden[r, j], ids[r, j])  # [U, K, V]
        picked = conv[inverse]  # [N, top, K, V]
        if K > 1:
            pick = torch.softmax(self.copy_convert_pick(slot).float(), dim=-1)  # [N, K]
            weight = weight[:, :, None] * pick[:, None, :]  # [N, top, K]
        N = rows.numel()
        return torch.bmm(weight.reshape(N, 1, -1).to(picked.dtype), picked.reshape(N, top * K, -1))[:, 0]

    def _looked_up(self, hidden: torch.Tensor, ids: torch.Tensor, visible: torch.Tensor, rows: torch.Tensor,
                   cols: torch.Tensor, q_start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``([N, d], [N, L])``: ``sum_j b_ij V [h_j ; e(x_j)]`` at the positions ``(rows, cols)`` and their
        weights ``b_i`` (module docstring, lookup), attending over each row's ``visible`` ``[B, L]`` tokens
        from position ``q_start`` on."""
        both = self._with_own_tokens(hidden, ids)  # [B, L, 2d]
        q = self.lookup_q(hidden[:, q_start:])  # [B, L - q_start, 64]
        scores = torch.matmul(q, self.lookup_k(both).transpose(1, 2)).float() / COPY_DIM ** 0.5
        scores = scores.masked_fill(~visible[:, None, :], _NEG)
        weights = torch.softmax(scores, dim=-1) * visible[:, None, :]  # exact zeros off the visible
        read = torch.matmul(weights.to(both.dtype), self.lookup_v(both))  # [B, L - q_start, d]
        return read[rows, cols - q_start].to(hidden.dtype), weights[rows, cols - q_start]

    @staticmethod
    def _neighbour_bonus(ids: torch.Tensor, visible: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor,
                         w: torch.Tensor) -> torch.Tensor:
        """``[N, L]``: the span-continuation bonus of each source ``j`` for each position ``(rows, cols)``
        with its weights ``w`` ``[N, 4]`` (module docstring). A neighbour that is not visible (a mask,
        padding, off the row) matches nothing: it reads as ``-1`` on the query side, ``-2`` on the key side."""
        seen = torch.where(visible, ids, torch.full_like(ids, -2))  # [B, L]
        pad = torch.full_like(seen[:, :2], -2)
        padded = torch.cat([pad, seen, pad], dim=1)  # padded[:, j + 2] = seen[:, j]
        L = ids.shape[1]

        def shifted(d: int) -> torch.Tensor:  # shifted(d)[:, j] = seen[:, j + d]
            return padded[:, 2 + d:2 + d + L]

        bonus = torch.zeros(rows.numel(), L, dtype=torch.float32, device=ids.device)
        for side, (w1, w2) in ((-1, (w[:, 0:1], w[:, 1:2])), (1, (w[:, 2:3], w[:, 3:4]))):
            k1, k2 = shifted(side)[rows], shifted(2 * side)[rows]  # the sources' neighbours, [N, L]
            q1, q2 = (shifted(d)[rows, cols].clamp(min=-1) for d in (side, 2 * side))  # mine (-2 -> -1)
            one = k1 == q1[:, None]
            bonus = bonus + w1 * one + w2 * (one & (k2 == q2[:, None]))
        return bonus

    def masked_log_probs(self, ids: torch.Tensor, attention_mask: torch.Tensor | None,
                         masked: torch.Tensor, *, pointer: bool = False, prompt: torch.Tensor | None = None):
        """``log p`` ``[N, V]`` at the ``masked`` positions only (training: row-major order); with
        ``pointer``, the :class:`PointerParts` there (``mixed_log_probs``). ``prompt`` ``[B, L]``: the
        prompt's positions (what a lookup on the request only reads)."""
        hidden = self.model(input_ids=ids, attention_mask=attention_mask).last_hidden_state
        rows, cols = torch.nonzero(masked, as_tuple=True)
        return self.mixed_log_probs(hidden, ids, self._sources(ids, attention_mask) & ~masked, rows, cols,
                                    pointer=pointer, prompt=prompt)

    def tail_log_probs(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, start: int) -> torch.Tensor:
        """``log p`` ``[B, L - start, V]`` at positions ``start..`` only (inference: the canvas, not the
        prompt); the same values as ``forward``'s there."""
        hidden = self.model(input_ids=ids, attention_mask=attention_mask).last_hidden_state
        B, L = ids.shape
        rows = torch.arange(B, device=ids.device).repeat_interleave(L - start)
        cols = torch.arange(start, L, device=ids.device).repeat(B)
        logp = self.mixed_log_probs(hidden, ids, self._sources(ids, attention_mask), rows, cols, q_start=start,
                                    prompt=_before(start, ids))
        return logp.view(B, L - start, -1)

    def _sources(self, ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        visible = ids != self.copy_mask_id
        return visible if attention_mask is None else visible & (attention_mask > 0)

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, prompt_length: int | None = None, **kwargs) -> MaskedLMOutput:
        """``log p`` at every position (as ``logits``). ``prompt_length``: where the canvas begins, for a
        lookup on the request only (module docstring); without it that lookup reads every visible token."""
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        B, L = input_ids.shape
        rows = torch.arange(B, device=input_ids.device).repeat_interleave(L)
        cols = torch.arange(L, device=input_ids.device).repeat(B)
        prompt = None if prompt_length is None else _before(prompt_length, input_ids)
        logp = self.mixed_log_probs(hidden, input_ids, self._sources(input_ids, attention_mask), rows, cols,
                                    prompt=prompt)
        logits = logp.view(B, L, -1)
        loss = None
        if labels is not None:
            loss = F.nll_loss(logits.view(B * L, -1), labels.view(-1), ignore_index=-100)
        return MaskedLMOutput(loss=loss, logits=logits)


def _before(start: int, ids: torch.Tensor) -> torch.Tensor:
    """``[B, L]`` bool: the positions before ``start`` (the prompt, where the sampler's canvas begins there)."""
    return (torch.arange(ids.shape[1], device=ids.device) < start).expand(ids.shape)


def _packed(rows: torch.Tensor, B: int) -> tuple[torch.Tensor, int]:
    """Each position's place among its row's positions (``[N]``, in the order given) and the most any row
    has: the layout of a ``[B, Q, L]`` batch that holds only the positions asked for."""
    if rows.numel() == 0:
        return rows, 0
    order = torch.argsort(rows, stable=True)
    counts = torch.bincount(rows, minlength=B)
    start = torch.cumsum(counts, 0) - counts
    at = torch.empty_like(rows)
    at[order] = torch.arange(rows.numel(), device=rows.device) - start[rows[order]]
    return at, int(counts.max())


__all__ = ["ModernBertWithCopyHead", "PointerParts", "ARCHITECTURE"]
