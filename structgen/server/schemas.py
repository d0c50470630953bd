"""Pydantic models of the Chat Completions request (the part of OpenAI's API the server implements).

Rules, as OpenAI applies them: unknown fields are ignored; a known field of the wrong type is an error (no
coercion: ``"temperature": "0.5"`` is refused, an integer is accepted where a number is expected); values
out of range are errors. Fields that are a union in OpenAI's API (``content``, ``tool_choice``) are checked
by one validator each, so an error names the field, not a union member. ``structgen`` is this server's
extension: ``{"drafts": true}`` streams the draft canvases as ``structgen.draft`` events, ``{"ground": true}``
takes the answer's strings from the user's messages.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ChatCompletionRequest", "ChatMessage", "ToolDef", "ResponseFormat", "StructgenOptions"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)


class FunctionDef(_Model):
    """A function tool. Extra members are kept: ``x-destructive`` / ``x-side-effects`` mark a client tool."""

    model_config = ConfigDict(extra="allow", strict=True)

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolDef(_Model):
    type: Literal["function"]
    function: FunctionDef


class CallFunction(_Model):
    name: str
    arguments: str


class MessageToolCall(_Model):
    id: str
    type: Literal["function"] = "function"
    function: CallFunction


class ChatMessage(_Model):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Any = None
    name: str | None = None
    tool_calls: list[MessageToolCall] | None = None
    tool_call_id: str | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, v: Any) -> Any:
        """A string, ``null``, or a list of text parts ``{"type": "text", "text": ...}``."""
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, list):
            for i, p in enumerate(v):
                if not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str):
                    raise ValueError(f"part {i} is not a text part {{'type': 'text', 'text': ...}}; only text "
                                     "content is supported")
            return [{"type": "text", "text": p["text"]} for p in v]
        raise ValueError(f"expected a string or a list of text parts, got {type(v).__name__}")


class JsonSchemaFormat(_Model):
    name: str = Field(max_length=64)
    description: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Model):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class StreamOptions(_Model):
    include_usage: bool = False


class StructgenOptions(_Model):
    """The server's extension field: ``drafts`` streams draft canvases (``structgen.draft`` SSE events);
    ``ground`` makes the strings of a ``response_format`` answer or of the calls' arguments come from the
    user's messages (``structgen.grounding``)."""

    drafts: bool = False
    ground: bool = False


class ChatCompletionRequest(_Model):
    model: str
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    tools: list[ToolDef] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    n: int | None = Field(None, ge=1)
    user: str | None = None
    structgen: StructgenOptions | None = None

    @field_validator("tool_choice", mode="before")
    @classmethod
    def _tool_choice(cls, v: Any) -> Any:
        """``"none"``, ``"auto"``, ``"required"`` or ``{"type": "function", "function": {"name": ...}}``."""
        if v is None or v in ("none", "auto", "required"):
            return v
        if isinstance(v, dict) and v.get("type") == "function":
            fn = v.get("function")
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                return {"type": "function", "function": {"name": fn["name"]}}
        raise ValueError("expected 'none', 'auto', 'required' or {'type': 'function', 'function': {'name': ...}}")

    @property
    def canvas_tokens(self) -> int | None:
        """The requested canvas length: ``max_completion_tokens``, else ``max_tokens``."""
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens

    @property
    def wants_drafts(self) -> bool:
        return bool(self.stream and self.structgen is not None and self.structgen.drafts)

    @property
    def wants_ground(self) -> bool:
        return bool(self.structgen is not None and self.structgen.ground)
