"""OpenAI-style errors: ``{"error": {"message", "type", "param", "code"}}`` with the status OpenAI uses.

- :class:`APIError` (a ``StructgenError``) carries a status, a type, the offending ``param`` and a ``code``;
  the constructors below name the common cases.
- :func:`install_error_handlers` makes every failure of the app answer in that shape: request validation
  (FastAPI's 422) becomes 400 with ``param`` as OpenAI writes it (``messages[0].role``); a body that is not
  JSON is 400; unknown paths 404 and wrong methods 405; a ``StructgenError`` raised while preparing a request
  (a bad schema, a canvas too small, a prompt too long) is 400; anything else is a logged 500.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import StructgenError

log = logging.getLogger("structgen.server")

INVALID = "invalid_request_error"


class APIError(StructgenError):
    """An error the API reports to the client: HTTP ``status`` and the OpenAI error fields."""

    def __init__(self, status: int, message: str, *, type: str = INVALID, param: str | None = None,
                 code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = headers or {}

    def body(self) -> dict:
        return error_body(self.message, self.type, self.param, self.code)

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def error_body(message: str, type: str = INVALID, param: str | None = None, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def not_found(message: str, code: str | None = None) -> APIError:
    return APIError(404, message, code=code)


def overloaded(retry_after_s: int) -> APIError:
    return APIError(503, "The server is overloaded: every worker is busy and the queue is full; retry later.",
                    type="server_error", code="overloaded", headers={"Retry-After": str(retry_after_s)})


def from_structgen(e: StructgenError, param: str | None = None) -> APIError:
    """A structgen error met while preparing or running a request, as the client's 400."""
    if isinstance(e, APIError):
        return e
    msg = str(e)
    code = "context_length_exceeded" if "positions" in msg and "exceeds" in msg else None
    return bad_request(msg, param=param, code=code)


# ----------------------------------------------------------------------------------------------- validation
def param_path(loc: tuple | list) -> str | None:
    """OpenAI's spelling of a body location: ``("body", "messages", 0, "role")`` -> ``messages[0].role``."""
    out = ""
    for part in loc:
        if part == "body" and not out:
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and (part.startswith("function-") or "[" in part or part in ("str", "list")):
            continue  # pydantic's union member tags, not a field
        else:
            out += ("." if out else "") + str(part)
    return out or None


#: pydantic error type prefix -> what OpenAI says was expected
_TYPE_WORDS = {"string": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
               "dict": "an object", "list": "an array", "model": "an object", "model_attributes": "an object"}
#: Python type of the received value -> its JSON name
_JSON_TYPES = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean", "dict": "an object",
               "list": "an array", "NoneType": "null"}


def _validation_error(errors: list[dict]) -> APIError:
    first = errors[0]
    kind = first.get("type", "")
    param = param_path(first.get("loc", ()))
    if kind == "json_invalid":
        return bad_request("We could not parse the JSON body of your request. (HINT: This likely means you aren't "
                           "using your HTTP library correctly. The OpenAI API expects a JSON payload.)",
                           code="invalid_json")
    if kind == "missing":
        return bad_request(f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter")
    got = _JSON_TYPES.get(type(first.get("input")).__name__, "a value of another type")
    for word, phrase in _TYPE_WORDS.items():
        if kind.startswith(word + "_type"):
            return bad_request(f"Invalid type for '{param}': expected {phrase}, but got {got} instead.",
                               param=param, code="invalid_type")
    if kind.startswith("too_long"):
        return bad_request(f"Invalid '{param}': array too long. {first.get('msg', '')}.", param=param,
                           code="array_above_max_length")
    return bad_request(f"Invalid value for '{param}': {first.get('msg', 'invalid')}.", param=param,
                       code="invalid_value")


# --------------------------------------------------------------------------------------------------- handlers
_HTTP_CODES = {404: "unknown_url", 405: "method_not_allowed", 413: "request_too_large"}


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` in OpenAI's shape (see the module docstring)."""

    @app.exception_handler(APIError)
    async def _api(_: Request, e: APIError) -> JSONResponse:
        return e.response()

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, e: RequestValidationError) -> JSONResponse:
        errs: list[Any] = list(e.errors()) or [{"type": "value_error", "loc": (), "msg": "invalid request"}]
        return _validation_error(errs).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, e: StarletteHTTPException) -> JSONResponse:
        if e.status_code == 404:
            msg = f"Invalid URL ({request.method} {request.url.path})"
        elif e.status_code == 405:
            msg = f"Method {request.method} is not allowed on {request.url.path}"
        else:
            msg = str(e.detail)
        err = APIError(e.status_code, msg, code=_HTTP_CODES.get(e.status_code),
                       type=INVALID if e.status_code < 500 else "server_error",
                       headers=dict(getattr(e, "headers", None) or {}))
        return err.response()

    @app.exception_handler(StructgenError)
    async def _structgen(_: Request, e: StructgenError) -> JSONResponse:
        return from_structgen(e).response()

    @app.exception_handler(Exception)
    async def _internal(request: Request, e: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return APIError(500, "The server had an error while processing your request.", type="server_error",
                        code="internal_error").response()
