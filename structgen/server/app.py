"""``create_app``: the OpenAI-compatible FastAPI app around one model.

    from structgen.server import create_app
    app = create_app("path/to/model", policy="policy.toml", audit_path="audit.db", api_keys=["sk-local"])
    uvicorn.run(app, host="127.0.0.1", port=8000)

What it wires together (``app.state`` names, which other routers may read):

- ``model``: a :class:`~.batching.BatchingModel` over the loaded model (``None`` loads the embedded default;
  a path or ``"random"`` goes through ``structgen.load_model``; a ``DiffusionModel`` is used as it is);
- ``generator`` (``sg.Generator`` over ``model``), ``runtime`` (``AgentRuntime``), ``policy``, ``audit``
  (an ``AuditLog``; a file in a fresh temporary folder when ``audit_path`` is None), ``executor``;
- ``pool``: the bounded worker pool; ``chat``: the ``ChatService``; ``settings``: the ``ServerLimits``;
  ``api_keys``: the accepted keys (empty: no key needed).

Routers: chat completions, models and health (:mod:`.routes`), approvals (:mod:`.approvals`); more can be
included on the returned app. The worker pool and the batcher stop with the app (lifespan).
"""

from __future__ import annotations

import tempfile
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from .. import __version__
from ..errors import ConfigError
from .batching import BatchingModel
from .errors import install_error_handlers
from .gates import ApiKeyGate, BodyLimit
from .limits import ServerLimits
from .workers import WorkerPool

__all__ = ["create_app"]

DEFAULT_MODEL_ID = "structgen"


def _load(model: Any):
    import structgen as sg

    if isinstance(model, sg.models.DiffusionModel):
        return model
    return sg.load_model(model)


def _policy(policy: Any):
    from ..agent.policy import Policy

    if policy is None:
        return Policy()
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, (str, Path)):
        return Policy.from_toml(policy)
    raise ConfigError(f"policy must be a Policy, a path to a TOML file or None, got {type(policy).__name__}")


def create_app(model: Any = None, *, policy: Any = None, audit_path: str | Path | None = None,
               api_keys: Any = None, executor: Any = None, limits: ServerLimits | None = None,
               tools: Any = None, model_id: str = DEFAULT_MODEL_ID, approval_ttl_s: float = 300.0,
               generator_settings: dict | None = None) -> FastAPI:
    """The server app (see the module docstring).

    ``tools``: tools the server knows (``Tool`` list, a ``ToolRegistry`` or a path for ``load_tools``); a
    request's tool of the same name is replaced by the server's definition. ``executor``: an ``Executor``
    (released calls are then executed on the server); ``generator_settings``: ``sg.Generator`` keyword
    arguments (block length, threshold, ...)."""
    import structgen as sg
    from ..agent.audit import AuditLog
    from ..agent.runtime import AgentRuntime
    from ..agent.tools import as_tools, load_tools
    from .chat import ChatService

    limits = ServerLimits() if limits is None else limits
    if not isinstance(limits, ServerLimits):
        raise ConfigError(f"limits must be a ServerLimits, got {type(limits).__name__}")
    keys = (api_keys,) if isinstance(api_keys, str) else tuple(api_keys or ())
    if any(not isinstance(k, str) or not k for k in keys):
        raise ConfigError("api_keys must be non-empty strings")
    if isinstance(tools, (str, Path)):
        tools = load_tools(tools)
    server_tools = as_tools(tools) if tools else ()
    proxy = BatchingModel(_load(model), window_s=limits.batch_window_s, max_batch=limits.max_batch)
    generator = sg.Generator(proxy, **(generator_settings or {}))
    tmp = None
    if audit_path is None:
        tmp = tempfile.TemporaryDirectory(prefix="structgen-audit-")
        audit_path = Path(tmp.name) / "audit.db"
    audit = AuditLog(audit_path)
    pol = _policy(policy)
    runtime = AgentRuntime(generator, policy=pol, audit=audit, executor=executor, approval_ttl_s=approval_ttl_s)
    pool = WorkerPool(limits.workers, limits.queue_size, wrap=proxy.generation)
    chat = ChatService(generator=generator, runtime=runtime, audit=audit, limits=limits, model_id=model_id,
                       server_tools=server_tools, execute=executor is not None)

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        yield
        pool.close()
        proxy.close()
        audit.close()
        if tmp is not None:
            tmp.cleanup()

    app = FastAPI(title="structgen", version=__version__, lifespan=lifespan,
                  summary="OpenAI-compatible chat completions from a masked diffusion model, valid by construction.")
    st = app.state
    st.model, st.generator, st.runtime, st.policy, st.audit = proxy, generator, runtime, pol, audit
    st.executor, st.pool, st.chat, st.settings, st.api_keys = executor, pool, chat, limits, keys
    install_error_handlers(app)
    from .approvals import router as approvals_router
    from .routes import router as api_router

    app.include_router(api_router)
    app.include_router(approvals_router)
    from .playground import router as playground_router
    app.include_router(playground_router)  # GET /playground (structgen/server/playground.py)
    app.add_middleware(ApiKeyGate, keys=keys)
    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    return app
