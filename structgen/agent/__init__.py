"""structgen.agent: tools a model may call, the constraint of an agent turn, and the commit boundary that
stands between a generated call and its execution.

- :mod:`.tools` — ``Tool``, ``ToolCall``, ``ToolCallSpec``, ``as_tools``, ``load_tools``, ``to_openai_tools``;
  :mod:`.functions` — plain Python functions as tools; :mod:`.registry` — ``ToolRegistry``.
- :mod:`.turn` — ``TurnSpec``: one call, several calls or a text reply, as OpenAI's ``tool_choice`` and
  ``parallel_tool_calls`` allow, valid by construction.
- :mod:`.boundary` — the state machine draft → final → validated → decided → released → executed
  (``CallState``, ``ReleasedCall``, ``BoundaryError``); :mod:`.policy` — ``Policy`` / ``Decision``;
  :mod:`.executor` — ``Executor``; :mod:`.audit` — ``AuditLog`` (SQLite, append-only);
  :mod:`.drafts` — the draft wire format; :mod:`.runtime` — ``AgentRuntime.run_turn`` ties them together.

See docs/agent.md.
"""

from ..errors import (ApprovalError, ApprovalExpiredError, ApprovalNotFoundError, BoundaryError, PolicyError,
                      TurnCancelled)
from .audit import AuditLog
from .boundary import CallState, ReleasedCall
from .drafts import DraftTracker, draft_payload
from .executor import Execution, Executor
from .functions import function_tool, tool
from .policy import Decision, Policy, Rule
from .registry import ToolRegistry
from .runtime import AgentRuntime, ApprovalOutcome, TurnEvent, TurnResult
from .tools import Tool, ToolCall, ToolCallSpec, as_tools, call_schema, load_tools, to_openai_tools, tool_call_spec
from .turn import TurnSpec

__all__ = [
    "Tool", "ToolCall", "ToolCallSpec", "as_tools", "call_schema", "load_tools", "tool_call_spec",
    "to_openai_tools", "function_tool", "tool", "ToolRegistry", "TurnSpec",
    "CallState", "ReleasedCall", "BoundaryError", "Policy", "Decision", "Rule", "PolicyError",
    "Executor", "Execution", "AuditLog", "AgentRuntime", "TurnResult", "TurnEvent", "ApprovalOutcome",
    "ApprovalError", "ApprovalExpiredError", "ApprovalNotFoundError", "TurnCancelled", "draft_payload", "DraftTracker",
]
