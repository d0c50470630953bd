"""The commit boundary: one explicit state machine between a generated call and its execution.

::

    draft ──▶ final ──▶ validated ──▶ decided ──▶ released ──▶ executed
                  └──▶ invalid            ├──▶ parked ──▶ released      └──▶ failed
                                          │        ├──▶ rejected
                                          │        └──▶ expired
                                          └──▶ denied
    (draft, final, validated, decided) ──▶ cancelled

Every transition goes through :meth:`Boundary.advance`, which refuses illegal ones with
:class:`~structgen.errors.BoundaryError` and appends one audit row (kind = the state entered) *before* the
state changes, so nothing is reported as done that the log does not hold.

Only a :class:`ReleasedCall` reaches an executor, and only the boundary can make one: its constructor
checks a private mint token, the record it points to must hold that very object in state ``released``, and
the arguments must be the ones the policy decided on. A draft, a final or validated call, a denied,
rejected or expired one — or a ``ToolCall`` built by hand — cannot be executed, whatever it contains.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from ..errors import ApprovalError, ApprovalExpiredError, ApprovalNotFoundError, BoundaryError
from .tools import ToolCall

__all__ = ["CallState", "TRANSITIONS", "CallRecord", "ReleasedCall", "Boundary"]


class CallState(str, Enum):
    """Where a call stands on its way from the canvas to execution."""

    DRAFT = "draft"
    FINAL = "final"
    VALIDATED = "validated"
    INVALID = "invalid"
    DECIDED = "decided"
    RELEASED = "released"
    PARKED = "parked"
    DENIED = "denied"
    REJECTED = "rejected"
    EXPIRED = "expired"
    EXECUTED = "executed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return self.value


S = CallState
#: the only legal transitions; a state missing here (or mapped to nothing) is terminal
TRANSITIONS: dict[CallState, frozenset[CallState]] = {
    S.DRAFT: frozenset({S.FINAL, S.CANCELLED}),
    S.FINAL: frozenset({S.VALIDATED, S.INVALID, S.CANCELLED}),
    S.VALIDATED: frozenset({S.DECIDED, S.CANCELLED}),
    S.DECIDED: frozenset({S.RELEASED, S.PARKED, S.DENIED, S.CANCELLED}),
    S.PARKED: frozenset({S.RELEASED, S.REJECTED, S.EXPIRED}),
    S.RELEASED: frozenset({S.EXECUTED, S.FAILED}),
}
#: the policy action a decided call needs for each next state
_ACTION_FOR = {S.RELEASED: "allow", S.PARKED: "ask", S.DENIED: "deny"}

_MINT = object()  # only this module can mint a ReleasedCall


@dataclass(eq=False)
class CallRecord:
    """One call's passage through the boundary (mutated only by its :class:`Boundary`)."""

    call_id: str
    request_id: str
    raw: Any  # the call as the canvas wrote it ({"name", "arguments"} or text)
    state: CallState = S.DRAFT
    call: ToolCall | None = None  # set when validated
    decision: Any = None  # the policy Decision, set when decided
    errors: list[str] = field(default_factory=list)
    approval_id: str | None = None
    expires_at: float | None = None
    execute_on_release: bool = False  # run it when an approval releases it
    released: ReleasedCall | None = None
    fingerprint: str | None = None  # canonical JSON of the arguments the policy decided on
    history: list[tuple[str, float]] = field(default_factory=list)
    running: bool = False
    boundary: Boundary | None = field(default=None, repr=False)

    @property
    def name(self) -> str | None:
        if self.call is not None:
            return self.call.name
        return self.raw.get("name") if isinstance(self.raw, dict) else None

    def summary(self) -> dict:
        """A JSON-able view (what ``pending()`` and the API show)."""
        args = self.call.arguments if self.call is not None else (
            self.raw.get("arguments") if isinstance(self.raw, dict) else None)
        d = self.decision
        return {"call_id": self.call_id, "request_id": self.request_id, "state": self.state.value,
                "name": self.name, "arguments": args, "approval_id": self.approval_id,
                "expires_at": self.expires_at, "errors": list(self.errors),
                "decision": d.to_dict() if d is not None else None}


