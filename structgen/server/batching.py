"""``BatchingModel``: one model shared by concurrent generations, their forward passes run as batches.

Each generation runs the sampler loop in its own worker thread and calls ``model.logits(ids, start=P)`` once
per step (the canvas rows only). The proxy queues those calls; one batcher thread gathers them and runs them
as a single forward pass of the wrapped model (its output layer from the smallest start on), then hands
every caller its own rows. It flushes as soon as every generation in flight (see
:meth:`BatchingModel.generation`) is waiting, when ``max_batch`` rows are queued, or when ``window_s`` has
passed since the first queued call, so a lone request waits for nobody.

Sequences of different lengths are right-padded (pad id: the tokenizer's pad token, else EOS) and an
attention mask hides the padding; every backend honours it (positions start at 0 on every row, so a padded
row sees exactly what it would see alone, up to float rounding). Only the batcher thread ever calls the
wrapped model, so a backend need not be thread-safe. An error in a batched call is raised in every caller of
that batch.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from ..errors import ConfigError
from ..models.base import DiffusionModel

__all__ = ["BatchingModel"]


@dataclass
class _Call:
    ids: torch.Tensor  # [B, L] on the model's device
    start: int = 0  # the caller wants the logits of positions start.. only
    done: threading.Event = field(default_factory=threading.Event)
    out: torch.Tensor | None = None
    error: BaseException | None = None


@dataclass
class BatchStats:
    """Counters for /health and the load test: forward passes, sequences and the largest batch."""

    batches: int = 0
    sequences: int = 0
    largest: int = 0

    def to_dict(self) -> dict:
        mean = self.sequences / self.batches if self.batches else 0.0
        return {"batches": self.batches, "sequences": self.sequences, "largest": self.largest,
                "mean_batch": round(mean, 3)}


class BatchingModel(DiffusionModel):
    """Wraps ``inner`` (any ``DiffusionModel``); safe to call from many threads (see the module docstring)."""

    #: concurrent generations may share this model (the agent runtime then does not serialise them)
    thread_safe = True

    def __init__(self, inner: DiffusionModel, *, window_s: float = 0.004, max_batch: int = 8):
        if isinstance(inner, BatchingModel):
            inner = inner.inner
        if max_batch < 1 or window_s < 0:
            raise ConfigError(f"BatchingModel needs max_batch >= 1 and window_s >= 0, got {max_batch}, {window_s}")
        self.inner = inner
        for name in ("tokenizer", "vocab_size", "mask_id", "eos_id", "device", "name", "max_length"):
            setattr(self, name, getattr(inner, name))
        pad = getattr(inner.tokenizer, "pad_token_id", None)
        self.pad_id = int(pad) if pad is not None else int(inner.eos_id)
        self.window_s, self.max_batch = float(window_s), int(max_batch)
        self.stats = BatchStats()
        self._cv = threading.Condition()
        self._queue: list[_Call] = []
        self._active = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="structgen-batcher", daemon=True)
        self._thread.start()

    # -- the protocol, delegated ------------------------------------------------------------------------
    def encode_prompt(self, prompt) -> list[int]:
        return self.inner.encode_prompt(prompt)

    def vocab(self):
        return self.inner.vocab()

    def decode(self, ids) -> str:
        return self.inner.decode(ids)

    def __getattr__(self, name: str):  # backend-specific attributes (e.g. RandomLogits.calls)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # -- callers -----------------------------------------------------------------------------------------
    @contextmanager
    def generation(self):
        """Mark one generation in flight while the block runs: the batcher waits for its calls."""
        with self._cv:
            self._active += 1
        try:
            yield
        finally:
            with self._cv:
                self._active -= 1
                self._cv.notify_all()

    def _logits(self, ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return self._logits_from(ids, attention_mask, 0)

    def _logits_from(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, start: int) -> torch.Tensor:
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            # already a padded batch: run it as it is
            return self.inner.logits(ids, attention_mask, start=start)
        call = _Call(ids, start)
        with self._cv:
            if self._closed:
                raise ConfigError("the batching model is closed (the server is shutting down)")
            self._queue.append(call)
            self._cv.notify_all()
        call.done.wait()
        if call.error is not None:
            raise call.error
        return call.out

    def close(self) -> None:
        """Stop the batcher thread; calls still queued fail with ``ConfigError``."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._thread.join(timeout=5)

    # -- the batcher thread ------------------------------------------------------------------------------
    def _take(self) -> list[_Call] | None:
        """The next batch (None once closed): waits for a first call, then for the others."""
        with self._cv:
            while not self._queue and not self._closed:
                self._cv.wait()
            if self._closed:
                for c in self._queue:
                    c.error = ConfigError("the batching model is closed (the server is shutting down)")
                    c.done.set()
                self._queue.clear()
                return None
            deadline = time.monotonic() + self.window_s
            while True:
                rows = sum(c.ids.shape[0] for c in self._queue)
                waiting_for = max(self._active, 1)
                left = deadline - time.monotonic()
                if rows >= self.max_batch or len(self._queue) >= waiting_for or left <= 0 or self._closed:
                    break
                self._cv.wait(left)
            batch, rows = [], 0
            while self._queue and (not batch or rows + self._queue[0].ids.shape[0] <= self.max_batch):
                c = self._queue.pop(0)
                batch.append(c)
                rows += c.ids.shape[0]
            return batch

    def _run(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            try:
                outs = self._forward([c.ids for c in batch], [c.start for c in batch])
                for c, o in zip(batch, outs, strict=True):
                    c.out = o
            except BaseException as e:  # noqa: BLE001 - handed to every caller of the batch
                for c in batch:
                    c.error = e
            for c in batch:
                c.done.set()

    def _forward(self, seqs: list[torch.Tensor], starts: list[int]) -> list[torch.Tensor]:
        """One forward pass over ``seqs`` (each ``[B_i, L_i]``), split back per caller: caller ``i`` gets
        positions ``starts[i]..L_i`` (the pass computes the output layer from the smallest start on)."""
        self.stats.batches += 1
        n_rows = sum(s.shape[0] for s in seqs)
        self.stats.sequences += n_rows
        self.stats.largest = max(self.stats.largest, n_rows)
        if len(seqs) == 1:
            return [self.inner.logits(seqs[0], start=starts[0])]
        width = max(s.shape[1] for s in seqs)
        ids = torch.full((n_rows, width), self.pad_id, dtype=torch.long, device=self.device)
        mask = torch.zeros((n_rows, width), dtype=torch.long, device=self.device)
        r = 0
        for s in seqs:
            ids[r:r + s.shape[0], :s.shape[1]] = s
            mask[r:r + s.shape[0], :s.shape[1]] = 1
            r += s.shape[0]
        first = min(starts)
        out = self.inner.logits(ids, None if bool(mask.all()) else mask, start=first)
        parts, r = [], 0
        for s, st in zip(seqs, starts, strict=True):
            parts.append(out[r:r + s.shape[0], st - first:s.shape[1] - first])
            r += s.shape[0]
        return parts
