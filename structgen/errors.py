"""The one exception hierarchy of structgen.

Every error a user can meet is a :class:`StructgenError`; each message says what was wrong and what to do.
Errors about the request (spec, canvas size) are raised before any model call.
"""

from __future__ import annotations


class StructgenError(Exception):
    """Base class of every structgen error."""


class SpecError(StructgenError, ValueError):
    """The spec (schema, regex, grammar, choice list) is malformed."""


class UnsupportedSchemaError(SpecError):
    """The schema uses a keyword or construct structgen cannot enforce at all."""


class GrammarSyntaxError(SpecError):
    """A Lark grammar does not parse."""


class CompileError(StructgenError):
    """A valid spec could not be compiled against this tokenizer."""


class CanvasTooSmallError(StructgenError, ValueError):
    """``max_tokens`` is smaller than the shortest valid output."""

    def __init__(self, needed: int, given: int, what: str = "output"):
        self.needed, self.given = needed, given
        super().__init__(
            f"max_tokens={given} is too small: the shortest valid {what} needs {needed} tokens. "
            f"Pass max_tokens >= {needed} (leave room for the content, e.g. {max(needed * 2, needed + 16)})."
        )


class ConstraintViolation(StructgenError):
    """A token that the constraint forbids was committed (a bug in a caller, never in normal generation)."""


class GenerationError(StructgenError):
    """Generation ended without a valid result (validation kept failing after the repair rounds)."""

    def __init__(self, message: str, *, text: str = "", errors: list | None = None):
        self.text = text
        self.errors = list(errors or [])
        super().__init__(message)


class QueryError(StructgenError):
    """Running a SQL query failed: it does not compile, it is not read-only, or it ran past its time limit."""


class QueryTimeoutError(QueryError):
    """A SQL query ran past its time limit and was interrupted."""


class DeadEnd(GenerationError):
    """The committed tokens leave no way to finish the output inside the canvas (a sampling dead end, met
    after model calls). The generator backs off: it re-masks from before ``position`` and denoises again."""

    def __init__(self, message: str, *, position: int, text: str = ""):
        self.position = position
        super().__init__(message, text=text)


class ModelLoadError(StructgenError):
    """A model directory is missing, incomplete or not a masked LM."""


class ConfigError(StructgenError, ValueError):
    """A sampler or generator setting is out of range."""


class StructgenWarning(UserWarning):
    """Something works but not as well as it could (e.g. no embedded model installed yet)."""


class BoundaryError(StructgenError):
    """The commit boundary refused a step: an illegal state transition (e.g. executing a draft, approving a
    denied call, releasing twice) or an object that was not minted by a release handed to an executor."""


class PolicyError(StructgenError, ValueError):
    """A permission policy (TOML file or rule list) is malformed; the message names the line or rule."""


class ApprovalError(StructgenError, KeyError):
    """An approval id is unknown, already decided, or expired."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ApprovalNotFoundError(ApprovalError):
    """No call was ever parked under this approval id (by this runtime)."""


class ApprovalExpiredError(ApprovalError):
    """The parked call's approval window (its TTL) has passed; it can no longer be approved."""


class TurnCancelled(StructgenError):
    """A turn was cancelled (``cancelled()`` returned True) before anything was released or executed."""

    def __init__(self, message: str, *, request_id: str = ""):
        self.request_id = request_id
        super().__init__(message)
