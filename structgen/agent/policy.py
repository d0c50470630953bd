"""Permission policy: allow, ask or deny each call, by tool and by argument pattern (TOML or Python).

A policy file::

    [defaults]                 # optional; these are the defaults
    destructive = "deny"       # tools marked destructive
    side_effects = "ask"       # tools marked side_effects
    other = "allow"            # every other tool

    [[rules]]
    tool = "delete_file"       # a tool name or glob ("*", "get_*"), or a list of them
    action = "allow"           # "allow" | "ask" | "deny"
    arguments = { path = "/tmp/sandbox/*" }      # optional; every listed argument must match
    reason = "the sandbox may be cleaned"        # optional; shown with the decision

An argument pattern is a glob (``fnmatch``, case-sensitive: ``*`` also crosses ``/``), ``{ regex = "..." }``
(``re.fullmatch``), ``{ glob = "..." }``, or a list of patterns (any may match). Keys may be dotted paths
into nested objects (``"to.address"``). Values are matched as text: strings as they are, other values as
compact JSON (``true``, ``3``, ``null``); arguments the call leaves out take the schema's default.

How a call is decided: every rule whose tool and arguments match votes; **deny wins, then ask, then
allow**; with no matching rule the defaults apply by the tool's flags. Matching errs on the safe side:

- an argument the call does not carry (and that has no default) never matches, so it neither allows nor
  denies;
- a list value (``to = ["a@x.io", "b@y.io"]``) matches an *allow* rule only if every element matches, and a
  *deny* or *ask* rule if any element does;
- a string with ``/`` is matched both as written and normalised (``/tmp/a/../../etc`` is ``/etc``): an allow
  rule needs both readings to match, a deny or ask rule either.

A call whose tool is unknown to the policy (a ``ToolCall`` without its ``Tool``) defaults to ``ask``.
Mistakes in a policy file raise :class:`~structgen.errors.PolicyError` naming the file, line and rule.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import PolicyError

__all__ = ["ACTIONS", "Decision", "Pattern", "Rule", "Policy"]

ACTIONS = ("allow", "ask", "deny")
_RANK = {"allow": 0, "ask": 1, "deny": 2}
_DEFAULTS = {"destructive": "deny", "side_effects": "ask", "other": "allow"}
_RULE_KEYS = ("tool", "action", "arguments", "reason")
_MISSING = object()


@dataclass(frozen=True)
class Decision:
    """The policy's answer for one call: ``action`` ("allow" | "ask" | "deny"), the deciding ``rule`` (its
    label, or ``"default:<flag>"``) and a human ``reason``."""

    action: str
    rule: str
    reason: str

    def to_dict(self) -> dict:
        return {"action": self.action, "rule": self.rule, "reason": self.reason}


@dataclass(frozen=True)
class Pattern:
    """One argument pattern: a glob or a regular expression over the value's text."""

    kind: str  # "glob" | "regex"
    pattern: str
    _regex: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        text = fnmatch.translate(self.pattern) if self.kind == "glob" else self.pattern
        object.__setattr__(self, "_regex", re.compile(text, re.DOTALL))

    def matches(self, text: str) -> bool:
        return self._regex.fullmatch(text) is not None

    def __str__(self) -> str:
        return self.pattern if self.kind == "glob" else f"regex:{self.pattern}"


@dataclass(frozen=True)
class Rule:
    """``action`` for calls of tools matching ``tool`` whose arguments match every pattern in
    ``arguments`` (a dict of key -> tuple of alternative :class:`Pattern`)."""

    action: str
    tool: tuple[str, ...] = ("*",)
    arguments: dict = field(default_factory=dict)
    reason: str = ""
    label: str = ""

    def matches(self, name: str, args: dict) -> bool:
        if not any(fnmatch.fnmatchcase(name, t) for t in self.tool):
            return False
        strict = self.action == "allow"  # allow: every reading must match; deny/ask: any reading
        for key, patterns in self.arguments.items():
            value = _lookup(args, key)
            if value is _MISSING:
                return False
            texts = _readings(value, strict)
            if texts is None:
                return False
            hits = [any(p.matches(t) for p in patterns) for t in texts]
            if not (all(hits) if strict else any(hits)):
                return False
        return True


