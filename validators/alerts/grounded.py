"""Grounded alert rules: the names a rule writes are the ones its description states.

``generate(description, alerts_spec(catalog), ground=True)`` decodes with ``ground_catalog(catalog,
description)``'s spec: the catalog with its channels, its teams and each label key's values cut down to those
the description names (``stated_names``), so "Let #ops know once web-3 has less than 5 GB free" can write
``host == "web-3"`` and ``notify "#ops"``, and neither ``web-1`` nor ``#alerts``. A name is stated when the
description holds it as a whole word, in any case, its hyphens included (``db-1`` is no mention of ``#db``;
``web-3 box`` names ``web-3``); a channel is also stated by its name without the ``#`` ("the ops channel").
A list of which the description names nothing is left whole (a rule may still need a team the text calls
"the DBAs"). A threshold is one of the numbers the description states (``structgen.stated_numbers``: "over
85 percent" 85, "5 GB" 5, "a thousand" 1000) that falls in its metric's range, or any in range when none
does; metrics and durations are said in words ("free memory", "half an hour") and stay the catalog's.

The grounded catalog goes into the grammar (``choices`` and the ``%override`` rules, as ``alerts_spec``
writes any catalog) and into the validator, so a name it left out is an issue with its span either way.
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from typing import Iterable

from structgen.stated_numbers import stated_numbers

from .catalog import AlertCatalog

__all__ = ["stated_names", "ground_catalog"]


def _mentioned(name: str, source: str, *, channel: bool = False) -> bool:
    """Whether ``source`` holds ``name`` as a whole word (case-insensitive; a channel's ``#`` optional)."""
    bare = name[1:] if channel and name.startswith("#") else name
    hash_ = "#?" if channel else ""
    return re.search(rf"(?<![\w#-]){hash_}{re.escape(bare)}(?![\w-])", source, re.IGNORECASE) is not None


def stated_names(names: Iterable[str], source: str, *, channel: bool = False) -> tuple[str, ...]:
    """The ``names`` that ``source`` states (see the module docstring), in their order."""
    return tuple(n for n in names if _mentioned(n, source, channel=channel))


def _narrowed(names: tuple[str, ...] | None, source: str, *, channel: bool = False) -> tuple[str, ...] | None:
    if names is None:
        return None
    stated = stated_names(names, source, channel=channel)
    return stated or names


def ground_catalog(catalog: AlertCatalog, source: str) -> AlertCatalog:
    """``catalog`` with its channels, teams and label values narrowed to those ``source`` states (a list the
    source names nothing of stays whole, and so do metrics and limits) and its thresholds to the numbers it
    states (``structgen.stated_numbers``), where they fall in a metric's range."""
    labels = None if catalog.labels is None else {
        key: _narrowed(values, source) for key, values in catalog.labels.items()}
    stated = tuple(dict.fromkeys(Decimal(str(n)) for n in stated_numbers(source)))
    return dataclasses.replace(catalog, labels=labels,
                               channels=_narrowed(catalog.channels, source, channel=True),
                               teams=_narrowed(catalog.teams, source), thresholds=stated or None)
