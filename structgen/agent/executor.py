"""``Executor``: runs released calls with a timeout and records the outcome.

    executor = Executor({"get_weather": get_weather}, timeout_s=10)
    outcome = executor.run(released)        # only a ReleasedCall minted by the commit boundary

The boundary checks the object first (see :mod:`.boundary`): anything else — a draft, a ``ToolCall``
built by hand, a denied or already executed call — raises ``BoundaryError`` and runs nothing. The function
is called with keyword arguments: for a tool with a pydantic model, the validated model's fields (defaults
filled in, ``date`` strings as ``datetime.date``...); otherwise the argument dict.

Each call runs in its own daemon thread; past ``timeout_s`` the call is recorded as ``failed`` (timed
out) and its eventual result is discarded. A thread cannot be killed, so a tool that must be stopped hard
should enforce its own deadline (or run a subprocess); the executor never waits past the timeout.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import BoundaryError, ConfigError
from .boundary import CallState

__all__ = ["Executor", "Execution"]


@dataclass(frozen=True)
class Execution:
    """The outcome of running one released call."""

    call_id: str
    name: str
    ok: bool
    result: Any = None  # JSON-able (a value that is not is shown as text)
    error: str | None = None
    duration_s: float = 0.0
    timed_out: bool = False

    def to_dict(self) -> dict:
        return {"call_id": self.call_id, "name": self.name, "ok": self.ok, "result": self.result,
                "error": self.error, "duration_s": round(self.duration_s, 6), "timed_out": self.timed_out}

    def content(self) -> str:
        """The outcome as the text of an OpenAI ``tool`` message."""
        return json.dumps(self.result if self.ok else {"error": self.error}, ensure_ascii=False, default=str)


class Executor:
    """Runs released calls: ``functions`` maps tool names to callables; ``timeout_s`` bounds each run."""

    def __init__(self, functions: Mapping[str, Callable] | Any, timeout_s: float = 10.0):
        if hasattr(functions, "functions") and not isinstance(functions, Mapping):  # a ToolRegistry
            functions = functions.functions
        if not isinstance(functions, Mapping) or not all(callable(f) for f in functions.values()):
            raise ConfigError("Executor needs a dict of tool name -> callable (or a ToolRegistry)")
        if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            raise ConfigError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
        self.functions = dict(functions)
        self.timeout_s = float(timeout_s)

    def can_run(self, name: str) -> bool:
        return name in self.functions

    def run(self, released: Any, *, listener: Callable | None = None) -> Execution:
        """Execute ``released`` once; returns its :class:`Execution` (also written to the audit log as the
        call's ``executed`` or ``failed`` event). ``BoundaryError`` when it is not a released call that may
        run now."""
        from .boundary import Boundary, ReleasedCall

        rec_boundary = getattr(getattr(released, "_record", None), "boundary", None)
        if not isinstance(released, ReleasedCall) or not isinstance(rec_boundary, Boundary):
            raise BoundaryError(f"refusing to execute a {type(released).__name__}: only a ReleasedCall from the "
                                "commit boundary (final, validated, allowed or approved) can be executed")
        rec = rec_boundary.claim(released)
        fn = self.functions.get(released.name)
        if fn is None:
            out = Execution(rec.call_id, released.name, False,
                            error=f"no implementation for tool {released.name!r}; give the Executor one")
        else:
            out = self._call(rec.call_id, released, fn)
        state = CallState.EXECUTED if out.ok else CallState.FAILED
        rec_boundary.advance(rec, state, out.to_dict(), listener=listener)
        return out

    def _call(self, call_id: str, released: Any, fn: Callable) -> Execution:
        try:
            kwargs = _kwargs(released)
        except Exception as e:  # the arguments no longer validate against the model: never run
            return Execution(call_id, released.name, False, error=f"arguments rejected: {e}")
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["result"] = fn(**kwargs)
            except BaseException as e:  # noqa: BLE001 - the tool's failure is the outcome
                box["error"] = f"{type(e).__name__}: {e}"
                box["trace"] = traceback.format_exc(limit=5)

        t0 = time.perf_counter()
        th = threading.Thread(target=target, name=f"structgen-tool-{released.name}", daemon=True)
        th.start()
        th.join(self.timeout_s)
        dt = time.perf_counter() - t0
        if th.is_alive():
            return Execution(call_id, released.name, False, error=f"timed out after {self.timeout_s:g} s",
                             duration_s=dt, timed_out=True)
        if "error" in box:
            return Execution(call_id, released.name, False, error=box["error"], duration_s=dt)
        return Execution(call_id, released.name, True, result=_jsonable(box.get("result")), duration_s=dt)


def _kwargs(released: Any) -> dict:
    tool = released.tool
    if tool is not None and tool.model is not None:
        parsed = tool.model.model_validate_json(json.dumps(released.arguments))
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}
    return json.loads(json.dumps(released.arguments))  # a private copy


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    try:
        return json.loads(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, ensure_ascii=False, default=str))
