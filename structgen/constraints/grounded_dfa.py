"""Grounded strings in the token automaton: a string's body may only be text quoted from a source.

``structgen.grounding`` marks the free-text strings of a schema that must be quoted from a source text
(the request). ``placeholders`` writes each marked string as ``body_regex()``: a JSON string whose body
allows the private-use character ``MARK`` beside every character and after every backslash, with no length
bounds. No token holds the marker, so it changes nothing that can be written; but outlines-core indexes it
as one extra token (``mark_id``, past the vocabulary like ``token_dfa.SENTINEL``), so the states of the
token DFA inside a grounded body are exactly those with a marker transition (and the states a token leaves
in the middle of a UTF-8 character there).

``ground_transitions`` then takes the product of those states with the **quote automaton** of the source
(``quote_automaton``: its parts that start at a word, as JSON writes them): a state inside a body also
carries which part of the source the body's text is so far, and a token may only extend one. A token is
cut at its unescaped quotes: the bytes before its first quote continue the body its start state is in (and
close it, where the quote automaton lets a value end); every string it holds whole is checked as a complete
value when it is a grounded body; the bytes after its last quote start the body its end state is in. Which
quote opens a grounded body is read off the DFA itself: outlines-core also indexes, for every token with
more than one quote, the token's prefix up to each quote (``prefix_ids``), so the state after that quote is
known. Every value is exactly a part of the source, by construction, with no state per length or per
starting point.

What the product does not hold: ``minLength``/``maxLength`` of a grounded string (the validators check
them; ``grounding.Grounded.fallback`` is the last resort), and a body written with escapes the source's JSON
form does not use (``\\/``, ``\\u00e9``): those are not allowed there.
"""

from __future__ import annotations

import numpy as np

from .quote_automaton import QuoteAutomaton

MARK = "\uE001"  # private use: no token holds it
QUOTE, BACKSLASH = 0x22, 0x5C


def body_regex() -> str:
    """The regex of one grounded JSON string (quotes included): any body, marked (see the module doc)."""
    return rf'"(?:[^"\\\x00-\x1f{MARK}]|\\(?:["\\/bfnrt]|{MARK})|{MARK})*"'


def quotes(data: bytes, after_backslash: bool = False) -> list[int]:
    """Indices of the unescaped quotes in ``data`` (``after_backslash``: its first byte is escaped)."""
    out, esc = [], after_backslash
    for i, b in enumerate(data):
        if esc:
            esc = False
        elif b == BACKSLASH:
            esc = True
        elif b == QUOTE:
            out.append(i)
    return out


def _inside_characters(trans: dict, body: set, escape: set, tok: list, V: int) -> set:
    """States a token leaves in the middle of a body's UTF-8 character (``\\xc3`` of ``ø``): reached from
    the body by a token that does not close it, they have no marker of their own but are inside it."""
    found: set = set()
    todo = list(body)
    while todo:
        s = todo.pop()
        for t, s2 in trans.get(s, {}).items():
            if t < V and s2 not in body and s2 not in found and not quotes(tok[t], s in escape):
                found.add(s2)
                todo.append(s2)
    return found


