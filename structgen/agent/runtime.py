"""``AgentRuntime``: one agent turn from messages to released (and optionally executed) tool calls.

    runtime = AgentRuntime(sg.Generator(model), policy=Policy.from_toml("policy.toml"),
                           audit=AuditLog("audit.db"), executor=Executor(impls))
    turn = runtime.run_turn(messages, tools, tool_choice="auto", execute=True)
    turn.calls          # released calls (ReleasedCall: name, arguments, id)
    turn.parked         # approval ids of calls the policy said "ask" about
    runtime.approve(turn.parked[0])                       # releases (and runs) it, unless it expired

A turn: the sampler denoises the canvas under a :class:`~structgen.agent.turn.TurnSpec` (every step is a
``draft`` event, summarised in the audit log); the final text is split into calls; each call passes the
commit boundary (:mod:`.boundary`): final → validated|invalid → decided (:class:`~.policy.Policy`) →
released|parked|denied; released calls run on the executor when ``execute=True``.

Cancellation: ``cancelled()`` is polled at every step and once more before anything is released; when it
returns True (or raises, or ``on_event`` raises — a broken stream must not lead to execution), the turn
stops, every open call becomes ``cancelled``, a ``cancelled`` row is written and :class:`TurnCancelled` is
raised. Nothing of a cancelled turn is released, parked or executed. (It is polled once more before
executing released calls: a turn stopped there keeps its calls released but runs none of them.)
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ApprovalError, ApprovalExpiredError, BoundaryError, ConfigError, GenerationError, TurnCancelled
from .boundary import Boundary, CallRecord, CallState, ReleasedCall
from .drafts import DraftTracker
from .executor import Execution, Executor
from .policy import Decision, Policy
from .tools import ToolCall
from .turn import TurnSpec

__all__ = ["AgentRuntime", "TurnResult", "TurnEvent", "ApprovalOutcome"]

S = CallState
EVENT_KINDS = ("draft", "final", "validated", "invalid", "decided", "parked", "released", "denied", "executed",
               "failed", "rejected", "expired", "cancelled")


@dataclass(frozen=True)
class TurnEvent:
    """What ``on_event`` receives: ``kind`` (see ``EVENT_KINDS``; call events are the state the call
    entered), the turn's ``request_id``, the call's ``call_id`` (None for turn events) and JSON-able
    ``data``. ``draft`` data is the wire payload of :func:`~structgen.agent.drafts.draft_payload`."""

    kind: str
    request_id: str
    data: dict
    call_id: str | None = None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "request_id": self.request_id, "call_id": self.call_id, "data": self.data}


@dataclass
class TurnResult:
    """The outcome of :meth:`AgentRuntime.run_turn`.

    ``calls``: released calls (``ReleasedCall``, each with its ``id``); ``content``: the text reply or None;
    ``finish_reason``: ``"tool_calls"`` (calls were released), ``"stop"`` or ``"length"`` (the canvas did
    not hold a complete answer); ``parked``: approval ids; ``pending``: the parked calls' summaries;
    ``denied`` / ``invalid``: summaries of calls that were refused; ``executions``: outcomes when run."""

    request_id: str
    calls: list[ReleasedCall]
    content: str | None
    finish_reason: str
    parked: list[str] = field(default_factory=list)
    denied: list[dict] = field(default_factory=list)
    invalid: list[dict] = field(default_factory=list)
    pending: list[dict] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    nfe: int = 0
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    text: str = ""
    timings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ApprovalOutcome:
    """An approved call: the released call and, when it was run, its execution."""

    approval_id: str
    call: ReleasedCall
    execution: Execution | None = None


class _Abort(Exception):
    """Raised inside the sampler's step callback to stop a cancelled turn (never leaves run_turn)."""


class _Turn:
    """Per-turn bookkeeping: events to ``on_event`` and the cancellation test."""

    def __init__(self, request_id: str, on_event: Callable | None, cancelled: Callable | None):
        self.request_id, self.on_event, self.cancelled = request_id, on_event, cancelled
        self.why: str | None = None

    def emit(self, kind: str, data: dict, call_id: str | None = None) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(TurnEvent(kind, self.request_id, data, call_id))
        except Exception as e:  # noqa: BLE001 - a broken listener cancels the turn instead of crashing it
            self.why = self.why or f"on_event raised {type(e).__name__}: {e}"

    def listener(self, kind: str, rec: CallRecord, data: dict) -> None:
        self.emit(kind, {"name": rec.name, **data}, rec.call_id)

    def should_stop(self) -> bool:
        if self.why is None and self.cancelled is not None:
            try:
                if self.cancelled():
                    self.why = "cancelled() returned True"
            except Exception as e:  # noqa: BLE001
                self.why = f"cancelled() raised {type(e).__name__}: {e}"
        return self.why is not None