@dataclass(frozen=True)
class ReleasedCall(ToolCall):
    """A call the boundary released: validated, and allowed by the policy or approved. Only
    :meth:`Boundary.advance` mints one; building it any other way raises ``BoundaryError``.
    ``id`` is the OpenAI ``tool_calls`` id."""

    id: str = field(default="", kw_only=True)
    request_id: str = field(default="", kw_only=True)
    _record: Any = field(default=None, kw_only=True, repr=False, compare=False)
    _mint: Any = field(default=None, kw_only=True, repr=False, compare=False)

    def __post_init__(self):
        if self._mint is not _MINT or not isinstance(self._record, CallRecord):
            raise BoundaryError("a ReleasedCall is made only by the commit boundary, when a final call validated "
                                "and the policy allowed it (or it was approved); generate the call through "
                                "AgentRuntime.run_turn instead of building one")

    def openai(self, call_id: str | None = None) -> dict:
        return super().openai(call_id or self.id)


def fingerprint(arguments: Any) -> str:
    """Canonical JSON of arguments, to notice any change between the decision and the execution."""
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class Boundary:
    """Holds call records and performs their transitions, writing each to ``audit`` (an ``AuditLog`` or
    None) and reporting it to ``listener(kind, record, data)``. Thread-safe."""

    def __init__(self, audit: Any = None, listener: Callable[[str, CallRecord, dict], None] | None = None,
                 clock: Callable[[], float] = time.time):
        self.audit = audit
        self.listener = listener
        self.clock = clock
        self.max_released = 10_000
        self._lock = threading.RLock()
        self._records: dict[str, CallRecord] = {}
        self._parked: dict[str, CallRecord] = {}
        self._decided: OrderedDict[str, CallState] = OrderedDict()  # approval id -> how it ended (bounded)

    # -- the state machine -------------------------------------------------------------------------------
    def draft(self, request_id: str, raw: Any) -> CallRecord:
        """A new record in ``draft`` for a call read from a canvas."""
        rec = CallRecord(call_id="call_" + secrets.token_hex(12), request_id=request_id, raw=raw, boundary=self)
        rec.history.append((S.DRAFT.value, self.clock()))
        with self._lock:
            self._records[rec.call_id] = rec
        return rec

    def advance(self, rec: CallRecord, to: CallState, data: dict | None = None, *,
                listener: Callable | None = None) -> ReleasedCall | None:
        """Move ``rec`` to ``to`` (``BoundaryError`` if that is not a legal transition), audit it, then
        notify; returns the minted ``ReleasedCall`` when ``to`` is ``released``."""
        to = CallState(to)
        data = dict(data or {})
        with self._lock:
            if rec.boundary is not self:
                raise BoundaryError(f"call {rec.call_id} belongs to another boundary")
            if to not in TRANSITIONS.get(rec.state, frozenset()):
                raise BoundaryError(f"illegal transition {rec.state.value} -> {to.value} for call {rec.call_id} "
                                    f"({rec.name}); legal from {rec.state.value}: "
                                    f"{', '.join(sorted(s.value for s in TRANSITIONS.get(rec.state, ()))) or 'none (terminal)'}")
            self._check_preconditions(rec, to)
            if self.audit is not None:  # write first: a crash after this loses nothing reported
                self.audit.append(to.value, rec.request_id, rec.call_id, data)
            released = None
            if to is S.RELEASED:
                call = rec.call
                released = ReleasedCall(call.name, json.loads(rec.fingerprint), call.tool, call.result,
                                        id=rec.call_id, request_id=rec.request_id, _record=rec, _mint=_MINT)
                rec.released = released
            rec.state = to
            rec.history.append((to.value, self.clock()))
            if to is S.PARKED:
                self._parked[rec.approval_id] = rec
            elif rec.approval_id is not None and to in (S.RELEASED, S.REJECTED, S.EXPIRED):
                self._parked.pop(rec.approval_id, None)
                self._decided[rec.approval_id] = to
                while len(self._decided) > self.max_released:
                    self._decided.popitem(last=False)
            if rec.approval_id is not None and not TRANSITIONS.get(to):
                self._records.pop(rec.call_id, None)  # an approval's call that has ended: nothing refers to it
        notify = listener or self.listener
        if notify is not None:
            notify(to.value, rec, data)
        return released

    def _check_preconditions(self, rec: CallRecord, to: CallState) -> None:
        if to is S.VALIDATED and rec.call is None:
            raise BoundaryError(f"call {rec.call_id} cannot be validated without a checked ToolCall")
        if to is S.DECIDED:
            if rec.decision is None:
                raise BoundaryError(f"call {rec.call_id} cannot be decided without a policy decision")
            rec.fingerprint = fingerprint(rec.call.arguments)
        if rec.state is S.DECIDED and to in _ACTION_FOR and rec.decision.action != _ACTION_FOR[to]:
            raise BoundaryError(f"call {rec.call_id} was decided {rec.decision.action!r}; it cannot become "
                                f"{to.value}")
        if to is S.PARKED and (rec.approval_id is None or rec.expires_at is None):
            raise BoundaryError(f"call {rec.call_id} needs an approval id and an expiry to be parked")
        if rec.state is S.PARKED and to is S.RELEASED and self.clock() >= (rec.expires_at or 0):
            raise BoundaryError(f"call {rec.call_id}'s approval expired; it cannot be released")

    # -- execution gate ----------------------------------------------------------------------------------
    def claim(self, released: Any) -> CallRecord:
        """The record of ``released`` when it may execute now (``BoundaryError`` otherwise); marks it
        running so it executes at most once."""
        if not isinstance(released, ReleasedCall) or released._mint is not _MINT:
            what = type(released).__name__
            raise BoundaryError(f"refusing to execute a {what}: only a ReleasedCall from the commit boundary "
                                "(final, validated, allowed or approved) can be executed")
        rec = released._record
        with self._lock:
            if rec.boundary is not self or self._records.get(rec.call_id) is not rec:
                raise BoundaryError(f"call {rec.call_id} was not released by this runtime's boundary")
            if rec.released is not released:
                raise BoundaryError(f"call {rec.call_id}: this object is not the one the boundary released")
            if rec.state is not S.RELEASED or rec.running:
                raise BoundaryError(f"call {rec.call_id} is {rec.state.value}"
                                    f"{' and already running' if rec.running else ''}; only a released call "
                                    "that has not run yet can be executed")
            if fingerprint(released.arguments) != rec.fingerprint:
                raise BoundaryError(f"call {rec.call_id}: the arguments changed after the policy decision; "
                                    "refusing to execute")
            rec.running = True
        return rec

    # -- approvals ---------------------------------------------------------------------------------------
    def park(self, rec: CallRecord, ttl_s: float, data: dict | None = None, **kw) -> str:
        """Park a call decided ``ask``: give it an approval id that expires after ``ttl_s`` seconds."""
        rec.approval_id = "appr_" + secrets.token_urlsafe(12)
        rec.expires_at = self.clock() + ttl_s
        payload = {"approval_id": rec.approval_id, "expires_at": rec.expires_at, **(data or {})}
        self.advance(rec, S.PARKED, payload, **kw)
        return rec.approval_id

    def parked(self, approval_id: str) -> CallRecord:
        """The parked record of ``approval_id``: ``ApprovalNotFoundError`` when unknown, ``ApprovalError`` when
        already decided,
        ``ApprovalExpiredError`` (after recording the expiry) when its TTL has passed."""
        expired = ApprovalExpiredError(f"approval {approval_id} expired; the call was not executed — run the "
                                       "turn again to get a new approval")
        with self._lock:
            rec = self._parked.get(approval_id)
            if rec is None:
                ended = self._decided.get(approval_id)
                if ended is None:
                    raise ApprovalNotFoundError(f"unknown approval id {approval_id!r}; list pending approvals "
                                                "with AgentRuntime.pending()")
                if ended is S.EXPIRED:
                    raise expired
                raise ApprovalError(f"approval {approval_id} was already decided ({ended.value})")
        if self.clock() >= rec.expires_at:
            self._expire(rec)
            raise expired
        return rec

    def _expire(self, rec: CallRecord) -> bool:
        try:
            self.advance(rec, S.EXPIRED, {"approval_id": rec.approval_id, "expired_at": rec.expires_at})
            return True
        except BoundaryError:  # another thread decided or expired it first
            return False

    def expire_due(self) -> list[CallRecord]:
        """Move every parked call past its expiry to ``expired``; returns them."""
        now = self.clock()
        with self._lock:
            due = [r for r in self._parked.values() if now >= r.expires_at]
        return [rec for rec in due if self._expire(rec)]

    def pending(self) -> list[CallRecord]:
        """The parked calls that can still be approved (expired ones are moved to ``expired`` first)."""
        self.expire_due()
        with self._lock:
            return list(self._parked.values())

    def record(self, call_id: str) -> CallRecord:
        with self._lock:
            rec = self._records.get(call_id)
        if rec is None:
            raise BoundaryError(f"unknown call id {call_id!r}")
        return rec

    def forget(self, request_id: str) -> None:
        """Drop the finished records of a request. Parked ones are kept until decided or expired; released
        ones that have not run are kept too (newest ``max_released`` of them: an older one can no longer be
        executed here)."""
        with self._lock:
            for cid in [c for c, r in self._records.items()
                        if r.request_id == request_id and r.state not in (S.PARKED, S.RELEASED)]:
                del self._records[cid]
            released = [c for c, r in self._records.items() if r.state is S.RELEASED and not r.running]
            for cid in released[: max(0, len(released) - self.max_released)]:
                del self._records[cid]
