"""The server's concurrency parts on their own: the batching model proxy and the bounded worker pool."""

from __future__ import annotations

import asyncio
import threading
import time
import warnings

import pytest
import torch

import structgen as sg
from structgen.errors import ConfigError
from structgen.models.default import default_tokenizer
from structgen.server.batching import BatchingModel
from structgen.server.workers import Cancelled, Job, Overloaded, WorkerPool


@pytest.fixture(scope="module")
def tiny_model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sg.load_model()


def _in_threads(fn, n: int) -> list:
    out: list = [None] * n
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, fn(i))) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_concurrent_calls_become_one_padded_batch_with_the_same_logits(tiny_model):
    seqs = [torch.randint(10, 4000, (1, n), generator=torch.Generator().manual_seed(n)) for n in (17, 40, 29)]
    alone = [tiny_model.logits(s) for s in seqs]
    proxy = BatchingModel(tiny_model, window_s=5.0, max_batch=8)
    try:
        with proxy.generation(), proxy.generation(), proxy.generation():  # three generations in flight
            batched = _in_threads(lambda i: proxy.logits(seqs[i]), 3)
        assert proxy.stats.batches == 1 and proxy.stats.largest == 3  # flushed once all three were waiting
        for a, b in zip(alone, batched, strict=True):
            assert b.shape == a.shape
            assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()
    finally:
        proxy.close()


def test_batched_callers_get_the_rows_from_their_own_start(tiny_model):
    """The sampler asks for its canvas rows only (``start=P``); a batch of callers with different prompt
    lengths runs the output layer from the smallest start and hands each its own rows."""
    seqs = [torch.randint(10, 4000, (1, n), generator=torch.Generator().manual_seed(n)) for n in (17, 40, 29)]
    starts = [5, 31, 0]
    alone = [tiny_model.logits(s)[:, st:] for s, st in zip(seqs, starts, strict=True)]
    proxy = BatchingModel(tiny_model, window_s=5.0, max_batch=8)
    try:
        with proxy.generation(), proxy.generation(), proxy.generation():
            batched = _in_threads(lambda i: proxy.logits(seqs[i], start=starts[i]), 3)
        assert proxy.stats.batches == 1
        for a, b in zip(alone, batched, strict=True):
            assert b.shape == a.shape and torch.allclose(a, b, atol=1e-4), (a - b).abs().max()
        assert torch.allclose(proxy.logits(seqs[1], start=31), alone[1], atol=1e-4)  # a lone caller
    finally:
        proxy.close()


def test_a_lone_caller_waits_for_nobody():
    model = sg.models.RandomLogits(default_tokenizer())
    proxy = BatchingModel(model, window_s=30.0)
    try:
        with proxy.generation():
            t0 = time.monotonic()
            out = proxy.logits(torch.zeros((1, 5), dtype=torch.long))
        assert out.shape == (1, 5, model.vocab_size)
        assert time.monotonic() - t0 < 10  # not the 30 s window: every generation in flight was waiting
    finally:
        proxy.close()


def test_max_batch_splits_and_generations_share_the_model():
    model = sg.models.RandomLogits(default_tokenizer())
    proxy = BatchingModel(model, window_s=0.05, max_batch=2)
    try:
        gen = sg.Generator(proxy)
        spec = sg.JsonSchema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})

        def run(i):
            with proxy.generation():
                return gen.generate(f"number {i}", spec, max_tokens=12)

        results = _in_threads(run, 4)
        assert all(r.valid and isinstance(r.value["n"], int) for r in results)
        assert proxy.stats.largest == 2 and proxy.stats.sequences == sum(r.nfe for r in results)
    finally:
        proxy.close()


def test_an_error_reaches_every_caller_of_the_batch_and_close_refuses_new_calls():
    class Broken(sg.models.RandomLogits):
        def _logits(self, ids, attention_mask):
            raise RuntimeError("device on fire")

    proxy = BatchingModel(Broken(default_tokenizer()), window_s=1.0)
    with proxy.generation(), proxy.generation():
        errors = _in_threads(lambda i: _error_of(lambda: proxy.logits(torch.zeros((1, 3 + i), dtype=torch.long))), 2)
    assert all(isinstance(e, RuntimeError) and "on fire" in str(e) for e in errors)
    proxy.close()
    with pytest.raises(ConfigError, match="closed"):
        proxy.logits(torch.zeros((1, 3), dtype=torch.long))


def _error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    return None


def test_pool_admits_workers_plus_queue_then_refuses_and_cancelled_jobs_never_start():
    async def scenario():
        loop = asyncio.get_running_loop()
        gate = threading.Event()
        ran: list[str] = []

        def work(job):
            gate.wait(30)
            ran.append(job.request_id)
            return job.request_id

        pool = WorkerPool(1, 1)
        jobs = [Job(work, loop, f"r{i}") for i in range(3)]
        pool.submit(jobs[0])
        pool.submit(jobs[1])
        with pytest.raises(Overloaded):
            pool.submit(jobs[2])
        jobs[1].cancel()  # still queued: it must never run
        gate.set()
        await asyncio.wait_for(jobs[0].done.wait(), 30)
        await asyncio.wait_for(jobs[1].done.wait(), 30)
        assert jobs[0].result == "r0" and isinstance(jobs[1].error, Cancelled) and ran == ["r0"]
        pool.submit(jobs[2])  # room again
        await asyncio.wait_for(jobs[2].done.wait(), 30)
        assert jobs[2].result == "r2"
        pool.close()

    asyncio.run(scenario())


def test_a_finished_job_has_freed_its_slot_before_its_waiter_wakes():
    """A client that has its answer may ask again at once: the slot must already be free (CI once saw a
    503 on the very next request, because the slot was freed after the waiter woke)."""
    import contextlib

    @contextlib.contextmanager
    def slow_exit():  # the batcher's bookkeeping after a turn, stretched so a race would always show
        yield
        time.sleep(0.3)

    async def scenario():
        loop = asyncio.get_running_loop()
        pool = WorkerPool(1, 0, wrap=slow_exit)
        for i in range(3):
            job = Job(lambda job: job.request_id, loop, f"r{i}")
            pool.submit(job)  # Overloaded here if the previous job's slot were still held
            await asyncio.wait_for(job.done.wait(), 30)
            assert job.result == f"r{i}"
        pool.close()

    asyncio.run(scenario())


def test_closing_the_pool_cancels_the_running_job():
    async def scenario():
        loop = asyncio.get_running_loop()
        started = threading.Event()

        def turn(job):
            started.set()
            for _ in range(3000):  # a turn polls cancelled() at every step
                if job.cancelled():
                    raise Cancelled("stopped at a step")
                time.sleep(0.01)
            return "ran to the end"

        pool = WorkerPool(1, 0)
        job = Job(turn, loop, "r")
        pool.submit(job)
        assert await asyncio.to_thread(started.wait, 30)
        await asyncio.to_thread(pool.close)
        await asyncio.wait_for(job.done.wait(), 30)
        assert isinstance(job.error, Cancelled) and job.result is None

    asyncio.run(scenario())
