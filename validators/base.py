"""What every validator shares: the :class:`Issue` it reports, the :class:`Validator` protocol, and
:func:`run_validators`, which runs several validators over one decoded text.

An issue names *what must be redone*: ``span`` is the ``[start, end)`` character range of the decoded text
that the sampler re-masks and denoises again (``None`` means "unknown: redo the whole output").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, runtime_checkable

Span = tuple[int, int]


@dataclass(frozen=True)
class Issue:
    """One reason a decoded text is not valid.

    ``message`` says what is wrong; ``span`` is the ``[start, end)`` character range to redo (``None``:
    the whole output); ``path`` locates it in the value (a JSON pointer such as ``/items/2/price``, or a
    grammar rule); ``validator`` names the validator that reported it.
    """

    message: str
    span: Span | None
    path: str = ""
    validator: str = ""

    def __str__(self) -> str:
        where = f" [{self.span[0]}:{self.span[1]}]" if self.span is not None else ""
        who = f"{self.validator}: " if self.validator else ""
        return f"{who}{self.message}{where}"


@runtime_checkable
class Validator(Protocol):
    """Checks a decoded text; an empty list means the text is valid."""

    name: str

    def __call__(self, text: str) -> list[Issue]: ...


def tail_span(text: str, offset: int) -> Span | None:
    """The span to redo when parsing failed at ``offset``: from there to the end of the text.

    When the parse failed at the very end (the output stopped too early), the span would be empty, so the
    last whitespace-separated word is redone instead, giving the sampler room to continue from there;
    an empty or all-blank text gives ``None`` (redo everything).
    """
    n = len(text)
    offset = max(0, min(offset, n))
    if offset < n:
        return (offset, n)
    stripped = text.rstrip()
    if not stripped:
        return None
    start = len(stripped)
    while start > 0 and not stripped[start - 1].isspace():
        start -= 1
    return (start, n)


def spans_overlap(a: Span | None, b: Span | None) -> bool:
    """Whether two issue spans share a character (an empty span counts as its first character; a missing
    span, the whole text, overlaps everything)."""
    if a is None or b is None:
        return True
    return a[0] < max(b[1], b[0] + 1) and b[0] < max(a[1], a[0] + 1)


def run_validators(validators: Iterable[Validator], text: str) -> list[Issue]:
    """Run every validator over ``text`` and return all issues, in validator order (empty: valid)."""
    issues: list[Issue] = []
    for v in validators:
        issues.extend(v(text))
    return issues
