"""Lark → llguidance: re-emitting a Lark grammar in llguidance's Lark dialect, and regex rewriting.

This module owns ``lark_to_llguidance`` (a grammar loaded by Lark itself, re-emitted as plain BNF),
``ascii_classes`` (``\\d``/``\\w`` spelled as their ASCII classes) and the pattern helpers they use. The
grammar engine (``constraints.grammar``) falls back to it when llguidance rejects a Lark grammar as is.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

from ..errors import CompileError, GrammarSyntaxError

__all__ = ["ascii_classes", "lark_to_llguidance"]


def lark_to_llguidance(text: str, start: str = "start", import_paths: Sequence[str] = ()) -> str:
    """Load a Lark grammar with Lark itself and re-emit it as plain BNF in llguidance's Lark dialect.

    Templates, imports (``common`` and any other), ``%override``/``%extend``, aliases and ``?``/``!``
    rule markers are resolved by Lark; rules become ``r_*`` rules, terminals ``T_*`` terminals whose
    patterns are Lark's compiled regexes (strings stay string literals), ``%ignore`` is kept and
    priorities are dropped. Raises ``CompileError`` for terminals without a pattern (``%declare``).
    """
    import lark

    try:
        parser = lark.Lark(text, start=start, parser="earley", import_paths=list(import_paths))
    except lark.exceptions.LarkError as e:
        raise GrammarSyntaxError(f"Lark grammar is invalid: {str(e).strip()}") from None
    rule_names: dict[str, str] = {}
    term_names: dict[str, str] = {}

    def rname(name: str) -> str:
        if name not in rule_names:
            base = "r_" + re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_")
            rule_names[name] = f"{base}_{len(rule_names)}"
        return rule_names[name]

    def tname(name: str) -> str:
        if name not in term_names:
            base = "T_" + re.sub(r"[^A-Z0-9_]", "_", name.upper()).strip("_")
            term_names[name] = f"{base}_{len(term_names)}"
        return term_names[name]

    defined = {t.name: t for t in parser.terminals}
    alts: dict[str, list[str]] = {}
    order: list[str] = []
    for rule in parser.rules:
        o = rule.origin.name
        if o not in alts:
            alts[o] = []
            order.append(o)
        syms = []
        for s in rule.expansion:
            if s.is_term:
                if s.name not in defined:
                    raise CompileError(
                        f"terminal {s.name} has no pattern (declared with %declare, i.e. produced by a "
                        "postlexer such as an indenter); the grammar engine needs every terminal defined by "
                        "a string or regex"
                    )
                syms.append(tname(s.name))
            else:
                syms.append(rname(s.name))
        alts[o].append(" ".join(syms))
    if start not in alts:
        raise CompileError(f"the start rule {start!r} has no productions")
    for name in parser.ignore_tokens:
        if name in defined:
            tname(name)
    lines = [f"start: {rname(start)}"]
    for o in order:
        a = sorted(set(alts[o]), key=lambda s: (s != "", alts[o].index(s)))
        lines.append(f"{rname(o)}: " + " | ".join(a))
    for name, tn in list(term_names.items()):
        lines.append(f"{tn}: {_emit_pattern(defined[name].pattern)}")
    for name in parser.ignore_tokens:
        if name in defined:
            lines.append(f"%ignore {tname(name)}")
    return "\n".join(lines) + "\n"


def _emit_pattern(p) -> str:
    from lark.lexer import PatternStr

    if isinstance(p, PatternStr):
        flags = "i" if "i" in p.flags else ""
        return json.dumps(p.value, ensure_ascii=False) + flags
    return "/" + _escape_regex(ascii_classes(p.to_regexp())) + "/"


_UNICODE_CLASS = re.compile(r"(?<!\\)(?:\\\\)*\\[dw]")
_CLASS_ASCII = {"d": "0-9", "w": "0-9A-Za-z_"}


def ascii_classes(rx: str) -> str:
    r"""Spell ``\d`` and ``\w`` as their ASCII classes (outside brackets and in non-negated ones).

    llguidance's regexes are Rust's, whose ``\d``/``\w`` follow a newer Unicode than Python's ``re``
    (and ``\w`` takes combining marks Python's does not): an output must also match where it is
    validated, so the engine generates the ASCII subset. In a negated class (``[^\w]``) they are left
    alone, as narrowing them there would widen the class. JSON Schema ``pattern`` is not touched:
    llguidance already reads it as ECMA-262, where these classes are ASCII."""
    out: list[str] = []
    i, in_class, negated = 0, False, False
    while i < len(rx):
        ch = rx[i]
        if ch == "\\" and i + 1 < len(rx):
            cls = _CLASS_ASCII.get(rx[i + 1])
            if cls is None or negated:
                out.append(rx[i:i + 2])
            else:
                out.append(cls if in_class else f"[{cls}]")
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class, negated = True, rx.startswith("^", i + 1)
        elif ch == "]" and in_class:
            in_class = negated = False
        out.append(ch)
        i += 1
    return "".join(out)


def _escape_regex(rx: str) -> str:
    """Make a Python regex safe inside llguidance's ``/.../``: escape bare ``/`` and control characters."""
    out, esc = [], False
    for ch in rx:
        if esc:
            out.append(ch)
            esc = False
            continue
        if ch == "\\":
            out.append(ch)
            esc = True
        elif ch == "/":
            out.append("\\/")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)

