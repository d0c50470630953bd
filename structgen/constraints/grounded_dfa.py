"""Grounded strings in the token automaton: a string's body may only be text quoted from a source.

``structgen.grounding`` marks the free-text strings of a schema that must be quoted from a source text
(the request). ``placeholders`` writes each marked string as ``BODY``: a JSON string whose body allows the
private-use character ``MARK`` beside every character and after every backslash, with no length bounds.
No token holds the marker, so it changes nothing that can be written; but outlines-core indexes it as one
extra token (``MARK_ID`` past the vocabulary, as ``token_dfa.SENTINEL``), so the states of the token DFA
inside a grounded body are exactly those with a marker transition.

``ground_transitions`` then takes the product of those states with the **suffix automaton** of the source
as the model writes it (JSON-escaped, UTF-8): a state inside a body also carries which substring of the
source the body's text is so far, and a token may only extend an occurrence. A token that opens a body
walks the bytes after its opening quote from the automaton's root; one inside walks all its bytes; one
that closes walks the bytes before its closing quote (any substring may end anywhere). The suffix
automaton of ``n`` bytes has at most ``2n`` states, so a grounded field adds at most ``2n`` states per
body state of the DFA (two: after a character, after a backslash): every value is exactly a substring of
the source, by construction, with no state per length or per starting point.

What the product does not hold: ``minLength``/``maxLength`` of a grounded string (the validators check
them and repair redoes the span), and a body written with escapes the source's JSON form does not use
(``\\/``, ``\\u00e9``): those are simply not allowed there.
"""

from __future__ import annotations

import json

import numpy as np

MARK = "\uE001"  # private use: no token holds it
QUOTE, BACKSLASH = 0x22, 0x5C


def body_regex() -> str:
    """The regex of one grounded JSON string (quotes included): any body, marked (see the module doc)."""
    return rf'"(?:[^"\\\x00-\x1f{MARK}]|\\(?:["\\/bfnrt]|{MARK})|{MARK})*"'


class SuffixAutomaton:
    """The minimal automaton of every substring of ``data`` (bytes); ``table`` is ``[A, 256]`` int32 with -1
    where a byte leads nowhere. State 0 is the empty substring."""

    def __init__(self, data: bytes):
        nxt: list[dict[int, int]] = [{}]
        link, length = [-1], [0]
        last = 0
        for b in data:
            cur = len(nxt)
            nxt.append({})
            link.append(-1)
            length.append(length[last] + 1)
            p = last
            while p != -1 and b not in nxt[p]:
                nxt[p][b] = cur
                p = link[p]
            if p == -1:
                link[cur] = 0
            else:
                q = nxt[p][b]
                if length[p] + 1 == length[q]:
                    link[cur] = q
                else:
                    clone = len(nxt)
                    nxt.append(dict(nxt[q]))
                    link.append(link[q])
                    length.append(length[p] + 1)
                    while p != -1 and nxt[p].get(b) == q:
                        nxt[p][b] = clone
                        p = link[p]
                    link[q] = link[cur] = clone
            last = cur
        self.table = np.full((len(nxt), 256), -1, dtype=np.int32)
        for s, edges in enumerate(nxt):
            if edges:
                self.table[s, list(edges)] = list(edges.values())

    @property
    def n_states(self) -> int:
        return self.table.shape[0]

    def walk(self, parts: list[bytes]) -> np.ndarray:
        """``[A, len(parts)]``: the state after each byte string from every state (-1: not a continuation)."""
        A = self.n_states
        if not parts:
            return np.zeros((A, 0), dtype=np.int32)
        width = max(len(p) for p in parts)
        pad = np.zeros((len(parts), max(1, width)), dtype=np.int64)
        lens = np.array([len(p) for p in parts])
        for i, p in enumerate(parts):
            pad[i, : len(p)] = np.frombuffer(p, dtype=np.uint8)
        cur = np.repeat(np.arange(A, dtype=np.int32)[:, None], len(parts), axis=1)
        grid = np.vstack([self.table, np.full((1, 256), -1, dtype=np.int32)])  # row -1: dead stays dead
        for k in range(width):
            step = grid[cur, pad[:, k][None, :]]
            cur = np.where((k < lens)[None, :], step, cur)
        return cur


