"""The approvals API: calls the policy answered ``ask`` wait here until a person decides.

- ``GET /v1/approvals``: the parked calls that can still be approved (``{"object": "list", "data": [...]}``,
  each with ``approval_id``, ``name``, ``arguments``, ``request_id``, ``expires_at`` and the decision).
- ``POST /v1/approvals/{id}/approve``: releases the call; when the server executes tools and the turn asked
  for it, runs it and returns the execution. The body is the released call as an OpenAI ``tool_calls``
  entry, so a client can run it itself.
- ``POST /v1/approvals/{id}/reject``: the call will never run (an optional JSON body ``{"reason": ...}``).

Unknown ids are 404; an approval that expired or was already decided is 409 (``approval_expired`` /
``approval_decided``). Every decision is in the audit log (``released`` / ``rejected`` / ``expired``).
These paths are under ``/v1/``, so the server's API keys guard them.
"""

from __future__ import annotations

import asyncio
import json

from fastapi import APIRouter, Request

from ..errors import ApprovalError, ApprovalExpiredError, ApprovalNotFoundError
from .errors import APIError

router = APIRouter(prefix="/v1/approvals")


def _runtime(request: Request):
    return request.app.state.runtime


def _error(e: ApprovalError) -> APIError:
    if isinstance(e, ApprovalNotFoundError):
        return APIError(404, str(e), param="approval_id", code="approval_not_found")
    if isinstance(e, ApprovalExpiredError):
        return APIError(409, str(e), param="approval_id", code="approval_expired")
    return APIError(409, str(e), param="approval_id", code="approval_decided")


@router.get("")
async def list_approvals(request: Request):
    runtime = _runtime(request)
    return {"object": "list", "data": await asyncio.to_thread(runtime.pending)}


@router.post("/{approval_id}/approve")
async def approve(approval_id: str, request: Request):
    runtime = _runtime(request)
    try:
        outcome = await asyncio.to_thread(runtime.approve, approval_id)
    except ApprovalError as e:
        raise _error(e) from None
    call = outcome.call
    return {"object": "approval", "approval_id": approval_id, "status": "released",
            "request_id": call.request_id, "tool_call": call.openai(),
            "execution": outcome.execution.to_dict() if outcome.execution is not None else None}


@router.post("/{approval_id}/reject")
async def reject(approval_id: str, request: Request):
    runtime = _runtime(request)
    reason = ""
    raw = await request.body()
    if raw:
        try:
            body = json.loads(raw)
        except ValueError:
            raise APIError(400, "The body must be JSON: {\"reason\": \"...\"}", code="invalid_json") from None
        reason = body.get("reason", "") if isinstance(body, dict) else ""
        if not isinstance(reason, str):
            raise APIError(400, "Invalid type for 'reason': expected a string.", param="reason",
                           code="invalid_type")
    try:
        summary = await asyncio.to_thread(runtime.reject, approval_id, reason)
    except ApprovalError as e:
        raise _error(e) from None
    return {"object": "approval", "approval_id": approval_id, "status": "rejected", "call": summary}
