"""``AlertRulesGrammar``: the alert-rule grammar that ``alerts_spec`` returns, holding its catalog so that it
can ground itself (``generate(..., ground=True)``: ``grounded(description)``, ``.grounded``).

A module of its own because it subclasses ``structgen.spec.Grammar``, which the package's ``__init__``
imports only when a spec is built.
"""

from __future__ import annotations

from dataclasses import dataclass

from structgen.errors import ConfigError
from structgen.spec import Grammar

from .catalog import AlertCatalog

__all__ = ["AlertRulesGrammar"]


@dataclass(frozen=True, eq=False)
class AlertRulesGrammar(Grammar):
    """A ``Grammar`` of alert rules with its ``catalog`` (``alerts_spec``'s) and, when grounded, the
    description its names come from (``grounded_in``; None when not grounded)."""

    catalog: AlertCatalog | None = None
    grounded_in: str | None = None

    def grounded(self, source: str) -> "AlertRulesGrammar":
        """This spec narrowed to the channels, teams, label values and thresholds ``source`` states
        (``validators.alerts.grounded``), always written into the grammar (``alerts_spec(narrow=True)``)."""
        from . import alerts_spec
        from .grounded import ground_catalog

        if not isinstance(source, str):
            raise ConfigError(f"the grounding source must be text, got {type(source).__name__}")
        return alerts_spec(ground_catalog(self.catalog, source), grounded_in=source)

    def __repr__(self) -> str:
        return super().__repr__() + (" grounded" if self.grounded_in is not None else "")
