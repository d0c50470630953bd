"""A bounded pool of generation threads and the ``Job`` each request runs as.

``WorkerPool(workers, queue_size)``: ``workers`` threads take jobs from a queue holding at most
``queue_size``; :meth:`WorkerPool.submit` raises :class:`Overloaded` at once when it is full (the server
answers 503), so a burst never grows memory or latency without bound.

A :class:`Job` is the bridge between the event loop and a worker thread: the worker reports progress with
:meth:`Job.emit` (thread-safe; the loop reads it from :meth:`Job.next_event`), and finishes with a result or
an exception. :meth:`Job.cancel` sets the flag the turn polls through ``job.cancelled`` (a client went away,
the server shuts down): from then on nothing is released or executed, and a job still queued never starts.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import StructgenError

__all__ = ["Job", "WorkerPool", "Overloaded", "Cancelled"]

_END = object()


class Overloaded(StructgenError):
    """Every worker is busy and the queue is full."""


class Cancelled(StructgenError):
    """The job was cancelled (its client disconnected, or the server is stopping) before it finished."""


@dataclass
class Event:
    """Something a job reports while it runs: ``kind`` (e.g. ``"draft"``) and a JSON-able ``data``."""

    kind: str
    data: Any = None


class Job:
    """One request's work, run by a worker thread; created on the event loop that waits for it."""

    def __init__(self, fn: Callable[["Job"], Any], loop: asyncio.AbstractEventLoop, request_id: str):
        self.fn, self.loop, self.request_id = fn, loop, request_id
        self._cancel = threading.Event()
        self._events: asyncio.Queue = asyncio.Queue()
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = asyncio.Event()

    # -- worker side -------------------------------------------------------------------------------------
    def cancelled(self) -> bool:
        """True once the job was cancelled; the turn polls it at every step."""
        return self._cancel.is_set()

    def emit(self, kind: str, data: Any = None) -> None:
        """Report an event to the waiting coroutine (callable from any thread)."""
        self._post(Event(kind, data))

    def _post(self, item: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(self._events.put_nowait, item)
        except RuntimeError:  # the loop is closed: the server is gone, nobody is listening
            pass

    def _finish(self) -> None:
        self._post(_END)
        try:
            self.loop.call_soon_threadsafe(self.done.set)
        except RuntimeError:
            pass

    def run(self) -> None:
        """Run ``fn`` in the calling (worker) thread, record its outcome and wake the waiter."""
        try:
            self.execute()
        finally:
            self.finish()

    def execute(self) -> None:
        """Run ``fn`` and record its outcome without waking the waiter yet (the pool first frees the slot,
        so a client that sees the answer can be admitted again at once)."""
        try:
            if self.cancelled():
                raise Cancelled("cancelled before it started")
            self.result = self.fn(self)
        except BaseException as e:  # noqa: BLE001 - reported to the waiting coroutine
            self.error = e

    def finish(self) -> None:
        """Wake the waiting coroutine: no more events, the outcome is recorded."""
        self._finish()

    # -- event-loop side ---------------------------------------------------------------------------------
    def cancel(self) -> None:
        self._cancel.set()

    async def next_event(self) -> Event | None:
        """The next event, or None once the job has finished (then see ``result`` / ``error``)."""
        item = await self._events.get()
        return None if item is _END else item


class WorkerPool:
    """``workers`` threads; at most ``workers + queue_size`` jobs admitted (running or waiting) at once."""

    def __init__(self, workers: int, queue_size: int, *, wrap: Callable[[], Any] | None = None):
        self.workers, self.queue_size = workers, queue_size
        self._queue: queue.Queue = queue.Queue()
        self._wrap = wrap  # a context manager factory each job runs inside (the batcher's ``generation``)
        self._lock = threading.Lock()
        self._admitted = 0  # jobs submitted and not finished
        self._busy = 0
        self._running: set[Job] = set()
        self._threads = [threading.Thread(target=self._work, name=f"structgen-worker-{i}", daemon=True)
                         for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, job: Job) -> None:
        """Queue ``job``; :class:`Overloaded` when ``workers + queue_size`` jobs are already admitted."""
        with self._lock:
            if self._admitted >= self.workers + self.queue_size:
                raise Overloaded(f"{self._admitted} requests in flight, the most this server admits")
            self._admitted += 1
        self._queue.put(job)

    def stats(self) -> dict:
        with self._lock:
            return {"workers": self.workers, "busy": self._busy, "queued": self._admitted - self._busy,
                    "queue_size": self.queue_size}

    def close(self, timeout: float = 5.0) -> None:
        """Cancel every job, running or queued (a running turn stops at its next step, releasing and
        executing nothing), and stop the threads."""
        with self._lock:
            running = list(self._running)
        for job in running:
            job.cancel()
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            job.cancel()
            job.run()  # records Cancelled and wakes its waiter
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=timeout)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            with self._lock:
                self._busy += 1
                self._running.add(job)
            try:
                if self._wrap is not None and not job.cancelled():
                    with self._wrap():
                        job.execute()
                else:
                    job.execute()
            except BaseException as e:  # noqa: BLE001 - the wrap itself failed; reported like the job's own
                job.error = job.error or e
            finally:
                # Free the slot *before* waking the waiter: once a client has its answer (a stream's
                # [DONE]), its next request must find room, not race the bookkeeping.
                with self._lock:
                    self._busy -= 1
                    self._admitted -= 1
                    self._running.discard(job)
                job.finish()
