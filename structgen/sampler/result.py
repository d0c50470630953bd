"""The result of one generation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Result:
    """``text`` (the decoded output), ``value`` (parsed JSON or a pydantic instance; None for text specs),
    ``valid`` (every validator passed), ``errors`` (validator messages of the final text), ``nfe`` (model
    forward passes), ``timings`` ({"model_s", "constraint_s", "total_s"}), ``engine`` ("automaton" or
    "grammar"), ``trace`` (step events when tracing), plus token-level counts, ``repair_rounds`` and
    ``fallback`` (the repair rounds ran out and a last resort wrote the text: the spec's stricter fallback,
    or, for ``Sql``, the output cut at its longest complete prefix that validates, or a prefix of it closed
    by the grammar; the trace says which)."""

    text: str
    value: Any
    valid: bool
    errors: list[str]
    nfe: int
    timings: dict[str, float]
    engine: str
    trace: list = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    n_output_tokens: int = 0
    n_forced: int = 0
    steps: int = 0
    repair_rounds: int = 0
    fallback: bool = False

    @property
    def nfe_per_token(self) -> float:
        return self.nfe / max(1, self.n_output_tokens)

    @property
    def forced_share(self) -> float:
        return self.n_forced / max(1, self.n_output_tokens)
