"""A small position-tracking JSON parser: the value *and* where every part of it lies in the text.

:func:`parse_with_spans` accepts exactly what strict JSON allows — the same texts as ``json.loads``
without its NaN/Infinity extension — and returns the same value, plus a :class:`JsonSpans` map from each
value's path (a tuple of object keys and array indices, e.g. ``("items", 2, "price")``) to its
``[start, end)`` character span. For object members it also records the span of the whole member (key
through value), so a property that must go can be re-masked together with its key.

A text that is not JSON raises :class:`JsonSyntaxIssue` carrying the offset where parsing failed.
Duplicate keys behave as in ``json.loads``: the last one wins, and so do its spans. The parser uses an
explicit stack, not recursion; nesting deeper than :data:`MAX_DEPTH` levels is rejected (``json.loads``
itself gives up near Python's recursion limit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from structgen.errors import StructgenError

from .base import Issue, Span, tail_span

PathT = tuple  # tuple[str | int, ...]

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_CHUNK = re.compile(r'([^"\\\x00-\x1f]*)(["\\\x00-\x1f])', re.DOTALL)
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NON_JSON_CONSTANTS = ("NaN", "Infinity", "-Infinity")
MAX_DEPTH = 1000  # json.loads fails near Python's recursion limit (1000 by default); paths cost O(depth)


class JsonSyntaxIssue(StructgenError, ValueError):
    """The text is not strict JSON; ``offset`` is the character where parsing failed."""

    def __init__(self, msg: str, text: str, offset: int):
        self.msg, self.offset, self.text_length = msg, offset, len(text)
        self.lineno = text.count("\n", 0, offset) + 1
        self.colno = offset - (text.rfind("\n", 0, offset) + 1) + 1
        self._text = text
        super().__init__(f"invalid JSON: {msg} at line {self.lineno} column {self.colno} (char {offset})")

    def to_issue(self, validator: str = "json") -> Issue:
        """The issue to report: redo from the failing offset to the end of the text."""
        return Issue(str(self), tail_span(self._text, self.offset), "", validator)


@dataclass
class JsonSpans(Mapping):
    """Where each part of a parsed JSON value lies in its text.

    As a mapping: path tuple -> ``(start, end)`` span of the value at that path (``()`` is the root).
    ``members[path]`` is the span of the object member whose value is at ``path`` (from the opening quote
    of its key through the end of its value); ``keys[path]`` is the span of that member's key string.
    """

    values: dict[PathT, Span] = field(default_factory=dict)
    members: dict[PathT, Span] = field(default_factory=dict)
    keys: dict[PathT, Span] = field(default_factory=dict)

    def __getitem__(self, path: PathT) -> Span:
        return self.values[tuple(path)]

    def __iter__(self) -> Iterator[PathT]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def member(self, path: PathT) -> Span | None:
        """The span of the member (key through value) at ``path``, or ``None`` if it is not a member."""
        return self.members.get(tuple(path))

    def nearest(self, path: PathT) -> tuple[PathT, Span]:
        """The span of the value at ``path``, or of its longest prefix that exists in this document."""
        path = tuple(path)
        while path not in self.values:
            path = path[:-1]
        return path, self.values[path]


def json_pointer(path: PathT) -> str:
    """A JSON pointer (RFC 6901) for a path tuple: ``("a/b", 2)`` -> ``/a~1b/2``; ``()`` -> ``""``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def parse_with_spans(text: str) -> tuple[Any, JsonSpans]:
    """Parse strict JSON and return ``(value, spans)``; raise :class:`JsonSyntaxIssue` if it is not JSON."""
    if not isinstance(text, str):
        raise TypeError(f"parse_with_spans needs a str, got {type(text).__name__}")
    p = _Parser(text)
    value, pos = p.document(_WS.match(text, 0).end())
    end = _WS.match(text, pos).end()
    if end != len(text):
        raise JsonSyntaxIssue("Extra data", text, end)
    return value, p.spans


class _Frame:
    """An object or array being parsed: its container, path, start offset and the pending member key."""

    __slots__ = ("container", "path", "start", "key", "key_start", "key_end")

    def __init__(self, container: dict | list, path: PathT, start: int):
        self.container, self.path, self.start = container, path, start
        self.key: str | None = None
        self.key_start = self.key_end = -1

    def child(self) -> PathT:
        if isinstance(self.container, dict):
            return self.path + (self.key,)
        return self.path + (len(self.container),)


