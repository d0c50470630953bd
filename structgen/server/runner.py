"""Running a plan on the worker pool from a request handler, and noticing when its client goes away.

:func:`start` submits the job (503 when the pool is full) and starts a watcher that reads the ASGI
``receive`` channel: the request body is already read, so the next message is ``http.disconnect`` — sent
when the client closes the connection. The watcher then cancels the job, which sets the turn's
``cancelled()`` flag: from that step on nothing is released or executed (the runtime records a
``cancelled`` row). Streaming or not, a request whose client left is cancelled within one sampler step.

:func:`wait_started` waits until the job has either reported its first event (the constraint compiled and
the canvas is being denoised) or finished, so that errors found before any output (a bad schema, a canvas
too small) still get their HTTP status instead of a stream that fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request

from .errors import APIError, overloaded
from .workers import Cancelled, Event, Job, Overloaded

log = logging.getLogger("structgen.server")

__all__ = ["RunningJob", "start"]


class RunningJob:
    """A submitted job, its disconnect watcher and the events read so far."""

    def __init__(self, job: Job, request: Request):
        self.job = job
        self.request = request
        self.buffered: list[Event] = []
        self.finished = False
        self.disconnected = False
        self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        receive = self.request.receive
        while True:
            try:
                msg = await receive()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a broken channel is a client that is gone
                msg = {"type": "http.disconnect"}
            if msg.get("type") == "http.disconnect":
                self.disconnected = True
                if not self.finished:
                    log.info("client of %s disconnected: cancelling", self.job.request_id)
                    self.job.cancel()
                return

    def stop_watching(self) -> None:
        self._watcher.cancel()

    async def wait_started(self) -> None:
        """Until the first event arrives (kept in ``buffered``) or the job finishes."""
        ev = await self.job.next_event()
        if ev is None:
            self.finished = True
        else:
            self.buffered.append(ev)

    async def events(self) -> AsyncIterator[Event]:
        """Every event (the buffered ones first) until the job finishes."""
        while self.buffered:
            yield self.buffered.pop(0)
        while not self.finished:
            ev = await self.job.next_event()
            if ev is None:
                self.finished = True
                return
            yield ev

    async def outcome(self) -> Any:
        """The job's result once it finishes (events are drained); raises its error."""
        async for _ in self.events():
            pass
        await self.job.done.wait()
        self.stop_watching()
        if self.job.error is not None:
            raise self.job.error
        return self.job.result

    def cancel(self) -> None:
        self.job.cancel()
        self.stop_watching()


def start(pool, fn, request: Request, request_id: str, retry_after_s: int) -> RunningJob:
    """Submit ``fn(job)`` to ``pool`` for ``request``; ``APIError`` 503 when the pool is full."""
    job = Job(fn, asyncio.get_running_loop(), request_id)
    try:
        pool.submit(job)
    except Overloaded:
        raise overloaded(retry_after_s) from None
    return RunningJob(job, request)


def job_error(e: BaseException) -> APIError:
    """What the client sees for a job that failed (``Cancelled`` included, though nobody is listening)."""
    if isinstance(e, APIError):
        return e
    if isinstance(e, Cancelled):
        return APIError(499, "The request was cancelled.", code="cancelled")
    log.error("generation failed", exc_info=e)
    from ..errors import GenerationError

    if isinstance(e, GenerationError):
        return APIError(500, f"Generation failed: {e}", type="server_error", code="generation_failed")
    return APIError(500, "The server had an error while processing your request.", type="server_error",
                    code="internal_error")


@contextlib.contextmanager
def cancel_on_exit(running: RunningJob):
    """Cancel the job if the block is left before it finished (a closed stream, a cancelled handler)."""
    try:
        yield running
    finally:
        if not running.job.done.is_set():
            running.cancel()
        else:
            running.stop_watching()
