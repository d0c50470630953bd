"""Checks every request passes before a route sees it: the body size limit and the API key.

Both are plain ASGI middleware so they run before FastAPI parses anything:

- :class:`BodyLimit`: a ``Content-Length`` over the limit is refused at once; a body streamed without one
  is counted as it arrives and refused once it passes the limit. Either way the answer is 413 in OpenAI's
  error shape, and nothing is parsed.
- :class:`ApiKeyGate`: when the server has keys, every ``/v1/`` path needs ``Authorization: Bearer KEY``
  (the ``openai`` client's ``api_key``) with one of them, else 401 ``invalid_api_key``. ``/health`` and
  pages outside ``/v1/`` stay open; :func:`check_api_key` lets another router apply the same check.
"""

from __future__ import annotations

import hmac
import json

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import APIError, error_body

__all__ = ["BodyLimit", "ApiKeyGate", "check_api_key"]


async def _send_json(send: Send, status: int, body: dict, headers: dict | None = None) -> None:
    raw = json.dumps(body).encode()
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    hdrs += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": raw})


def _too_large(limit: int) -> dict:
    return error_body(f"Request body too large: this server accepts at most {limit} bytes.",
                      code="request_too_large")


class _TooLarge(HTTPException):
    """Raised from ``receive`` once the body passes the limit; FastAPI passes an ``HTTPException`` through
    its body parsing, and the app's handler answers it as a 413 in OpenAI's shape."""

    def __init__(self, limit: int):
        super().__init__(413, _too_large(limit)["error"]["message"])


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    return await _send_json(send, 413, _too_large(self.max_bytes), {"Connection": "close"})
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return msg

        async def watched(msg: Message) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not started:
                await _send_json(send, 413, _too_large(self.max_bytes), {"Connection": "close"})


def _bearer(headers) -> str | None:
    auth = headers.get("authorization")
    if not auth or not auth.lower().startswith("bearer "):
        return None
    return auth[7:].strip()


def _key_ok(key: str | None, keys: tuple[str, ...]) -> bool:
    if key is None:
        return False
    return any(hmac.compare_digest(key.encode(), k.encode()) for k in keys)


def _shown(key: str | None) -> str:
    if not key:
        return ""
    return key[:3] + "*" * max(len(key) - 7, 3) + key[-4:] if len(key) > 8 else "*" * len(key)


def check_api_key(request: Request) -> None:
    """Raise ``APIError`` (401) unless ``request`` carries one of the app's keys (no keys: always passes)."""
    keys = getattr(request.app.state, "api_keys", ())
    if not keys:
        return
    key = _bearer(request.headers)
    if not _key_ok(key, keys):
        raise _unauthorized(key)


def _unauthorized(key: str | None) -> APIError:
    if key is None:
        msg = ("You didn't provide an API key. You need to provide your API key in an Authorization header using "
               "Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
    else:
        msg = f"Incorrect API key provided: {_shown(key)}."
    return APIError(401, msg, code="invalid_api_key")


class ApiKeyGate:
    """Require one of ``keys`` on every ``/v1/`` path (see the module docstring)."""

    def __init__(self, app: ASGIApp, keys: tuple[str, ...]):
        self.app, self.keys = app, tuple(keys)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.keys or not scope.get("path", "").startswith("/v1/"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        key = _bearer(headers)
        if not _key_ok(key, self.keys):
            err = _unauthorized(key)
            return await _send_json(send, err.status, err.body())
        await self.app(scope, receive, send)