class _Parser:
    """An iterative (explicit-stack) parser over one text, so nesting depth is bounded by memory, not by
    Python's recursion limit; fills ``spans`` as it goes."""

    def __init__(self, text: str):
        self.text = text
        self.spans = JsonSpans()

    def fail(self, msg: str, offset: int) -> JsonSyntaxIssue:
        return JsonSyntaxIssue(msg, self.text, offset)

    def document(self, pos: int) -> tuple[Any, int]:
        """Parse one value starting at ``pos``; return it and the offset just after it."""
        s, ws, values = self.text, _WS, self.spans.values
        stack: list[_Frame] = []
        while True:
            # -- parse the value at ``pos``: a scalar, an empty container, or open a container
            path = stack[-1].child() if stack else ()
            c = s[pos : pos + 1]
            if c == "{" or c == "[":
                if len(stack) >= MAX_DEPTH:
                    raise self.fail(f"nesting deeper than {MAX_DEPTH} levels", pos)
                inner = ws.match(s, pos + 1).end()
                if s[inner : inner + 1] == ("}" if c == "{" else "]"):
                    value, end = ({} if c == "{" else []), inner + 1
                else:
                    frame = _Frame({} if c == "{" else [], path, pos)
                    stack.append(frame)
                    pos = self.member_key(frame, inner) if c == "{" else inner
                    continue
            else:
                value, end = self.scalar(pos)
            values[path] = (pos, end)
            # -- attach the finished value to its parent; close every container that ends here
            while True:
                if not stack:
                    return value, end
                frame = stack[-1]
                container = frame.container
                if isinstance(container, dict):
                    child = frame.path + (frame.key,)
                    container[frame.key] = value
                    self.spans.members[child] = (frame.key_start, end)
                    self.spans.keys[child] = (frame.key_start, frame.key_end)
                else:
                    container.append(value)
                pos = ws.match(s, end).end()
                c = s[pos : pos + 1]
                if c == ",":
                    pos = ws.match(s, pos + 1).end()
                    if isinstance(container, dict):
                        pos = self.member_key(frame, pos)
                    break
                if c != ("}" if isinstance(container, dict) else "]"):
                    raise self.fail("Expecting ',' delimiter", pos)
                stack.pop()
                value, end = container, pos + 1
                values[frame.path] = (frame.start, end)

    def member_key(self, frame: _Frame, pos: int) -> int:
        """Parse ``"key" :`` at ``pos`` into ``frame``; return the offset of the member's value."""
        s = self.text
        if s[pos : pos + 1] != '"':
            raise self.fail("Expecting property name enclosed in double quotes", pos)
        key, key_end = self.string(pos)
        colon = _WS.match(s, key_end).end()
        if s[colon : colon + 1] != ":":
            raise self.fail("Expecting ':' delimiter", colon)
        if key in frame.container:  # duplicate key: the last one wins, as in json.loads; forget old spans
            self._forget(frame.path + (key,))
        frame.key, frame.key_start, frame.key_end = key, pos, key_end
        return _WS.match(s, colon + 1).end()

    def scalar(self, pos: int) -> tuple[Any, int]:
        s = self.text
        c = s[pos : pos + 1]
        if c == '"':
            return self.string(pos)
        if s.startswith("null", pos):
            return None, pos + 4
        if s.startswith("true", pos):
            return True, pos + 4
        if s.startswith("false", pos):
            return False, pos + 5
        m = _NUMBER.match(s, pos)
        if m is None:
            for const in _NON_JSON_CONSTANTS:
                if s.startswith(const, pos):
                    raise self.fail(f"{const} is not valid JSON", pos)
            raise self.fail("Expecting value", pos)
        try:
            return (float(m.group(0)) if (m.group(1) or m.group(2)) else int(m.group(0))), m.end()
        except ValueError as e:  # e.g. an integer longer than Python's digit limit, as in json.loads
            raise self.fail(f"number out of range ({e})", pos) from None

    def string(self, start: int) -> tuple[str, int]:
        """Decode the string whose opening quote is at ``start``; return it and the offset after it."""
        s = self.text
        parts: list[str] = []
        pos = start + 1
        while True:
            m = _CHUNK.match(s, pos)
            if m is None:
                raise self.fail("Unterminated string starting at", start)
            content, term = m.groups()
            if content:
                parts.append(content)
            pos = m.end()
            if term == '"':
                return "".join(parts), pos
            if term != "\\":
                raise self.fail("Invalid control character at", pos - 1)
            esc = s[pos : pos + 1]
            if not esc:
                raise self.fail("Unterminated string starting at", start)
            if esc != "u":
                if esc not in _ESCAPES:
                    raise self.fail("Invalid \\escape", pos - 1)
                parts.append(_ESCAPES[esc])
                pos += 1
                continue
            # Bounds as in CPython's scanner, so error offsets match json.loads exactly: an escape that
            # ends the text is invalid, and a pair is only joined when more text follows it.
            if pos + 5 >= len(s):
                raise self.fail("Invalid \\uXXXX escape", pos)
            uni = self._hex4(pos + 1)
            pos += 5
            if 0xD800 <= uni <= 0xDBFF and pos + 6 < len(s) and s.startswith("\\u", pos):
                low = self._hex4(pos + 2)
                if 0xDC00 <= low <= 0xDFFF:
                    uni = 0x10000 + (((uni - 0xD800) << 10) | (low - 0xDC00))
                    pos += 6
            parts.append(chr(uni))

    def _hex4(self, pos: int) -> int:
        m = _HEX4.match(self.text, pos)
        if m is None:
            raise self.fail("Invalid \\uXXXX escape", pos - 1)
        return int(m.group(0), 16)

    def _forget(self, prefix: PathT) -> None:
        n = len(prefix)
        for table in (self.spans.values, self.spans.members, self.spans.keys):
            for p in [p for p in table if p[:n] == prefix]:
                del table[p]