def source_bytes(source: str) -> bytes:
    """The source as a JSON string body writes it (escaped, UTF-8, no surrounding quotes)."""
    return json.dumps(source, ensure_ascii=False)[1:-1].encode("utf-8")


def _close_at(data: bytes, escaped: bool) -> int | None:
    """Index of the first unescaped quote in ``data`` (``escaped``: the first byte follows a backslash)."""
    for i, b in enumerate(data):
        if escaped:
            escaped = False
        elif b == BACKSLASH:
            escaped = True
        elif b == QUOTE:
            return i
    return None


def _open_at(data: bytes) -> int | None:
    """Index of the quote that opens a body at the end of ``data``: the last quote with an even run of
    backslashes before it (any quote after it is escaped, so inside the body)."""
    i = data.rfind(b'"')
    while i >= 0:
        run = len(data[:i]) - len(data[:i].rstrip(b"\\"))
        if run % 2 == 0:
            return i
        i = data.rfind(b'"', 0, i)
    return None


def _inside_characters(trans: dict, body: set, escape: set, tok: list, V: int) -> set:
    """States a token leaves in the middle of a body's UTF-8 character (``\\xc3`` of ``ø``): reached from
    the body by a token that does not close it, they have no marker of their own but are inside it."""
    found: set = set()
    todo = list(body)
    while todo:
        s = todo.pop()
        for t, s2 in trans.get(s, {}).items():
            if t < V and s2 not in body and s2 not in found and _close_at(tok[t], s in escape) is None:
                found.add(s2)
                todo.append(s2)
    return found


def ground_transitions(trans: dict, initial: int, accepting, source: str, vocab, mark_id: int):
    """``(trans, initial, accepting)`` of the product of a token DFA's grounded bodies with the suffix
    automaton of ``source`` with its notes (``grounding.quotable``; module doc). ``trans`` maps state -> {token: state} as outlines-core gives it;
    ids at or past the vocabulary (marker, sentinel) are dropped from the result."""
    V = vocab.size
    body = {s for s, tr in trans.items() if mark_id in tr}
    accepting = set(accepting)
    if not body:
        return {s: {t: x for t, x in tr.items() if t < V} for s, tr in trans.items()}, initial, accepting
    from ..grounding import quotable

    text = source_bytes(quotable(source))
    sa = SuffixAutomaton(text)
    tok = vocab.token_bytes
    quote_ids = [i for i, b in enumerate(tok) if b == b'"']
    # a body state after a backslash reads a quote as part of the body
    escape = {s for s in body if any(trans[s].get(q) in body for q in quote_ids)}
    body |= _inside_characters(trans, body, escape, tok, V)

    walks: dict[int, tuple] = {}  # body state -> (tokens, targets, [A, T] walk result)

    def moves(s: int):
        if s not in walks:
            toks, targets, parts = [], [], []
            for t, s2 in trans[s].items():
                if t >= V:
                    continue
                b = tok[t]
                if s2 in body:
                    part = b
                else:
                    end = _close_at(b, s in escape)
                    if end is None:
                        continue
                    part = b[:end]
                if part in text:
                    toks.append(t)
                    targets.append(s2)
                    parts.append(part)
            walks[s] = (toks, targets, sa.walk(parts))
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
                if s2 not in body:
                    edges[t] = node(("p", s2))
                    continue
                at = _open_at(tok[t])
                if at is None:
                    continue
                part = tok[t][at + 1:]
                if part not in text:
                    continue
                a2 = int(sa.walk([part])[0, 0]) if part else 0
                if a2 >= 0:
                    edges[t] = node(("g", s2, a2))
        else:
            _, s, a = key
            toks, targets, w = moves(s)
            for j in np.flatnonzero(w[a] >= 0):
                s2 = targets[j]
                edges[toks[j]] = node(("g", s2, int(w[a, j]))) if s2 in body else node(("p", s2))
        out[ids[key]] = edges
    finals = {ids[k] for k in ids if k[0] == "p" and k[1] in accepting}
    return out, start, finals
