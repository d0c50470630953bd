"""The HTTP routes: ``POST /v1/chat/completions``, ``GET /v1/models[/{id}]`` and ``GET /health``.

A chat completion is planned on the event loop (:meth:`ChatService.plan`: 400/404 before any work),
submitted to the worker pool (503 when full), then answered as JSON or as a stream of server-sent events.
The stream starts once the job has reported its first step, so errors found before any output keep their
status; its chunks are written when the turn is final (see :mod:`.responses`), preceded by the
``structgen.draft`` events when the request asked for them.
"""

from __future__ import annotations

import logging
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from .chat import ChatService
from .errors import APIError, not_found
from .responses import completion_body, completion_chunks
from .runner import RunningJob, cancel_on_exit, job_error, start
from .schemas import ChatCompletionRequest
from .sse import DONE, DRAFT_EVENT, data_frame, event_frame

log = logging.getLogger("structgen.server")

router = APIRouter()
STARTED = int(time.time())


def _service(request: Request) -> ChatService:
    return request.app.state.chat


@router.post("/v1/chat/completions")
async def chat_completions(body: ChatCompletionRequest, request: Request):
    service = _service(request)
    plan = service.plan(body)
    state = request.app.state
    running = start(state.pool, lambda job: service.run(plan, job), request, plan.request_id,
                    state.settings.retry_after_s)
    rid = {"X-Request-Id": plan.request_id}
    if not plan.stream:
        with cancel_on_exit(running):
            try:
                completion = await running.outcome()
            except Exception as e:  # noqa: BLE001 - answered in OpenAI's shape
                return _with(job_error(e).response(), rid)
        return JSONResponse(completion_body(completion), headers=rid)
    try:
        await running.wait_started()
    except BaseException:
        running.cancel()
        raise
    if running.finished and running.job.error is not None:
        running.stop_watching()
        return _with(job_error(running.job.error).response(), rid)
    return StreamingResponse(_stream(running, plan), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **rid})


def _with(response, headers: dict):
    response.headers.update(headers)
    return response


async def _stream(running: RunningJob, plan):
    """The SSE body: drafts (when asked for), then the chunks, then ``[DONE]``; an error frame on failure."""
    with cancel_on_exit(running):
        async for ev in running.events():
            if ev.kind == "draft" and plan.drafts:
                yield event_frame(DRAFT_EVENT, ev.data)
        try:
            completion = await running.outcome()
        except Exception as e:  # noqa: BLE001 - the stream has started: report it in the stream
            err: APIError = job_error(e)
            if running.disconnected:
                return
            yield data_frame(err.body())
            return
        for chunk in completion_chunks(completion, include_usage=plan.include_usage):
            yield data_frame(chunk)
        yield DONE


@router.get("/v1/models")
async def list_models(request: Request):
    service = _service(request)
    return {"object": "list", "data": [_model_card(service.model_id)]}


@router.get("/v1/models/{model_id:path}")
async def get_model(model_id: str, request: Request):
    service = _service(request)
    if model_id not in service.model_ids:
        raise not_found(f"The model '{model_id}' does not exist", code="model_not_found")
    return _model_card(service.model_id)


def _model_card(model_id: str) -> dict:
    return {"id": model_id, "object": "model", "created": STARTED, "owned_by": "structgen"}


@router.get("/health")
async def health(request: Request):
    state = request.app.state
    model = state.model
    return {"status": "ok", "model": state.chat.model_id, "backend": getattr(model.inner, "name", None),
            "device": str(model.device), "pool": state.pool.stats(), "batching": model.stats.to_dict(),
            "audit": str(getattr(state.audit, "path", "")) or None, "executes_tools": state.chat.execute}
