"""Training rows and batches: an ``Example`` becomes ``prompt ids + canvas``, exactly as at inference.

The prompt is ``encode_prompt(ex.spec.render_prompt(ex.prompt))`` computed by ``PromptEncoder``, a
``DiffusionModel`` that holds only the tokenizer: it inherits ``encode_prompt`` (role markers, leading
special tokens) from the same base class the Generator's model uses, so training and inference cannot
diverge. The canvas is the target's ids followed by EOS up to the canvas length that
``TrainConfig.canvas_length`` draws (again each epoch), so the model learns EOS tails of many lengths.

A batch is right-padded with the pad id (attention mask 0); ``canvas`` marks the positions the objective
may mask. Rows are bucketed by length: shuffled, cut into windows of ``bucket_batches`` batches, sorted by
length inside a window, cut into batches of at most ``batch_size`` rows and ``max_batch_tokens`` positions
(rows x longest row: activation memory grows with it, and attention's with the square of the length), and
the batches shuffled, so padding stays small while the order stays random. Everything is drawn from a
seeded ``random.Random``: the same seed gives the same batches.

**Pointer targets** (``TrainConfig.source_loss``): a row may carry, for its value tokens, the prompt positions
their value was rendered from (``structgen.train.sources``); a batch holds them as ``pointers`` ``[K, 3]``
(``(b, i, j)``: position ``i`` of row ``b`` reads prompt position ``j``; an epoch's batches are built at once,
so the dense ``[B, L, L]`` mask, ``Batch.sources()``, is made only when a step needs it), or None.

**Length curriculum** (``batch_stream(competence=...)``): early in a run the rows come from the shortest
share of the data only, with short EOS tails, and that share grows to everything (see
``TrainConfig.competence`` for why).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import torch

from ..errors import ConfigError
from ..models.base import DiffusionModel
from .sources import pointer_targets
from .tokenizer import encode_targets


class PromptEncoder(DiffusionModel):
    """The prompt logic of a ``DiffusionModel`` over a tokenizer alone (no weights, no logits)."""

    def __init__(self, tokenizer, *, name: str = "prompt-encoder", request_notes: int = 0):
        self.tokenizer = tokenizer
        self.name = name
        self.request_notes = request_notes

    def _logits(self, ids, attention_mask):  # pragma: no cover - never called
        raise ConfigError("PromptEncoder only encodes prompts; load a model to compute logits")

    def encode_prompts(self, prompts: Sequence) -> list[list[int]]:
        """``encode_prompt`` of each prompt; the plain-text ones in one call of the tokenizer's batch encoder
        (the same ids: leading special tokens, then the text with special-token spellings kept as such)."""
        out: list[list[int] | None] = [None] * len(prompts)
        texts = [(i, self.with_notes(p)) for i, p in enumerate(prompts) if isinstance(p, str) and p]
        if texts:
            lead = list(self._leading_special_ids())
            enc = self.tokenizer([p for _, p in texts], add_special_tokens=False, return_attention_mask=False,
                                 return_token_type_ids=False)
            for (i, _), ids in zip(texts, enc["input_ids"]):
                out[i] = lead + list(ids)
        return [ids if ids is not None else self.encode_prompt(p) for ids, p in zip(out, prompts)]


@dataclass(frozen=True)
class Row:
    """One example as token ids."""

    prompt_ids: tuple[int, ...]
    target_ids: tuple[int, ...]
    family: str
    cap: int  # the longest canvas that fits after this prompt
    pointers: tuple = ()  # (target index, prompt positions) per value token (structgen.train.sources)


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L] long
    attention_mask: torch.Tensor  # [B, L] long, 1 = real token
    canvas: torch.Tensor  # [B, L] bool: the response positions (target + EOS tail)
    families: tuple[str, ...]
    pointers: torch.Tensor | None = None  # [K, 3] int32 (row, position, prompt position it reads) or None

    @property
    def n_tokens(self) -> int:
        return int(self.attention_mask.sum())

    def to(self, device) -> "Batch":
        return Batch(self.input_ids.to(device), self.attention_mask.to(device), self.canvas.to(device),
                     self.families, None if self.pointers is None else self.pointers.to(device))

    def sources(self) -> torch.Tensor | None:
        """``[B, L, L]`` bool: ``[b, i, j]`` where position ``i`` of row ``b`` reads prompt position ``j``."""
        if self.pointers is None:
            return None
        B, L = self.input_ids.shape
        dense = torch.zeros((B, L, L), dtype=torch.bool, device=self.input_ids.device)
        p = self.pointers.long()
        dense[p[:, 0], p[:, 1], p[:, 2]] = True
        return dense


#: examples encoded per call of the tokenizer's batch encoder (bounds the memory of one call)
ENCODE_CHUNK = 4096


def encode_examples(examples: Sequence, tokenizer, cfg, *, pointers: bool = False) -> tuple[list[Row], Counter]:
    """Rows for ``examples`` and the count of dropped ones by reason (prompt or target too long); with
    ``pointers``, each row's pointer targets from its example's ``sources``. Prompts and targets are
    encoded a chunk at a time by the tokenizer's batch encoder (``train_prep.py`` measures it)."""
    enc = PromptEncoder(tokenizer, request_notes=getattr(cfg, "notes_version", 0))
    rows: list[Row] = []
    dropped: Counter = Counter()
    for lo in range(0, len(examples), ENCODE_CHUNK):
        chunk = examples[lo: lo + ENCODE_CHUNK]
        prompts = enc.encode_prompts([ex.spec.render_prompt(ex.prompt) for ex in chunk])
        targets = encode_targets(tokenizer, [ex.target for ex in chunk], offsets=pointers)
        for ex, prompt, got in zip(chunk, prompts, targets):
            target, offsets = got if pointers else (got, None)
            cap = min(cfg.max_canvas, cfg.max_positions - len(prompt))
            if cap < max(1, len(target)):
                dropped["prompt too long" if cap < 1 else "target too long"] += 1
                continue
            where = (pointer_targets(tokenizer, prompt, ex.target, target, ex.sources, offsets=offsets)
                     if pointers else ())
            rows.append(Row(tuple(prompt), tuple(target), ex.family, cap, where))
    return rows, dropped


