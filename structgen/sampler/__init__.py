"""The masked-diffusion sampler: canvas loop, commit policies, repair and the ``Generator`` entry point."""

from .events import StepEvent
from .generator import Generator
from .policy import CommitPolicy
from .result import Result

__all__ = ["Generator", "Result", "StepEvent", "CommitPolicy"]
