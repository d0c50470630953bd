"""structgen.server: an OpenAI-compatible HTTP server (FastAPI) for agent frameworks.

``create_app(model, policy=..., audit_path=..., api_keys=..., executor=..., limits=ServerLimits(...))``
builds the app; ``structgen serve`` runs it with uvicorn. Endpoints: ``POST /v1/chat/completions``
(tools, tool_choice, parallel_tool_calls, response_format, streaming), ``GET /v1/models``, ``GET /health``
and the approvals API under ``/v1/approvals``. See docs/server.md.

Modules: :mod:`.app` (the factory), :mod:`.routes` and :mod:`.approvals` (HTTP), :mod:`.schemas` (request
models), :mod:`.chat` (planning and running a request), :mod:`.responses` and :mod:`.sse` (the response
shapes), :mod:`.runner` and :mod:`.workers` (jobs, the bounded pool, disconnects), :mod:`.batching` (the
model proxy that batches concurrent forward passes), :mod:`.gates` (body size, API keys), :mod:`.errors`
(OpenAI error bodies), :mod:`.limits` (every bound), :mod:`.config` (what ``structgen serve`` loads),
:mod:`.testing` (a live server for tests and benchmarks); :mod:`.playground` serves ``GET /playground``.
"""

from .app import create_app
from .batching import BatchingModel
from .limits import ServerLimits

__all__ = ["create_app", "BatchingModel", "ServerLimits"]