class Policy:
    """Rules plus defaults; :meth:`decide` a call. ``Policy()`` has no rules: destructive tools are
    denied, tools with side effects ask, the rest are allowed."""

    def __init__(self, rules: Iterable[Rule | dict] = (), defaults: dict | None = None, *, source: str = "policy"):
        self.source = source
        self.defaults = _check_defaults(defaults or {}, source)
        self.rules: list[Rule] = [r if isinstance(r, Rule) else _rule(r, i, source, None)
                                  for i, r in enumerate(rules, 1)]

    @classmethod
    def from_toml(cls, path: str | Path) -> Policy:
        """Read a policy file (see the module docstring)."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise PolicyError(f"cannot read policy file {p}: {e.strerror or e}; pass the path of a TOML file "
                              "like examples/policy.toml") from None
        return cls.from_toml_text(text, source=str(p))

    @classmethod
    def from_toml_text(cls, text: str, *, source: str = "<policy>") -> Policy:
        import tomllib

        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise PolicyError(f"{source} is not valid TOML: {e}; fix the syntax there "
                              "(see examples/policy.toml)") from None
        unknown = set(doc) - {"defaults", "rules"}
        if unknown:
            key = sorted(unknown)[0]
            hint = difflib.get_close_matches(key, ["defaults", "rules"], n=1)
            raise PolicyError(f"{source} line {_line_of(text, key)}: unknown top-level key {key!r}; "
                              f"{'did you mean ' + repr(hint[0]) + '? ' if hint else ''}"
                              "a policy has [defaults] and [[rules]] tables")
        rules = doc.get("rules", [])
        if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
            raise PolicyError(f"{source}: 'rules' must be an array of tables, written [[rules]]")
        lines = _rule_lines(text)
        parsed = [_rule(r, i, source, lines[i - 1] if i <= len(lines) else None) for i, r in enumerate(rules, 1)]
        defaults = doc.get("defaults", {})
        if not isinstance(defaults, dict):
            raise PolicyError(f"{source} line {_line_of(text, 'defaults')}: 'defaults' must be a table [defaults]")
        return cls(parsed, defaults, source=source)

    def decide(self, call: Any, tool: Any = None) -> Decision:
        """The decision for ``call`` (a ``ToolCall``, or anything with ``name`` and ``arguments``)."""
        tool = tool if tool is not None else getattr(call, "tool", None)
        args = _effective_arguments(call.arguments, tool)
        votes = [r for r in self.rules if r.matches(call.name, args)]
        if votes:
            best = max(votes, key=lambda r: _RANK[r.action])  # first rule of the strongest action
            reason = best.reason or f"{best.action} by {best.label}"
            return Decision(best.action, best.label, reason)
        if tool is None:
            return Decision("ask", "default:unknown", f"no rule matches and the tool {call.name!r} is unknown")
        flag = "destructive" if tool.destructive else "side_effects" if tool.side_effects else "other"
        what = {"destructive": "is destructive", "side_effects": "has side effects", "other": "has no side effects"}
        return Decision(self.defaults[flag], f"default:{flag}",
                        f"no rule matches {call.name!r}; it {what[flag]} (default {self.defaults[flag]})")

    def __repr__(self) -> str:
        return f"Policy({len(self.rules)} rules, defaults={self.defaults}, source={self.source!r})"


# -- parsing ------------------------------------------------------------------------------------------------
def _check_defaults(defaults: dict, source: str) -> dict:
    out = dict(_DEFAULTS)
    for k, v in defaults.items():
        if k not in _DEFAULTS:
            raise PolicyError(f"{source}: unknown key {k!r} in [defaults]; use destructive, side_effects, other")
        if v not in ACTIONS:
            raise PolicyError(f"{source}: [defaults] {k} = {v!r} is not an action; use \"allow\", \"ask\" or \"deny\"")
        out[k] = v
    return out


def _rule(d: dict, index: int, source: str, line: int | None) -> Rule:
    where = f"{source}{f' line {line}' if line else ''} (rule {index})"
    label = f"rule {index}" + (f" (line {line})" if line else "")
    if not isinstance(d, dict):
        raise PolicyError(f"{where}: a rule is a table with tool, action, arguments and reason")
    unknown = [k for k in d if k not in _RULE_KEYS]
    if unknown:
        hint = difflib.get_close_matches(unknown[0], _RULE_KEYS, n=1)
        raise PolicyError(f"{where}: unknown key {unknown[0]!r}"
                          f"{'; did you mean ' + repr(hint[0]) + '?' if hint else ''} — a rule has "
                          f"{', '.join(_RULE_KEYS)}")
    action = d.get("action")
    if action not in ACTIONS:
        raise PolicyError(f"{where}: action {action!r} is not valid; write action = \"allow\", \"ask\" or \"deny\"")
    tools = d.get("tool", "*")
    tools = [tools] if isinstance(tools, str) else tools
    if not isinstance(tools, list) or not tools or not all(isinstance(t, str) and t for t in tools):
        raise PolicyError(f"{where}: tool must be a tool name, a glob like \"get_*\", or a list of them")
    reason = d.get("reason", "")
    if not isinstance(reason, str):
        raise PolicyError(f"{where}: reason must be a string")
    raw_args = d.get("arguments", {})
    if not isinstance(raw_args, dict):
        raise PolicyError(f"{where}: arguments must be a table, e.g. arguments = {{ path = \"/tmp/*\" }}")
    args = {}
    for key, spec in raw_args.items():
        args[key] = tuple(_patterns(spec, f"{where} argument {key!r}"))
    return Rule(action, tuple(tools), args, reason, label)


def _patterns(spec: Any, where: str) -> list[Pattern]:
    if isinstance(spec, str):
        return [Pattern("glob", spec)]
    if isinstance(spec, (bool, int, float)):
        return [Pattern("glob", fnmatch_escape(json.dumps(spec)))]
    if isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in ("glob", "regex"):
        kind, pat = next(iter(spec.items()))
        if not isinstance(pat, str):
            raise PolicyError(f"{where}: {kind} must be a string")
        if kind == "regex":
            try:
                re.compile(pat)
            except re.error as e:
                raise PolicyError(f"{where}: invalid regex {pat!r}: {e}; fix it (it is matched with "
                                  "re.fullmatch)") from None
        return [Pattern(kind, pat)]
    if isinstance(spec, list) and spec:
        return [p for s in spec for p in _patterns(s, where)]
    raise PolicyError(f"{where}: a pattern is a glob string, {{ regex = \"...\" }}, {{ glob = \"...\" }} or a "
                      f"non-empty list of these; got {spec!r:.80}")


def fnmatch_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _rule_lines(text: str) -> list[int]:
    """Line numbers (1-based) of the ``[[rules]]`` headers, in order."""
    return [i for i, line in enumerate(text.splitlines(), 1) if re.match(r"\s*\[\[\s*rules\s*\]\]", line)]


def _line_of(text: str, key: str) -> int | str:
    for i, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*(\[+\s*)?{re.escape(key)}\b", line):
            return i
    return "?"


# -- matching -----------------------------------------------------------------------------------------------
def _effective_arguments(arguments: Any, tool: Any) -> dict:
    """The call's arguments with the schema's top-level defaults filled in for those left out."""
    args = dict(arguments) if isinstance(arguments, dict) else {}
    props = getattr(tool, "schema", {}).get("properties", {}) if tool is not None else {}
    for k, s in props.items():
        if k not in args and isinstance(s, dict) and "default" in s:
            args[k] = s["default"]
    return args


def _lookup(args: dict, key: str) -> Any:
    if key in args:
        return args[key]
    node: Any = args
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _readings(value: Any, strict: bool) -> list[str] | None:
    """The texts a value is matched as (see the module docstring); None when there is nothing to match."""
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items:
        text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        out.append(text)
        if isinstance(v, str) and ("/" in v or "\\" in v):
            norm = posixpath.normpath(v.replace("\\", "/"))
            if norm != text:
                out.append(norm)
    if not out:
        return [] if strict else None  # an empty list: nothing to forbid, nothing to deny
    return out
