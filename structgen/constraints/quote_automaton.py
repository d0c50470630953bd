"""What a grounded string may say: the parts of a text made of whole words, as an automaton over JSON bytes.

``structgen.grounding`` makes a free-text value a part of the request. Any substring would allow a path
without its first ``/`` (``"tmp/dump.sql"`` out of ``/tmp/dump.sql``), a value cut inside a word (``"LE:
2012 Škoda"`` out of ``SALE: 2012 Škoda``, ``"Le"`` out of ``Lead Designer``) or one with a space at its end,
all of which run 11 wrote. So a quoted part must **start at a word** (the text's first character, or one
after whitespace or after punctuation that is not a ``JOINERS`` character: ``/tmp`` starts at its ``/``,
never at ``tmp``; ``#A-82128`` at ``A``) and **end at a word's end** (after a character that is not
whitespace nor a comma, semicolon or opening bracket, where a letter or digit is not followed by another,
and not inside a joined word: ``2025-`` of ``2025-10-01``, ``7`` of ``7.5`` and ``117`` of ``117,000`` are no
parts). ``chair`` out of ``chairs`` is therefore not a quote: a singular is a conversion. What the text
puts in double quotes is one part: a part neither starts nor ends inside it (``quoted_interiors``). A part
is never empty: ``""`` says nothing the request says; it neither starts nor ends with a token of symbols only
(``//``, ``-``), its round and square brackets pair up (``balanced``: no ``"budget (copy"``, no
``"notes) that says"``), it holds a word other than a function word (``has_content``: no ``"I'm"``,
``"Can"``, ``"in"``), and its last word is no article, preposition, conjunction or possessive (``END_WORDS``:
no ``"Selling my"``, ``"pack for"``). ``is_quoted`` is that rule on text; ``QuoteAutomaton`` holds it
over the text as a JSON string body writes it (escaped, UTF-8), for ``grounded_dfa``'s product:

* the trie of the escaped suffixes that start at a word, minimised by merging nodes with the same
  finality and the same children (a suffix trie's tails are shared, so this stays a few times the text's
  length, not its square); ``final`` marks where a value may end (never at the empty value);
* for a text whose trie would pass ``MAX_TRIE`` nodes (a long document passed as ``ground=``), the suffix
  automaton of every substring instead (``SuffixAutomaton``, at most ``2n`` states, every state but the
  empty one final), and ``is_quoted`` is then plain ``in`` (of a non-empty value): ``word_rule`` says which.
"""

from __future__ import annotations

import functools
import json
import re

import numpy as np

JOINERS = "/\\.-_@"  # characters inside a word or a path: a part does not start right after one
OPEN_ENDS = ",;([{"  # a part does not end with one: "C3," of "C3, 117,000 km", "(" of "(2006)"
MAX_TRIE = 200_000  # trie nodes (bytes from every word start): past this, the suffix automaton instead


@functools.lru_cache(maxsize=256)
def word_starts(text: str) -> tuple[int, ...]:
    """The indices where a quoted part of ``text`` may start (module doc)."""
    inside = quoted_interiors(text)
    return tuple(k for k, c in enumerate(text)
                 if not c.isspace() and (k == 0 or _opens(text[k - 1])) and k not in inside
                 and _wordy(_token(text, k, k + 1)))


def _token(text: str, a: int, b: int) -> str:
    """The whitespace-delimited token of ``text`` around ``text[a:b]``."""
    while a > 0 and not text[a - 1].isspace():
        a -= 1
    while b < len(text) and not text[b].isspace():
        b += 1
    return text[a:b]


def _wordy(token: str) -> bool:
    """Whether a token holds a letter or a digit: a part neither starts nor ends with a token of symbols only
    (``//``, ``-``, ``::``: "Lunch with Ana //" is no part)."""
    return any(c.isalnum() for c in token)


_PAIRS = {ord(")"): ord("("), ord("]"): ord("[")}
#: words that name nothing on their own: a part holds at least one other word ("I'm", "Can", "in" are no
#: name, city or reason)
FUNCTION_WORDS = frozenset("""a an the and or but if so as at by for from in into of on onto to with without
    i i'm i'd i'll i've me my mine you you're your yours he him his she her hers it it's its we our ours us they
    them their theirs this that these those there here is are was were be been being am do does did have has
    had can could would should will shall may might must not what which who whom whose when where why how
    just very too also then than""".split())
_WORDS = re.compile(r"\w+(?:['’]\w+)*")


def has_content(value: str) -> bool:
    """Whether ``value`` holds a word that is not a ``FUNCTION_WORDS`` one (a word with a digit always is)."""
    return any(w.lower().replace("’", "'") not in FUNCTION_WORDS for w in _WORDS.findall(value))