def assemble(rows: Sequence[Row], canvases: Sequence[int], pad_id: int, eos_id: int) -> Batch:
    """One right-padded batch: ``prompt + target + EOS * (canvas - len(target))`` per row."""
    seqs = [list(r.prompt_ids) + list(r.target_ids) + [eos_id] * (c - len(r.target_ids))
            for r, c in zip(rows, canvases)]
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    att = torch.zeros((len(seqs), L), dtype=torch.long)
    canvas = torch.zeros((len(seqs), L), dtype=torch.bool)
    for i, (r, s, c) in enumerate(zip(rows, seqs, canvases)):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        att[i, : len(s)] = 1
        canvas[i, len(r.prompt_ids): len(s)] = True
    triples = [(b, len(r.prompt_ids) + t, j) for b, r in enumerate(rows) for t, js in r.pointers for j in js]
    pointers = torch.tensor(triples, dtype=torch.int32) if triples else None
    return Batch(ids, att, canvas, tuple(r.family for r in rows), pointers)


def epoch_batches(rows: Sequence[Row], cfg, rng: random.Random, pad_id: int, eos_id: int,
                  order: list[int] | None = None, competence: float = 1.0) -> list[Batch]:
    """One epoch of bucketed batches (canvases drawn for this epoch); ``order`` (default: every row,
    shuffled) picks the rows, and a ``competence`` below 1 shortens the canvases (``curriculum_cap``)."""
    if not rows:
        raise ConfigError("no training rows: every example was dropped or none were given")
    if order is None:
        order = list(range(len(rows)))
        rng.shuffle(order)
    canv = {i: cfg.canvas_length(len(rows[i].target_ids), rng, curriculum_cap(rows[i], competence),
                                 rows[i].family) for i in order}
    window = cfg.batch_size * cfg.bucket_batches
    groups: list[list[int]] = []
    for w in range(0, len(order), window):
        chunk = sorted(order[w: w + window], key=lambda i: len(rows[i].prompt_ids) + canv[i])
        group: list[int] = []
        for i in chunk:  # ascending lengths: the row being added is the longest of its group
            if group and (len(group) >= cfg.batch_size
                          or (len(group) + 1) * (len(rows[i].prompt_ids) + canv[i]) > cfg.max_batch_tokens):
                groups.append(group)
                group = []
            group.append(i)
        groups.append(group)
    rng.shuffle(groups)
    return [assemble([rows[i] for i in g], [canv[i] for i in g], pad_id, eos_id) for g in groups]


def curriculum_cap(row: Row, competence: float) -> int:
    """The longest canvas ``row`` may get at ``competence``: its target plus that share of the room left."""
    if competence >= 1.0:
        return row.cap
    return len(row.target_ids) + int(max(0.0, competence) * (row.cap - len(row.target_ids)))


def batch_stream(rows: Sequence[Row], cfg, seed: int, pad_id: int, eos_id: int,
                 competence: Callable[[], float] | None = None) -> Iterator[tuple[int, Batch]]:
    """``(epoch, batch)`` forever, deterministic in ``seed``.

    While ``competence()`` (the length curriculum, ``TrainConfig.competence``) is below 1, each window of
    ``bucket_batches`` batches is drawn from the shortest ``competence`` share of the rows (prompt plus
    target) with canvases cut by ``curriculum_cap``; from then on the stream goes epoch after epoch over
    every row. The epoch number counts the rows drawn so far, divided by the number of rows.
    """
    rng = random.Random(seed)
    epoch = 0
    if competence is not None:
        by_length = sorted(range(len(rows)), key=lambda i: (len(rows[i].prompt_ids) + len(rows[i].target_ids), i))
        window = cfg.batch_size * cfg.bucket_batches
        drawn = 0
        while (c := competence()) < 1.0:
            pool = by_length[: max(min(window, len(rows)), math.ceil(c * len(rows)))]
            for b in epoch_batches(rows, cfg, rng, pad_id, eos_id, order=rng.sample(pool, min(window, len(pool))),
                                   competence=c):
                drawn += b.input_ids.shape[0]
                yield drawn // len(rows), b
        epoch = drawn // len(rows)
    while True:
        for b in epoch_batches(rows, cfg, rng, pad_id, eos_id):
            yield epoch, b
        epoch += 1


def fixed_batches(rows: Sequence[Row], cfg, seed: int, pad_id: int, eos_id: int) -> list[Batch]:
    """Batches for evaluation: canvases and order fixed by ``seed``, the same at every evaluation."""
    if not rows:
        return []
    return epoch_batches(rows, cfg, random.Random(seed), pad_id, eos_id)