class AgentRuntime:
    """Runs agent turns through the commit boundary (see the module docstring).

    ``generator``: a ``structgen.Generator``; ``policy`` (default ``Policy()``: destructive tools denied,
    tools with side effects ask); ``audit``: an ``AuditLog`` (None keeps no log); ``executor``: an
    ``Executor`` for ``execute=True`` turns and approvals; ``approval_ttl_s``: how long a parked call can be
    approved. Generation is serialised by a lock (one model) unless the model says ``thread_safe = True``
    (e.g. a batching wrapper that queues concurrent callers itself); the rest is thread-safe."""

    def __init__(self, generator: Any, *, policy: Policy | None = None, audit: Any = None,
                 executor: Executor | None = None, approval_ttl_s: float = 300.0,
                 clock: Callable[[], float] = time.time):
        if not (isinstance(approval_ttl_s, (int, float)) and approval_ttl_s > 0):
            raise ConfigError(f"approval_ttl_s must be a positive number of seconds, got {approval_ttl_s!r}")
        self.generator = generator
        self.policy = policy if policy is not None else Policy()
        self.audit = audit
        self.executor = executor
        self.approval_ttl_s = float(approval_ttl_s)
        self.boundary = Boundary(audit, clock=clock)
        self._gen_lock = threading.Lock()

    # -- a turn ------------------------------------------------------------------------------------------
    def run_turn(self, messages: Any, tools: Any = None, *, tool_choice: Any = "auto",
                 parallel_tool_calls: bool = False, max_tokens: int | None = None, temperature: float = 0.0,
                 seed: int | None = None, request_id: str | None = None, on_event: Callable | None = None,
                 cancelled: Callable[[], bool] | None = None, execute: bool = False,
                 ground: bool = False) -> TurnResult:
        """Generate one turn for ``messages`` (text or chat messages) with ``tools`` and pass its calls through
        the boundary. ``ground=True``: the calls' string arguments come from the user's messages
        (``structgen.grounding``; a text reply stays free). ``SpecError``/``ConfigError``/``CanvasTooSmallError``
        for a bad request (before any model call), :class:`TurnCancelled` when cancelled."""
        spec = TurnSpec(tools, tool_choice, parallel_tool_calls)
        if execute and self.executor is None:
            raise ConfigError("execute=True needs an executor: AgentRuntime(..., executor=Executor(functions))")
        rid = request_id or "req_" + secrets.token_hex(12)
        prompt_tokens = self._prompt_tokens(spec, messages)
        if max_tokens is None:
            max_tokens = 96 if not (spec.parallel_tool_calls or spec.allows_content) else 160
            limit = getattr(self.generator.model, "max_length", None)
            if limit and prompt_tokens:  # leave the canvas what the model's positions allow
                max_tokens = max(1, min(max_tokens, limit - prompt_tokens))
        turn = _Turn(rid, on_event, cancelled)
        self._log("request", rid, {"tools": [t.name for t in spec.callable_tools], "tool_choice": spec.tool_choice,
                                   "parallel_tool_calls": spec.parallel_tool_calls, "max_tokens": max_tokens,
                                   "execute": execute, "ground": bool(ground)})
        if turn.should_stop():
            self._cancel(turn, [], step=0)
        result = self._generate(messages, spec, max_tokens, temperature, seed, turn, ground)
        tracker_payload = {"text": result.text, "valid": result.valid, "errors": result.errors, "nfe": result.nfe,
                           "steps": result.steps, "repair_rounds": result.repair_rounds}
        self._log("final", rid, tracker_payload)
        turn.emit("final", tracker_payload)
        if turn.should_stop():
            self._cancel(turn, [], step=result.steps)
        records, content, finish = self._finalize(spec, result, turn)
        if turn.should_stop():  # the last chance: nothing has been released yet
            self._cancel(turn, records, step=result.steps)
        released, parked, denied = [], [], []
        for rec in records:
            if rec.state is not S.DECIDED:
                continue
            action = rec.decision.action
            if action == "allow":
                released.append(self.boundary.advance(rec, S.RELEASED, _call_data(rec), listener=turn.listener))
            elif action == "ask":
                rec.execute_on_release = execute
                parked.append(self.boundary.park(rec, self.approval_ttl_s, _call_data(rec), listener=turn.listener))
            else:
                self.boundary.advance(rec, S.DENIED, _call_data(rec), listener=turn.listener)
                denied.append(rec.summary())
        if execute and released and turn.should_stop():  # gone after the release: released, never run
            self._cancel(turn, [], step=result.steps, released=[r.id for r in released])
        executions = [self.executor.run(r, listener=turn.listener) for r in released] if execute else []
        finish = "tool_calls" if released else finish
        invalid = [r.summary() for r in records if r.state is S.INVALID]
        self._log("completed", rid, {"finish_reason": finish, "released": [r.id for r in released],
                                     "parked": parked, "denied": [d["call_id"] for d in denied],
                                     "invalid": [d["call_id"] for d in invalid], "nfe": result.nfe})
        pending = [r.summary() for r in records if r.state is S.PARKED]
        self.boundary.forget(rid)
        return TurnResult(rid, released, content, finish, parked, denied, invalid, pending, executions,
                          nfe=result.nfe, steps=result.steps, prompt_tokens=prompt_tokens,
                          completion_tokens=result.n_output_tokens, text=result.text, timings=dict(result.timings))

    def _generate(self, messages: Any, spec: TurnSpec, max_tokens: int, temperature: float, seed: int | None,
                  turn: _Turn, ground: bool = False):
        model = self.generator.model
        tracker = DraftTracker(model.tokenizer)
        last = {"step": 0}

        def on_step(ev) -> None:
            tracker.update(ev)
            last["step"] = ev.step
            self._log("draft", turn.request_id, tracker.summary(ev))
            if turn.on_event is not None:
                turn.emit("draft", tracker.payload(ev))
            if turn.should_stop():
                raise _Abort

        overrides: dict[str, Any] = {"temperature": float(temperature), "ground": bool(ground)}
        if seed is not None:
            overrides["seed"] = int(seed)
        # one model, one caller at a time — unless the model batches concurrent callers itself
        lock = contextlib.nullcontext() if getattr(self.generator.model, "thread_safe", False) else self._gen_lock
        try:
            with lock:
                result = self.generator.generate(messages, spec, max_tokens, strict=False, on_step=on_step,
                                                 **overrides)
        except _Abort:
            self._cancel(turn, [], step=last["step"])
        except Exception as e:
            self._log("error", turn.request_id, {"error": f"{type(e).__name__}: {e}"[:2000]})
            raise
        if turn.on_event is not None:
            from ..sampler.events import StepEvent

            final = StepEvent(step=result.steps, kind="final", nfe=result.nfe, canvas=list(result.tokens),
                              text=result.text)
            turn.emit("draft", tracker.payload(final))
        return result

    def _finalize(self, spec: TurnSpec, result: Any, turn: _Turn) -> tuple[list[CallRecord], str | None, str]:
        """Split the final text into call records and take each through final -> validated|invalid ->
        decided. Returns the records, the text content (or None) and the finish reason so far."""
        rid, b = turn.request_id, self.boundary
        try:
            raw_calls, content = spec.split(result.text)
        except GenerationError as e:
            rec = b.draft(rid, result.text)
            b.advance(rec, S.FINAL, {"text": result.text}, listener=turn.listener)
            rec.errors = list(e.errors) or [str(e)]
            b.advance(rec, S.INVALID, {"errors": rec.errors}, listener=turn.listener)
            complete = _is_json(result.text)
            return [rec], None, "stop" if complete else "length"
        records = []
        for raw in raw_calls:
            rec = b.draft(rid, raw)
            records.append(rec)
            b.advance(rec, S.FINAL, {"call": raw}, listener=turn.listener)
            try:
                rec.call = ToolCall.parse(raw, spec.callable_tools, result)
            except GenerationError as e:
                rec.errors = list(e.errors) or [str(e)]
                b.advance(rec, S.INVALID, {"errors": rec.errors}, listener=turn.listener)
                continue
            b.advance(rec, S.VALIDATED, {"arguments": rec.call.arguments}, listener=turn.listener)
            try:
                rec.decision = self.policy.decide(rec.call)
            except Exception as e:  # noqa: BLE001 - a policy that cannot decide fails closed
                rec.decision = Decision("deny", "error", f"the policy failed: {type(e).__name__}: {e}")
            b.advance(rec, S.DECIDED, rec.decision.to_dict(), listener=turn.listener)
        return records, content, "stop"

    def _cancel(self, turn: _Turn, records: list[CallRecord], *, step: int, released: list[str] | None = None):
        """Cancel every open call of the turn, write the ``cancelled`` row, raise ``TurnCancelled``.
        ``released``: ids of calls already released (cancelled before their execution, which never comes)."""
        for rec in records:
            if S.CANCELLED in _open_targets(rec.state):
                self.boundary.advance(rec, S.CANCELLED, {"reason": turn.why}, listener=turn.listener)
        data = {"reason": turn.why, "step": step}
        if released:
            data["released_not_executed"] = released
        self._log("cancelled", turn.request_id, data)
        turn.on_event, on_event = None, turn.on_event
        if on_event is not None:
            try:
                on_event(TurnEvent("cancelled", turn.request_id, data))
            except Exception:  # noqa: BLE001 - the listener is what failed, most likely
                pass
        self.boundary.forget(turn.request_id)
        done = "calls were released but none was executed" if released else "nothing was released or executed"
        raise TurnCancelled(f"turn {turn.request_id} cancelled at step {step} ({turn.why}); {done}",
                            request_id=turn.request_id)

    # -- approvals ---------------------------------------------------------------------------------------
    def approve(self, approval_id: str, *, execute: bool | None = None) -> ApprovalOutcome:
        """Release a parked call (``ApprovalExpiredError`` after its TTL, ``ApprovalError`` when unknown or
        already decided) and run it when its turn asked for execution (or ``execute=True``)."""
        rec = self.boundary.parked(approval_id)
        try:
            released = self.boundary.advance(rec, S.RELEASED, {"approval_id": approval_id, "via": "approval"})
        except BoundaryError:
            self.boundary.expire_due()
            if rec.state is S.EXPIRED:
                raise ApprovalExpiredError(f"approval {approval_id} expired; the call was not executed") from None
            raise ApprovalError(f"approval {approval_id} was already decided ({rec.state.value})") from None
        run = rec.execute_on_release if execute is None else execute
        execution = None
        if run:
            if self.executor is None:
                raise ConfigError("cannot execute an approved call without an executor; pass "
                                  "AgentRuntime(..., executor=Executor(functions)) or approve(..., execute=False)")
            execution = self.executor.run(released)
        return ApprovalOutcome(approval_id, released, execution)

    def reject(self, approval_id: str, reason: str = "") -> dict:
        """Reject a parked call; it will never run. Returns its summary."""
        rec = self.boundary.parked(approval_id)
        try:
            self.boundary.advance(rec, S.REJECTED, {"approval_id": approval_id, "reason": reason})
        except BoundaryError:
            raise ApprovalError(f"approval {approval_id} was already decided ({rec.state.value})") from None
        return rec.summary()

    def pending(self) -> list[dict]:
        """The parked calls that can still be approved (expired ones are recorded as ``expired`` first)."""
        return [r.summary() for r in self.boundary.pending()]

    def execute(self, released: ReleasedCall) -> Execution:
        """Run a released call on the runtime's executor."""
        if self.executor is None:
            raise ConfigError("this runtime has no executor; pass AgentRuntime(..., executor=Executor(functions))")
        return self.executor.run(released)

    # -- helpers -----------------------------------------------------------------------------------------
    def _log(self, kind: str, request_id: str, data: dict) -> None:
        if self.audit is not None:
            self.audit.append(kind, request_id, None, data)

    def _prompt_tokens(self, spec: TurnSpec, messages: Any) -> int:
        try:
            return len(self.generator.model.encode_prompt(spec.render_prompt(messages)))
        except Exception:  # noqa: BLE001 - a count for usage reports only
            return 0


def _open_targets(state: CallState) -> frozenset:
    from .boundary import TRANSITIONS

    return TRANSITIONS.get(state, frozenset())


def _call_data(rec: CallRecord) -> dict:
    return {"arguments": rec.call.arguments, "decision": rec.decision.to_dict()}


def _is_json(text: str) -> bool:
    import json

    try:
        json.loads(text)
        return True
    except ValueError:
        return False
