"""The playground's tool-set run: one agent turn through the commit boundary, its drafts relayed to the page and
its calls followed from the runtime's events to the state and policy decision the page shows."""

from __future__ import annotations

import threading
from typing import Any, Callable


class Cancelled(Exception):
    """The client went away: the run stops at the next step."""


def run_turn(req, tools: Any, runtime, emit: Callable[[str, dict], None], cancel: threading.Event) -> dict:
    """One agent turn through the commit boundary (``tool_choice="required"``, ``execute=False``): drafts
    are relayed; the calls' states and decisions are followed from the runtime's events. The sampler's
    block length and threshold are the runtime's own."""
    from ..errors import TurnCancelled

    calls: dict[str, dict] = {}
    turn: dict = {}
    last: dict = {"cells": []}

    def on_event(ev) -> None:
        if ev.kind == "draft":
            last["cells"] = ev.data["cells"]
            emit("structgen.draft", ev.data)
        elif ev.call_id is None:
            if ev.kind == "final":
                turn.update(ev.data)
        else:
            _follow_call(calls.setdefault(ev.call_id, {"id": ev.call_id, "name": None, "arguments": None,
                                                       "state": None, "decision": None, "errors": []}), ev)

    try:
        res = runtime.run_turn(req.prompt, tools, tool_choice="required", max_tokens=req.max_tokens,
                               temperature=req.temperature, seed=req.seed, on_event=on_event,
                               cancelled=cancel.is_set, execute=False, ground=req.ground)
    except TurnCancelled:
        raise Cancelled from None
    first = next(iter(calls.values()), None)
    checked = first is not None and first["state"] in ("released", "parked", "denied")
    call = {"name": first["name"], "arguments": first["arguments"]} if checked else None
    errors = list(turn.get("errors") or []) + (first["errors"] if first else [])
    return {"text": res.text, "value": call, "valid": checked, "errors": errors, "nfe": res.nfe,
            "steps": res.steps, "decision": first["decision"] if first else None, "kind": "tools",
            "state": first["state"] if first else "invalid", "call": call, "calls": list(calls.values()),
            "finish_reason": res.finish_reason, "request_id": res.request_id, "executed": bool(res.executions),
            "timings": res.timings, "output_tokens": res.completion_tokens,
            "forced_tokens": sum(c["s"] == "f" and c["t"] != "" for c in last["cells"]),
            "repair_rounds": turn.get("repair_rounds", 0), "ground": req.ground}


def _follow_call(c: dict, ev) -> None:
    """Update one call's view from a boundary event (its kind is the state the call entered)."""
    d = ev.data
    c["state"] = ev.kind
    c["name"] = d.get("name") or c["name"]
    if ev.kind == "final" and isinstance(d.get("call"), dict):
        c["arguments"] = d["call"].get("arguments")
    if "arguments" in d:
        c["arguments"] = d["arguments"]
    if ev.kind == "decided":
        c["decision"] = {k: d.get(k) for k in ("action", "rule", "reason")}
    elif isinstance(d.get("decision"), dict):
        c["decision"] = d["decision"]
    if ev.kind == "invalid":
        c["errors"] = list(d.get("errors") or [])
    if ev.kind == "parked":
        c["approval_id"], c["expires_at"] = d.get("approval_id"), d.get("expires_at")