#: words a part does not end with: articles, prepositions, conjunctions, possessives ("Thank you" may end)
END_WORDS = frozenset("a an the and or but of in on at to for with from by into onto my your our their his its".split())


def _last_word(text: str, j: int) -> str:
    """The word of ``text`` that ends just before ``j`` ('' when a letter or digit does not end there)."""
    m = re.search(r"\w+(?:['\u2019]\w+)*$", text[max(0, j - 40):j])
    return m.group(0) if m else ""


def _content_ends(text: str) -> list[float]:
    """Per index ``k`` of ``text``, the end of the first content word (``has_content``) that starts at or
    after ``k`` (infinity when none does): a part from ``k`` may end there or later."""
    out, nxt = [float("inf")] * (len(text) + 1), float("inf")
    words = [m for m in _WORDS.finditer(text) if has_content(m.group(0))]
    i = len(words) - 1
    for k in range(len(text), -1, -1):
        while i >= 0 and words[i].start() >= k:
            nxt = words[i].end()
            i -= 1
        out[k] = nxt
    return out


def balanced(value: bytes | str) -> bool | None:
    """Whether ``value``'s round and square brackets pair up (``"budget (copy"`` and ``"notes) that says"`` do
    not); ``None`` when a closing bracket comes first (no extension of the value can pair up)."""
    data = value.encode("utf-8") if isinstance(value, str) else value
    opened: list[int] = []
    if not all(_bracket(opened, b) for b in data):
        return None
    return not opened


def _bracket(opened: list[int], b: int) -> bool:
    """Track byte ``b`` in the stack ``opened`` of open brackets; False when it closes none that is open."""
    if b in (0x28, 0x5B):
        opened.append(b)
    elif b in _PAIRS:
        if not opened or opened[-1] != _PAIRS[b]:
            return False
        opened.pop()
    return True


_QUOTED = re.compile(r'"[^"\n]+"|\u201c[^\u201d\n]+\u201d')


@functools.lru_cache(maxsize=256)
def quoted_interiors(text: str) -> frozenset[int]:
    """The indices strictly inside a double-quoted span of ``text`` (its second character to its closing
    quote): a part neither starts nor ends there, so what ``text`` quotes is quoted whole (a subject is the
    whole ``"Schedule for the Zürich trip"``, not ``"Schedule"``)."""
    return frozenset(k for m in _QUOTED.finditer(text) for k in range(m.start() + 2, m.end() - 1))


def _opens(prev: str) -> bool:
    """Whether a part may start right after ``prev``: whitespace, or punctuation that is not a joiner."""
    return prev.isspace() or not (prev.isalnum() or prev in JOINERS)


def _ends(text: str, j: int) -> bool:
    """Whether a part may end just before index ``j``: after a character that is neither whitespace nor one
    of ``OPEN_ENDS``, at the end of a word (what follows is not a letter or digit), and not inside a joined
    word: not right after a joiner that a letter or digit follows (``2025-`` of ``2025-10-01``), nor right
    before a joiner, or a comma between digits, that joins it to more (``7`` of ``7.5``, ``ana`` of
    ``ana.okafor@...``, ``117`` of ``117,000``)."""
    prev = text[j - 1]
    if prev.isspace() or prev in OPEN_ENDS or j in quoted_interiors(text) or not _wordy(_token(text, j - 1, j)):
        return False
    if _last_word(text, j).lower() in END_WORDS:  # "Selling my", "pack for": the value goes on
        return False
    if j == len(text):
        return True
    nxt = text[j]
    if nxt.isalnum() and (prev.isalnum() or prev in JOINERS):
        return False
    joined = j + 1 < len(text) and text[j + 1].isalnum() and prev.isalnum()
    return not (joined and (nxt in JOINERS or (nxt == "," and prev.isdigit() and text[j + 1].isdigit())))


@functools.lru_cache(maxsize=256)
def word_rule(text: str) -> bool:
    """Whether ``text`` is held to the word-start rule: its trie (the JSON bytes from every word start) fits
    ``MAX_TRIE``."""
    data, offsets = escaped(text)
    return sum(len(data) - offsets[k] for k in word_starts(text)) <= MAX_TRIE


def is_quoted(value: str, text: str) -> bool:
    """Whether ``value`` is a part of ``text`` a grounded string may be (module doc)."""
    if not value:
        return False
    if not word_rule(text):
        return value in text
    return bool(balanced(value)) and has_content(value) and any(
        text.startswith(value, k) and _ends(text, k + len(value)) for k in word_starts(text))


