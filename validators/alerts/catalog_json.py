"""Reading an alert catalog from its JSON form: every key and name checked, a ``SpecError`` naming what is
wrong and how to write it. ``AlertCatalog.from_dict`` and ``AlertCatalog.load`` call :func:`read_catalog`."""

from __future__ import annotations

import functools
import re
from decimal import Decimal
from typing import Any, Mapping

from structgen.errors import SpecError

from .catalog import _DEFAULT_LIMIT, MetricInfo
from .rules import RESERVED, Duration, _lark

__all__ = ["read_catalog"]


@functools.lru_cache(maxsize=1)
def _terminal_res() -> dict[str, re.Pattern]:
    p = _lark()
    return {name: re.compile(p.get_terminal(name).pattern.to_regexp())
            for name in ("METRIC", "LABEL", "VALUE", "CHANNEL", "TEAM")}


_CATALOG_KEYS = ("metrics", "labels", "channels", "teams", "limits")
_METRIC_KEYS = ("unit", "min", "max", "description", "aliases")
_LIMIT_KEYS = ("max_window", "max_hold")


def read_catalog(data: Mapping, where: str) -> dict[str, Any]:
    """The ``AlertCatalog`` fields of a catalog's JSON form ``data`` (``where`` names it in errors)."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{where}: expected a JSON object with {', '.join(_CATALOG_KEYS)}, "
                        f"got {type(data).__name__}")
    _no_unknown(data, _CATALOG_KEYS, where)
    res = _terminal_res()
    metrics = _metrics(data.get("metrics"), where, res["METRIC"])
    labels = None
    if data.get("labels") is not None:
        raw = data["labels"]
        if not isinstance(raw, Mapping) or not raw:
            raise SpecError(f"{where}: labels must be a non-empty object mapping each label key to its "
                            "values (a list) or null (any value); leave labels out to allow any key")
        labels = {}
        for key, values in raw.items():
            _check_name(key, res["LABEL"], f"{where}: label key",
                        "label keys are a lowercase letter then lowercase letters, digits or _ (at most 24 in all)")
            if key in RESERVED:
                raise SpecError(f"{where}: label key {key!r} is a keyword of the rule language; rename it")
            labels[key] = None if values is None else _names(values, res["VALUE"], f"{where}: labels[{key!r}]")
    channels = _names(data["channels"], res["CHANNEL"], f"{where}: channels") \
        if data.get("channels") is not None else None
    teams = _names(data["teams"], res["TEAM"], f"{where}: teams") if data.get("teams") is not None else None
    limits = data.get("limits") or {}
    if not isinstance(limits, Mapping):
        raise SpecError(f"{where}: limits must be an object such as "
                        '{"max_window": "1d", "max_hold": "7d"}')
    _no_unknown(limits, _LIMIT_KEYS, f"{where}: limits")
    lim = {k: _limit(limits.get(k, _DEFAULT_LIMIT), f"{where}: limits.{k}") for k in _LIMIT_KEYS}
    return {"metrics": metrics, "labels": labels, "channels": channels, "teams": teams, **lim}


def _no_unknown(data: Mapping, allowed: tuple[str, ...], where: str) -> None:
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(allowed)}")


def _check_name(name: Any, rx: re.Pattern, what: str, rule: str) -> None:
    if not isinstance(name, str) or not rx.fullmatch(name):
        raise SpecError(f"{what} {name!r} cannot be written in an alert rule: {rule}")


_TEXT_RULE = ("quoted names are printable ASCII without '\"' or '\\', words of 1-24 characters separated "
              "by single spaces, at most 4 words")


def _names(values: Any, rx: re.Pattern, where: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
        raise SpecError(f"{where}: expected a non-empty list of names, got {values!r}; leave it out (or null) "
                        "to allow any")
    for v in values:
        _check_name(v, rx, f"{where}: name", _TEXT_RULE)
    return tuple(dict.fromkeys(values))


def _number(v: Any, where: str) -> Decimal | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise SpecError(f"{where}: expected a finite number or null, got {v!r}")
    return Decimal(str(v))


def _metrics(raw: Any, where: str, rx: re.Pattern) -> dict[str, MetricInfo]:
    if isinstance(raw, (list, tuple)):
        raw = {name: None for name in raw}
    if not isinstance(raw, Mapping) or not raw:
        raise SpecError(f"{where}: metrics must be a non-empty object mapping each metric name to "
                        "{\"unit\", \"min\", \"max\", \"description\", \"aliases\"} (each optional), "
                        "or a list of names")
    out = {}
    for name, info in raw.items():
        _check_name(name, rx, f"{where}: metric name",
                    "names are lowercase words (letters, digits, _) joined by dots, e.g. cpu.usage")
        info = {} if info is None else info
        if not isinstance(info, Mapping):
            raise SpecError(f"{where}: metrics[{name!r}] must be an object with unit/min/max/description/aliases "
                            "or null")
        _no_unknown(info, _METRIC_KEYS, f"{where}: metrics[{name!r}]")
        unit = info.get("unit")
        if unit is not None and (not isinstance(unit, str) or not unit):
            raise SpecError(f"{where}: metrics[{name!r}].unit must be a non-empty string such as \"%\" or \"ms\"")
        lo = _number(info.get("min"), f"{where}: metrics[{name!r}].min")
        hi = _number(info.get("max"), f"{where}: metrics[{name!r}].max")
        if lo is not None and hi is not None and lo > hi:
            raise SpecError(f"{where}: metrics[{name!r}] has min {lo} above max {hi}; swap them")
        desc = info.get("description", "")
        if not isinstance(desc, str):
            raise SpecError(f"{where}: metrics[{name!r}].description must be a string")
        aliases = info.get("aliases", [])
        if isinstance(aliases, str) or not isinstance(aliases, (list, tuple)) or \
                not all(isinstance(a, str) and a.strip() for a in aliases):
            raise SpecError(f"{where}: metrics[{name!r}].aliases must be a list of the words people call the "
                            f"metric by, e.g. [\"CPU load\", \"CPU usage\"]")
        out[name] = MetricInfo(name, unit, lo, hi, desc, tuple(aliases))
    return out


def _limit(v: Any, where: str) -> int:
    if isinstance(v, str):
        try:
            seconds = Duration.parse(v).seconds
        except SpecError as e:
            raise SpecError(f"{where}: {e}") from None
    elif isinstance(v, int) and not isinstance(v, bool):
        seconds = v
    else:
        raise SpecError(f"{where}: expected a duration such as \"7d\" or a number of seconds, got {v!r}")
    if seconds <= 0:
        raise SpecError(f"{where}: must be longer than zero, got {v!r}")
    return seconds