def ground_transitions(trans: dict, initial: int, accepting, source: str, vocab, mark_id: int,
                       prefix_ids: dict):
    """``(trans, initial, accepting)`` of the product of a token DFA's grounded bodies with the quote
    automaton of ``source`` and its notes (``grounding.quotable``; module doc). ``trans`` maps state ->
    {token: state} as outlines-core gives it; ``prefix_ids`` maps ``(token, i)`` to the id of the token's
    bytes up to its quote at ``i``. Ids at or past the vocabulary are dropped from the result."""
    from ..grounding import quotable

    V = vocab.size
    body = {s for s, tr in trans.items() if mark_id in tr}
    accepting = set(accepting)
    if not body:
        return {s: {t: x for t, x in tr.items() if t < V} for s, tr in trans.items()}, initial, accepting
    qa = QuoteAutomaton.for_text(quotable(source))
    text = qa.data  # every part a body may hold is a substring of it: a cheap filter
    tok = vocab.token_bytes
    quote_ids = [i for i, b in enumerate(tok) if b == b'"']
    # a body state after a backslash reads a quote as part of the body
    escape = {s for s in body if any(trans[s].get(q) in body for q in quote_ids)}
    body |= _inside_characters(trans, body, escape, tok, V)

    def whole(part: bytes) -> bool:  # a complete grounded value
        a = int(qa.walk([part])[0, 0]) if part else 0
        return a >= 0 and bool(qa.final[a])

    def after(s: int, t: int, q: list[int]) -> tuple | None:
        """What follows the first quote of ``t`` from ``s``: the strings it holds whole must be grounded
        values where they are bodies; ``("p",)`` or ``("g", a)`` for its last part; None: not allowed."""
        s2 = trans[s][t]
        b = tok[t]
        for k in range(len(q) - 1):  # the part between quotes k and k+1 is a string when quote k opens one
            pid = prefix_ids.get((t, q[k]))
            x = trans[s].get(pid) if pid is not None else None
            if x is None:
                return None  # no way to tell: not allowed
            if x in body and not whole(b[q[k] + 1: q[k + 1]]):
                return None
        if s2 not in body:
            return ("p",)
        tail = b[q[-1] + 1:]
        a2 = int(qa.walk([tail])[0, 0]) if tail else 0
        return ("g", a2) if a2 >= 0 else None

    walks: dict[int, tuple] = {}  # body state -> (tokens, targets, [A, T] states after the token's body part)

    def moves(s: int):
        if s not in walks:
            toks, targets, parts, closing = [], [], [], []
            for t, s2 in trans[s].items():
                if t >= V:
                    continue
                q = quotes(tok[t], s in escape)
                part = tok[t][: q[0]] if q else tok[t]  # the bytes that continue this body
                if not q and s2 not in body or part not in text:
                    continue
                rest = after(s, t, q) if q else ("g",)
                if rest is None:
                    continue
                toks.append(t)
                targets.append(rest if q else ("g", None, s2))
                parts.append(part)
                closing.append(bool(q))
            w = qa.walk(parts)
            shut = np.array(closing, dtype=bool)
            if shut.any():  # a value ends only where the quote automaton lets it
                sub = w[:, shut]
                w[:, shut] = np.where((sub >= 0) & qa.final[np.maximum(sub, 0)], sub, -1)
            walks[s] = (toks, targets, w)
        return walks[s]

    ids: dict[tuple, int] = {}
    out: dict[int, dict[int, int]] = {}
    queue: list[tuple] = []

    def node(key: tuple) -> int:
        if key not in ids:
            ids[key] = len(ids)
            queue.append(key)
        return ids[key]

    start = node(("p", initial))
    while queue:
        key = queue.pop()
        edges: dict[int, int] = {}
        if key[0] == "p":
            s = key[1]
            for t, s2 in trans.get(s, {}).items():
                if t >= V:
                    continue
                q = quotes(tok[t])
                if not q:
                    if s2 not in body:
                        edges[t] = node(("p", s2))
                    continue
                rest = after(s, t, q)
                if rest is not None:
                    edges[t] = node(("p", s2)) if rest[0] == "p" else node(("g", s2, rest[1]))
        else:
            _, s, a = key
            toks, targets, w = moves(s)
            for j in np.flatnonzero(w[a] >= 0):
                rest, s2 = targets[j], trans[s][toks[j]]
                if rest[0] == "p":
                    edges[toks[j]] = node(("p", s2))
                else:
                    edges[toks[j]] = node(("g", s2, int(w[a, j]) if rest[1] is None else rest[1]))
        out[ids[key]] = edges
    finals = {ids[k] for k in ids if k[0] == "p" and k[1] in accepting}
    return out, start, finals
