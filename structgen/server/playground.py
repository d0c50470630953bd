"""The playground: a page that animates the canvas being denoised, and the API behind it.

    from structgen.server.playground import router
    app.include_router(router)          # GET /playground, /playground/api/presets, POST /playground/api/run

The page (``static/playground.html``, ``.css``, ``.js``: vanilla, no CDN, no build step) lets a person pick a
JSON schema, a Lark grammar or a tool set (the bundled examples, or their own pasted in), type a prompt and
watch every step of the sampler: masked, forced and committed cells, the step count and ``nfe``; then the
validated result and, for tool sets, the commit-boundary state and the policy decision. "Values from the
prompt" decodes with ``ground=True`` (``structgen.grounding``). The bundled choices (the
catalogue behind ``GET /playground/api/presets``) are :mod:`structgen.server.playground_presets`'s.

``POST /playground/api/run`` streams Server-Sent Events: one ``structgen.draft`` per sampler step, in the wire
format the OpenAI-compatible server also uses (``{"step", "kind", "nfe", "cells": [{"t", "s"}], "text"}``,
``s`` = ``m`` masked / ``f`` forced / ``c`` committed by the model; a re-mask step adds ``note``, why), then
one ``structgen.result`` (``text, value, valid, errors, nfe, steps, decision``, ``ground`` and a few
more fields, see :func:`_result_payload`). A request that cannot run at all (a bad schema, an unknown preset)
is answered ``400`` before any stream starts; a failure during the run ends the stream with a result whose
``valid`` is false and whose ``errors`` say why.

The model and, for tool sets, the agent runtime come from the app when it has them (``app.state.generator``,
``app.state.runtime``, as ``structgen serve`` sets them: its policy decides and its audit log records), else
the playground makes its own once: ``load_model()`` and a runtime with the default policy and no audit log.
Runs are taken one at a time. When the app has API keys (``app.state.api_keys``), a run needs one too
(``Authorization: Bearer``): it runs the model, so it is no way around the keys.
Tool calls are never executed here: the runtime is asked with ``execute=False``, and a draft is shown as a
draft, never as something to act on. A client that disconnects stops its run at the next step.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..errors import StructgenError
from .playground_turn import Cancelled, run_turn
from .sse import event_frame
from .playground_presets import (  # noqa: F401  (re-exported: the presets' names stay importable from here)
    BUILTIN_SCHEMAS,
    EXAMPLES,
    GRAMMAR_PROMPTS,
    Preset,
    _preset_target,
    presets,
)

log = logging.getLogger("structgen.playground")

STATIC = Path(__file__).resolve().parent / "static"
#: the page's own assets, the only files served from ``STATIC``
ASSETS = {"playground.css": "text/css", "playground.js": "text/javascript"}

MAX_PROMPT_CHARS = 4000
MAX_SOURCE_CHARS = 60_000
MAX_CANVAS = 256

Kind = Literal["schema", "grammar", "tools"]


# -- requests ----------------------------------------------------------------------------------------------

class RunRequest(BaseModel):
    """What the page posts: a preset id, or ``source`` (a schema, a grammar or an OpenAI tools list) of
    ``kind``; the prompt; sampler settings; ``ground`` (schemas and tool sets: the answer's strings and
    numbers come from the prompt, ``structgen.grounding``; the SQL and alert-rule presets: their literals
    and names)."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind
    preset: str | None = Field(None, max_length=200)
    source: str | None = Field(None, max_length=MAX_SOURCE_CHARS)
    prompt: str = Field(max_length=MAX_PROMPT_CHARS)
    max_tokens: int = Field(64, ge=1, le=MAX_CANVAS)
    block_length: int = Field(32, ge=1, le=MAX_CANVAS)
    threshold: float = Field(0.9, gt=0.0, le=1.0)
    temperature: float = Field(0.0, ge=0.0, le=5.0)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    ground: bool = False


def build_target(req: RunRequest) -> Any:
    """The spec (schema, grammar) or the tools (tool set) the request names; ``HTTPException(400)`` saying
    what is wrong when it names none."""
    if (req.preset is None) == (req.source is None):
        raise HTTPException(400, "give exactly one of 'preset' (an id from /playground/api/presets) or 'source'")
    try:
        if req.preset is not None:
            p = presets().get(req.preset)
            if p is None or p.kind != req.kind:
                known = ", ".join(i for i, q in presets().items() if q.kind == req.kind)
                raise HTTPException(400, f"no {req.kind} preset {req.preset!r}; known: {known}")
            target = _preset_target(p)
        else:
            target = _from_source(req.kind, req.source)
    except StructgenError as e:
        raise HTTPException(400, f"{type(e).__name__}: {e}") from None
    if req.ground and req.kind == "grammar" and not callable(getattr(target, "grounded", None)):
        raise HTTPException(400, "ground takes values from the prompt: it applies to schemas, tool sets and the "
                                 "SQL and alert-rule presets, not to this grammar; leave it off")
    return target