def escaped(text: str) -> tuple[bytes, list[int]]:
    """``text`` as a JSON string body writes it (escaped, UTF-8) and the byte offset where each character
    starts."""
    out, offsets = bytearray(), []
    for c in text:
        offsets.append(len(out))
        out += json.dumps(c, ensure_ascii=False)[1:-1].encode("utf-8")
    return bytes(out), offsets


class QuoteAutomaton:
    """``table`` ``[A, 256]`` int32 (-1: nowhere) and ``final`` ``[A]`` bool over ``data``, the JSON bytes of
    the text; state 0 is the empty value (module doc)."""

    def __init__(self, table: np.ndarray, final: np.ndarray, data: bytes):
        self.table, self.final, self.data = table, final, data

    @property
    def n_states(self) -> int:
        return self.table.shape[0]

    @classmethod
    def for_text(cls, text: str) -> "QuoteAutomaton":
        data, offsets = escaped(text)
        if not word_rule(text):
            sa = SuffixAutomaton(data)
            final = np.ones(sa.n_states, dtype=bool)
            final[0] = False  # every substring but the empty one
            return cls(sa.table, final, data)
        ends, at = {}, {}  # byte index just past a character -> whether a value may end there, the index
        for k in range(len(offsets)):
            end = offsets[k + 1] if k + 1 < len(offsets) else len(data)
            ends[end], at[end] = _ends(text, k + 1), k + 1
        content = _content_ends(text)
        children: list[dict[int, int]] = [{}]
        final = [False]  # the empty value is no part
        for k in word_starts(text):
            node, opened = 0, []
            for p in range(offsets[k], len(data)):
                if not _bracket(opened, data[p]):
                    break  # a bracket closed before it opened: no longer value from here is a part
                nxt = children[node].get(data[p])
                if nxt is None:
                    nxt = len(children)
                    children[node][data[p]] = nxt
                    children.append({})
                    final.append(False)
                # any occurrence that ends at a word's end with its brackets paired
                final[nxt] = final[nxt] or (not opened and ends.get(p + 1, False) and at[p + 1] >= content[k])
                node = nxt
        return cls(*_minimised(children, final), data)

    def walk(self, parts: list[bytes]) -> np.ndarray:
        """``[A, len(parts)]``: the state after each byte string from every state (-1: not a continuation)."""
        return _walk(self.table, parts)


def _minimised(children: list[dict[int, int]], final: list[bool]) -> tuple[np.ndarray, np.ndarray]:
    """The trie's minimal automaton: nodes with the same finality and the same children are one state."""
    order, stack, seen = [], [0], set()
    while stack:  # children before parents
        node = stack.pop()
        if node in seen:
            order.append(node)
            continue
        seen.add(node)
        stack.append(node)
        stack.extend(children[node].values())
    canon: dict[int, int] = {}
    ids: dict[tuple, int] = {}
    rows: list[dict[int, int]] = []
    for node in order:
        if node in canon:
            continue
        sig = (final[node], tuple(sorted((b, canon[c]) for b, c in children[node].items())))
        if sig not in ids:
            ids[sig] = len(rows)
            rows.append(dict(sig[1]))
        canon[node] = ids[sig]
    root = canon[0]  # renumber so that the root is state 0
    perm = {root: 0, **{s: i + 1 for i, s in enumerate(s for s in range(len(rows)) if s != root)}}
    table = np.full((len(rows), 256), -1, dtype=np.int32)
    fin = np.zeros(len(rows), dtype=bool)
    for sig, s in ids.items():
        fin[perm[s]] = sig[0]
        for b, c in sig[1]:
            table[perm[s], b] = perm[c]
    return table, fin


def _walk(table: np.ndarray, parts: list[bytes]) -> np.ndarray:
    A = table.shape[0]
    if not parts:
        return np.zeros((A, 0), dtype=np.int32)
    width = max(len(p) for p in parts)
    pad = np.zeros((len(parts), max(1, width)), dtype=np.int64)
    lens = np.array([len(p) for p in parts])
    for i, p in enumerate(parts):
        pad[i, : len(p)] = np.frombuffer(p, dtype=np.uint8)
    cur = np.repeat(np.arange(A, dtype=np.int32)[:, None], len(parts), axis=1)
    grid = np.vstack([table, np.full((1, 256), -1, dtype=np.int32)])  # row -1: dead stays dead
    for k in range(width):
        step = grid[cur, pad[:, k][None, :]]
        cur = np.where((k < lens)[None, :], step, cur)
    return cur


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
        return _walk(self.table, parts)
