"""Chat completions: a validated request becomes a :class:`Plan` (on the event loop, cheap checks only),
then a worker thread runs it and returns a :class:`~.responses.Completion`.

Two paths:

- **turns** (no ``response_format``, or ``"text"``): ``AgentRuntime.run_turn`` with the request's tools,
  ``tool_choice`` and ``parallel_tool_calls``; the turn's constraint makes the call (or the plain reply)
  valid by construction and the commit boundary releases calls only when final, validated and allowed.
  Tools the server was started with (``--tools``) replace client tools of the same name, so a client cannot
  drop ``destructive`` or widen a schema by redeclaring one. Released calls are executed on the server only
  when it has an executor.
- **response_format** (``json_schema`` or ``json_object``): ``Generator.generate`` with that schema; the
  content is the validated JSON. ``request`` and ``completed`` rows are appended to the audit log too, so
  every request leaves a trace.

``temperature`` defaults to 0 (greedy; OpenAI's default is 1), ``seed`` to 0; ``max_tokens`` (or
``max_completion_tokens``) is the canvas length, default ``ServerLimits.default_max_tokens``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from ..agent.tools import Tool, as_tools
from ..errors import SpecError
from ..spec import JsonSchema
from .errors import APIError, bad_request, from_structgen, not_found
from .limits import ServerLimits
from .responses import Completion
from .schemas import ChatCompletionRequest
from .workers import Cancelled, Job

__all__ = ["Plan", "ChatService", "new_request_id"]

JSON_OBJECT = {"type": "object"}


def new_request_id() -> str:
    return "chatcmpl-" + secrets.token_hex(12)


@dataclass
class Plan:
    """Everything a worker needs to run one request; built by :meth:`ChatService.plan`."""

    request_id: str
    model: str
    messages: list[dict]
    tools: tuple[Tool, ...]
    tool_choice: Any
    parallel_tool_calls: bool
    schema: dict | None  # response_format's schema; None for a turn
    max_tokens: int
    temperature: float
    seed: int
    stream: bool
    drafts: bool
    include_usage: bool
    ground: bool = False  # the extension's ground: strings from the user's messages (structgen.grounding)


class ChatService:
    """Plans and runs chat completions against one generator and agent runtime."""

    def __init__(self, *, generator, runtime, audit, limits: ServerLimits, model_id: str,
                 server_tools: tuple[Tool, ...] = (), execute: bool = False):
        self.generator, self.runtime, self.audit, self.limits = generator, runtime, audit, limits
        self.model_id = model_id
        self.server_tools = {t.name: t for t in server_tools}
        self.execute = execute

    @property
    def model_ids(self) -> set[str]:
        return {self.model_id, getattr(self.generator.model, "name", self.model_id)}

    # -- planning (event loop) ---------------------------------------------------------------------------
    def plan(self, req: ChatCompletionRequest) -> Plan:
        """Check what the schema alone cannot (sizes, tools, tool_choice, response_format); ``APIError``."""
        lim = self.limits
        if req.model not in self.model_ids:
            raise not_found(f"The model '{req.model}' does not exist; this server serves '{self.model_id}' "
                            "(GET /v1/models)", code="model_not_found")
        if req.n not in (None, 1):
            raise bad_request("Only n=1 is supported.", param="n", code="invalid_value")
        if len(req.messages) > lim.max_messages:
            raise bad_request(f"Invalid 'messages': array too long. Expected at most {lim.max_messages} messages, "
                              f"got {len(req.messages)}.", param="messages", code="array_above_max_length")
        if req.tools and len(req.tools) > lim.max_tools:
            raise bad_request(f"Invalid 'tools': array too long. Expected at most {lim.max_tools} tools, got "
                              f"{len(req.tools)}.", param="tools", code="array_above_max_length")
        max_tokens = req.canvas_tokens or lim.default_max_tokens
        if max_tokens > lim.max_tokens_cap:
            which = "max_completion_tokens" if req.max_completion_tokens is not None else "max_tokens"
            raise bad_request(f"{which} is too large: {max_tokens}. This server supports at most "
                              f"{lim.max_tokens_cap} completion tokens.", param=which, code="invalid_value")
        tools = self._tools(req)
        self._check_tool_choice(req, tools)
        schema = self._schema(req, tools)
        messages = [m.model_dump(exclude_none=True) for m in req.messages]
        return Plan(request_id=new_request_id(), model=req.model, messages=messages, tools=tools,
                    tool_choice=req.tool_choice or "auto", parallel_tool_calls=bool(req.parallel_tool_calls),
                    schema=schema, max_tokens=max_tokens, temperature=float(req.temperature or 0.0),
                    seed=int(req.seed or 0), stream=bool(req.stream), drafts=req.wants_drafts,
                    include_usage=bool(req.stream_options and req.stream_options.include_usage),
                    ground=req.wants_ground)

    def _tools(self, req: ChatCompletionRequest) -> tuple[Tool, ...]:
        out = []
        for i, t in enumerate(req.tools or ()):
            known = self.server_tools.get(t.function.name)
            if known is not None:
                out.append(known)
                continue
            try:
                out.extend(as_tools(t.model_dump(exclude_none=True)))
            except SpecError as e:
                raise bad_request(f"Invalid tool {t.function.name!r}: {e}", param=f"tools[{i}].function") from None
        names = [t.name for t in out]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise bad_request(f"Two tools are named {dup!r}; tool names must be unique.", param="tools")
        return tuple(out)

    @staticmethod
    def _check_tool_choice(req: ChatCompletionRequest, tools: tuple[Tool, ...]) -> None:
        choice = req.tool_choice
        if choice is None:
            return
        if not tools:
            if choice in ("none", "auto"):
                return
            raise bad_request("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
                              "specified.", param="tool_choice", code="invalid_value")
        if isinstance(choice, dict):
            name = choice["function"]["name"]
            if name not in {t.name for t in tools}:
                raise bad_request(f"Invalid value for 'tool_choice': no function named '{name}' was specified in "
                                  f"the 'tools' parameter.", param="tool_choice", code="invalid_value")

    @staticmethod
    def _schema(req: ChatCompletionRequest, tools: tuple[Tool, ...]) -> dict | None:
        rf = req.response_format
        if rf is None or rf.type == "text":
            return None
        if tools and req.tool_choice != "none":
            raise bad_request("response_format together with tools is not supported; send tools (and read the "
                              "calls) or a response_format, or set tool_choice to 'none'.",
                              param="response_format", code="unsupported_parameter")
        if rf.type == "json_object":
            return JSON_OBJECT
        if rf.json_schema is None or rf.json_schema.schema_ is None:
            raise bad_request("Missing required parameter: 'response_format.json_schema.schema'.",
                              param="response_format.json_schema.schema", code="missing_required_parameter")
        schema = rf.json_schema.schema_
        try:
            JsonSchema(schema)
        except SpecError as e:
            raise bad_request(f"Invalid schema for response_format '{rf.json_schema.name}': {e}",
                              param="response_format", code="invalid_json_schema") from None
        return schema

    # -- running (worker thread) -------------------------------------------------------------------------
    def run(self, plan: Plan, job: Job) -> Completion:
        """Run ``plan``; ``Cancelled`` when the job was cancelled, ``APIError`` (400) for what the request
        asked that cannot be done (a schema or tool set that does not compile, a canvas too small, a prompt
        longer than the model's positions); other errors propagate (500)."""
        from ..errors import CanvasTooSmallError, CompileError, ConfigError

        try:
            if plan.schema is not None:
                return self._run_schema(plan, job)
            return self._run_turn(plan, job)
        except (Cancelled, APIError):
            raise
        except (SpecError, CompileError) as e:
            raise from_structgen(e, param="response_format" if plan.schema is not None else "tools") from None
        except (CanvasTooSmallError, ConfigError) as e:
            if job.cancelled():
                raise Cancelled(str(e)) from None
            raise from_structgen(e, param="max_tokens" if isinstance(e, CanvasTooSmallError) else "messages") from None

    def _run_turn(self, plan: Plan, job: Job) -> Completion:
        from ..errors import TurnCancelled

        decisions: list[dict] = []

        def on_event(ev) -> None:
            if ev.kind == "draft":
                if plan.drafts:
                    job.emit("draft", ev.data)
                else:
                    job.emit("progress")
            elif ev.kind == "decided":
                decisions.append({"call_id": ev.call_id, **ev.data})

        try:
            result = self.runtime.run_turn(
                plan.messages, list(plan.tools) or None, tool_choice=plan.tool_choice,
                parallel_tool_calls=plan.parallel_tool_calls, max_tokens=plan.max_tokens,
                temperature=plan.temperature, seed=plan.seed, request_id=plan.request_id, on_event=on_event,
                cancelled=job.cancelled, execute=self.execute, ground=plan.ground)
        except TurnCancelled as e:
            raise Cancelled(str(e)) from None
        ext = {"request_id": plan.request_id, "nfe": result.nfe, "steps": result.steps, "decisions": decisions,
               "parked": list(result.pending), "denied": list(result.denied), "invalid": list(result.invalid),
               "executions": [x.to_dict() for x in result.executions]}
        return Completion(id=plan.request_id, model=plan.model, content=result.content,
                          tool_calls=[c.openai() for c in result.calls], finish_reason=result.finish_reason,
                          prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens,
                          extension=ext)

    def _run_schema(self, plan: Plan, job: Job) -> Completion:
        from ..agent.drafts import DraftTracker
        from ..agent.turn import normalize_messages

        messages = normalize_messages(plan.messages)
        spec = JsonSchema(plan.schema)
        model = self.generator.model
        tracker = DraftTracker(model.tokenizer)

        def on_step(ev) -> None:
            if job.cancelled():
                raise Cancelled("the client went away")
            if plan.drafts:
                tracker.update(ev)
                job.emit("draft", tracker.payload(ev))
            else:
                job.emit("progress")

        self._audit("request", plan.request_id, {"response_format": "json_schema", "max_tokens": plan.max_tokens,
                                                 "messages": len(messages)})
        try:
            r = self.generator.generate(messages, spec, plan.max_tokens, on_step=on_step,
                                        temperature=plan.temperature, seed=plan.seed, ground=plan.ground)
            if job.cancelled():
                raise Cancelled("the client went away")
        except Cancelled:
            self._audit("cancelled", plan.request_id, {"reason": "the client went away"})
            raise
        prompt_tokens = len(model.encode_prompt(spec.render_prompt(messages)))
        self._audit("completed", plan.request_id, {"finish_reason": "stop", "nfe": r.nfe, "valid": r.valid,
                                                   "output_tokens": r.n_output_tokens})
        ext = {"request_id": plan.request_id, "nfe": r.nfe, "steps": r.steps, "engine": r.engine,
               "repair_rounds": r.repair_rounds, "fallback": r.fallback}
        return Completion(id=plan.request_id, model=plan.model, content=r.text, finish_reason="stop",
                          prompt_tokens=prompt_tokens, completion_tokens=r.n_output_tokens, extension=ext)

    def _audit(self, kind: str, request_id: str, data: dict) -> None:
        if self.audit is not None:
            self.audit.append(kind, request_id, None, data)