def _from_source(kind: str, source: str) -> Any:
    from ..agent import as_tools
    from ..errors import SpecError
    from ..spec import Grammar, JsonSchema

    if not source.strip():
        raise SpecError(f"the {kind} is empty: paste one, or pick a preset")
    if kind == "schema":
        return JsonSchema(source)
    if kind == "grammar":
        return Grammar(source if "\n" in source else source + "\n")  # one line would be read as a file name
    try:
        data = json.loads(source)
    except json.JSONDecodeError as e:
        raise SpecError(f"the tools are not valid JSON: {e.msg} at line {e.lineno} column {e.colno}; paste a "
                        'list of OpenAI tools [{"type": "function", "function": {...}}]') from None
    return as_tools(data)


# -- the canvas on the wire --------------------------------------------------------------------------------

def step_payload(tracker, ev) -> dict:
    """The draft payload of one step: the wire format of ``structgen.agent.drafts`` (the server streams the
    same), plus ``note`` (why) for a re-mask."""
    tracker.update(ev)
    data = tracker.payload(ev)
    if ev.kind == "remask" and ev.note:
        data["note"] = ev.note
    return data


# -- running -----------------------------------------------------------------------------------------------

class Backend:
    """The playground's own model and runtime, used when the app has none; one run at a time."""

    def __init__(self):
        self.lock = threading.Lock()
        self._made: dict[str, Any] = {}
        self._make = threading.Lock()

    def generator(self, app) -> Any:
        gen = getattr(app.state, "generator", None)
        return gen if gen is not None else self._own("generator", _default_generator)

    def runtime(self, app) -> Any:
        rt = getattr(app.state, "runtime", None)
        return rt if rt is not None else self._own("runtime", lambda: _default_runtime(self.generator(app)))

    def _own(self, key: str, make: Callable[[], Any]) -> Any:
        with self._make:
            if key not in self._made:
                self._made[key] = make()
            return self._made[key]

    def acquire(self, cancel: threading.Event) -> None:
        """Take the run lock, giving up (``Cancelled``) if the client leaves while waiting."""
        while not self.lock.acquire(timeout=0.2):
            if cancel.is_set():
                raise Cancelled


def _default_generator():
    import structgen as sg

    return sg.Generator(sg.load_model())


def _default_runtime(generator):
    """A runtime for an app that has none: the default policy (destructive tools denied, tools with side
    effects asked about), no executor and no audit log (the server's runtime keeps one)."""
    from ..agent import AgentRuntime, Policy

    return AgentRuntime(generator, policy=Policy())


def _model_info(gen) -> dict:
    m = gen.model
    name = getattr(m, "name", None) or type(m).__name__
    return {"name": str(name), "untrained": "untrained" in str(name).lower() or "random" in str(name).lower()}


def run_job(req: RunRequest, target: Any, gen, emit: Callable[[str, dict], None], cancel: threading.Event, *,
            runtime_of: Callable[[], Any] | None = None) -> dict:
    """Run one request on the calling thread: ``emit("structgen.draft", payload)`` per step; return the
    result payload. ``Cancelled`` as soon as ``cancel`` is set. A tool set runs as an agent turn on
    ``runtime_of()``; schemas and grammars on ``gen``."""
    if req.kind == "tools":
        if runtime_of is None:
            raise ValueError("a tool-set run needs runtime_of")
        return run_turn(req, target, runtime_of(), emit, cancel)
    from ..agent.drafts import DraftTracker

    tracker = DraftTracker(gen.model.tokenizer)

    def on_step(ev) -> None:
        if cancel.is_set():
            raise Cancelled
        emit("structgen.draft", step_payload(tracker, ev))

    r = gen.generate(req.prompt, target, req.max_tokens, strict=False, on_step=on_step,
                     block_length=req.block_length, threshold=req.threshold, temperature=req.temperature,
                     seed=req.seed, ground=req.ground)
    return _result_payload(r, kind=req.kind, ground=req.ground)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return json.loads(json.dumps(value, default=str))


