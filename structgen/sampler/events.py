"""Step events of the canvas loop: what each step committed and why, for traces, streaming and the UI."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class StepEvent:
    """One step of the canvas loop.

    ``kind`` is ``"forced"`` (tokens the constraint forces, no model call), ``"model"`` (a model call and
    the commits chosen from it), ``"remask"`` (a validator failed: positions re-masked for repair) or
    ``"final"``. ``canvas`` holds token ids with -1 for masked positions; ``text`` the decoded draft.
    """

    step: int
    kind: str
    nfe: int
    canvas: list[int]
    positions: list[int] = field(default_factory=list)
    text: str = ""
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)
