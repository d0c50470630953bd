"""``ServerLimits``: every bound the server enforces, in one place (sizes, concurrency, batching).

Request sizes: a body over ``max_body_bytes`` is refused with 413 before it is parsed; more than
``max_messages`` messages or ``max_tools`` tools, or ``max_tokens`` above ``max_tokens_cap``, is a 400 (as
OpenAI answers arrays and numbers out of range). Concurrency: ``workers`` generations run at once (each in
its own thread, their model calls batched together), ``queue_size`` more wait; beyond that a request gets
503 with ``Retry-After``. Batching: the model proxy waits at most ``batch_window_s`` for the other running
generations' model calls and runs at most ``max_batch`` sequences in one forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class ServerLimits:
    """Bounds of one server (see the module docstring); all have working defaults."""

    max_body_bytes: int = 1_000_000
    max_messages: int = 256
    max_tools: int = 64
    max_tokens_cap: int = 1024
    default_max_tokens: int = 128
    workers: int = 2
    queue_size: int = 32
    batch_window_s: float = 0.004
    max_batch: int = 8
    retry_after_s: int = 1

    def __post_init__(self):
        for name in ("max_body_bytes", "max_messages", "max_tools", "max_tokens_cap", "default_max_tokens",
                     "workers", "max_batch"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"ServerLimits.{name} must be a positive integer, got {value!r}")
        if not isinstance(self.queue_size, int) or self.queue_size < 0:
            raise ConfigError(f"ServerLimits.queue_size must be an integer >= 0, got {self.queue_size!r}")
        if self.batch_window_s < 0:
            raise ConfigError(f"ServerLimits.batch_window_s must be >= 0, got {self.batch_window_s!r}")
        if self.default_max_tokens > self.max_tokens_cap:
            raise ConfigError(f"ServerLimits.default_max_tokens ({self.default_max_tokens}) is above "
                              f"max_tokens_cap ({self.max_tokens_cap}); lower it or raise the cap")