def _result_payload(r, *, kind: str, **extra) -> dict:
    """``structgen.result``: ``text, value, valid, errors, nfe, steps, decision`` (``None`` but for tool sets)
    plus ``kind, engine, timings, repair_rounds, fallback, output_tokens, forced_tokens`` and ``extra``."""
    return {"text": r.text, "value": _jsonable(r.value) if r.valid else None, "valid": r.valid,
            "errors": list(r.errors), "nfe": r.nfe, "steps": r.steps, "decision": None, "kind": kind,
            "engine": r.engine, "timings": r.timings, "repair_rounds": r.repair_rounds, "fallback": r.fallback,
            "output_tokens": r.n_output_tokens, "forced_tokens": r.n_forced, **extra}


def _error_payload(kind: str, message: str) -> dict:
    return {"text": "", "value": None, "valid": False, "errors": [message], "nfe": 0, "steps": 0,
            "decision": None, "kind": kind, "error": message}


def _in_flight(model):
    """The server's batching model counts generations in flight (``model.generation()``) so that its batcher
    waits for their calls; any other model needs nothing."""
    mark = getattr(type(model), "generation", None)
    return model.generation() if callable(mark) else contextlib.nullcontext()


async def stream_run(req: RunRequest, target: Any, backend: Backend, app) -> Any:
    """The SSE stream of one run: the job runs on a worker thread; frames are relayed as they come. When the
    consumer stops (the client disconnected) the job is cancelled."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    cancel = threading.Event()

    def put(item) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is gone: nobody is listening any more
            cancel.set()

    def work() -> None:
        try:
            gen = backend.generator(app)
            backend.acquire(cancel)
            try:
                with _in_flight(gen.model):
                    result = run_job(req, target, gen, lambda e, d: put((e, d)), cancel,
                                     runtime_of=lambda: backend.runtime(app))
                result["model"] = _model_info(gen)
            finally:
                backend.lock.release()
            put(("structgen.result", result))
        except Cancelled:
            log.info("playground run cancelled: the client went away")
        except StructgenError as e:
            put(("structgen.result", _error_payload(req.kind, f"{type(e).__name__}: {e}")))
        except Exception as e:  # a bug: say so on the page, keep the traceback in the log
            log.exception("playground run failed")
            put(("structgen.result", _error_payload(req.kind, f"internal error: {type(e).__name__}: {e}")))
        finally:
            put(None)

    threading.Thread(target=work, name="structgen-playground", daemon=True).start()
    try:
        while (item := await queue.get()) is not None:
            yield event_frame(*item)
    finally:
        cancel.set()


# -- routes ------------------------------------------------------------------------------------------------

router = APIRouter(tags=["playground"])
_backend = Backend()


@router.get("/playground", response_class=HTMLResponse, include_in_schema=False)
def page() -> FileResponse:
    """The playground page."""
    return FileResponse(STATIC / "playground.html", media_type="text/html")


@router.get("/playground/{asset}", include_in_schema=False)
def asset(asset: str) -> FileResponse:
    """The page's stylesheet and script."""
    if asset not in ASSETS:
        raise HTTPException(404, f"no playground asset {asset!r}")
    return FileResponse(STATIC / asset, media_type=ASSETS[asset])


@router.get("/playground/api/presets")
def list_presets(request: Request) -> dict:
    """The schemas, grammars and tool sets the page offers, the model that runs them, and the limits."""
    gen = getattr(request.app.state, "generator", None)
    return {"presets": [p.info() for p in presets().values()],
            "model": _model_info(gen) if gen is not None else None,
            "auth": bool(getattr(request.app.state, "api_keys", ())),
            "limits": {"max_tokens": MAX_CANVAS, "prompt_chars": MAX_PROMPT_CHARS, "source_chars": MAX_SOURCE_CHARS}}


def _server_definitions(tools: Any, app) -> tuple:
    """Tools with the server's own definitions (``structgen serve --tools``) in place of same-named ones, as
    the chat endpoint does: a pasted tool cannot drop the server's ``destructive`` flag."""
    known = getattr(getattr(app.state, "chat", None), "server_tools", None) or {}
    return tuple(known.get(t.name, t) for t in tools)


def _check_key(request: Request) -> None:
    """401 unless the request carries one of the app's API keys (an app without keys needs none)."""
    if not getattr(request.app.state, "api_keys", ()):
        return
    from .gates import check_api_key

    try:
        check_api_key(request)
    except StructgenError as e:
        raise HTTPException(401, str(e), headers={"WWW-Authenticate": "Bearer"}) from None


@router.post("/playground/api/run")
def run(req: RunRequest, request: Request) -> StreamingResponse:
    """Stream ``structgen.draft`` events for every step, then one ``structgen.result``."""
    _check_key(request)
    if not req.prompt.strip():
        raise HTTPException(400, "the prompt is empty")
    target = build_target(req)
    if req.kind == "tools":
        target = _server_definitions(target, request.app)
    return StreamingResponse(stream_run(req, target, _backend, request.app), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
