"""Byte-level tables of a vocabulary for the grammar engine's completion search.

This module owns ``_VocabIndex`` (token ids by bytes: fewest-token spellings of forced bytes, tokens
extending a prefix), the probe tokens the endgame search tries (``_probe_ids``), the tokens holding a
closing bracket and the byte class of each single-byte probe. Every table is built once per vocabulary
and cached by ``TokenVocab.key``.
"""

from __future__ import annotations

import bisect

import numpy as np

from .vocab import TokenVocab


class _VocabIndex:
    """The byte strings of a vocabulary's ordinary tokens: id by bytes, sorted list, longest length."""

    def __init__(self, vocab: TokenVocab):
        self.ids: dict[bytes, int] = {}
        for i, (b, sp) in enumerate(zip(vocab.token_bytes, vocab.special)):
            if b and not sp:
                self.ids.setdefault(b, i)
        self.ordered = sorted(self.ids)
        self.maxlen = max((len(b) for b in self.ids), default=1)
        self._spell: dict[bytes, list] = {}

    def cover(self, data: bytes) -> tuple[list[int], list[int]]:
        """Shortest tokenizations of every prefix of ``data``: (token counts, where the last token starts);
        a count of ``len(data) + 1`` means no tokenization."""
        n = len(data)
        inf = n + 1
        dp, back = [inf] * (n + 1), [-1] * (n + 1)
        dp[0] = 0
        for i in range(n):
            if dp[i] == inf:
                continue
            for L in range(1, min(self.maxlen, n - i) + 1):
                if dp[i] + 1 < dp[i + L] and data[i:i + L] in self.ids:
                    dp[i + L], back[i + L] = dp[i] + 1, i
        return dp, back

    def fewest_tokens(self, data: bytes) -> list[int] | None:
        """The token ids of a shortest tokenization of ``data`` (None when it has none)."""
        dp, back = self.cover(data)
        if dp[-1] > len(data):
            return None
        out, j = [], len(data)
        while j > 0:
            i = back[j]
            out.append(self.ids[data[i:j]])
            j = i
        return out[::-1]

    def extends(self, data: bytes) -> bool:
        """Whether some token is strictly longer than ``data`` and starts with it."""
        k = bisect.bisect_right(self.ordered, data)
        return k < len(self.ordered) and self.ordered[k].startswith(data)

    def longer(self, data: bytes, limit: int = 256) -> list[int]:
        """Ids of tokens strictly longer than ``data`` that start with it, those closing the most
        brackets first, then the longest (the first ``limit`` in byte order are looked at)."""
        k = bisect.bisect_right(self.ordered, data)
        out = []
        while k < len(self.ordered) and len(out) < limit and self.ordered[k].startswith(data):
            out.append(self.ordered[k])
            k += 1
        return [self.ids[b] for b in sorted(out, key=lambda b: (-sum(c in _CLOSING for c in b), -len(b)))]

    def spellings(self, forced: bytes) -> list[tuple[list[int], list[int] | None]]:
        """Ways to spell bytes the grammar forces, fewest tokens first: (head, tails) where ``head``
        spells a prefix ``forced[:i]`` in the fewest tokens and ``tails`` are the tokens that start with
        the rest and run past it (None: ``head`` spells all of ``forced``). Cached."""
        hit = self._spell.get(forced)
        if hit is not None:
            return hit
        dp, back = self.cover(forced)
        n = len(forced)
        opts: list[tuple[int, int]] = []
        if dp[n] <= n:
            opts.append((dp[n], n))
        for i in range(n):
            if dp[i] <= n and n - i < self.maxlen and self.extends(forced[i:]):
                opts.append((dp[i] + 1, i))
        opts.sort(key=lambda o: (o[0], o[1] == n, -o[1]))  # fewest tokens; at a tie, a token that runs on

        def head(i: int) -> list[int]:
            ids, j = [], i
            while j > 0:
                ids.append(self.ids[forced[back[j]:j]])
                j = back[j]
            return ids[::-1]

        hit = [(head(i), None if i == n else self.longer(forced[i:])) for _, i in opts[:3]]
        if len(self._spell) > 4096:
            self._spell.clear()
        self._spell[forced] = hit
        return hit


_INDEXES: dict[str, _VocabIndex] = {}


def _vocab_index(vocab: TokenVocab) -> _VocabIndex:
    hit = _INDEXES.get(vocab.key)
    if hit is None:
        hit = _INDEXES[vocab.key] = _VocabIndex(vocab)
    return hit


_PROBES: dict[str, np.ndarray] = {}
_CLOSING = set(b")]}>")
_PUNCT = set(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ")
# single-byte probes in order: the closing bytes (the first six), punctuation, then digits and letters
_PROBE_BYTES = (b"\")]}>'0a1x_;,.:-=+*/!?|&#@$%^~`<[{(\\ \n\t"
                + bytes(range(0x62, 0x7B)) + bytes(range(0x41, 0x5B)) + bytes(range(0x32, 0x3A)))


_CLOSES: dict[str, np.ndarray] = {}


def _closing_tokens(vocab: TokenVocab) -> np.ndarray:
    """bool[V]: tokens that hold a closing bracket (``)`` ``]`` ``}`` ``>``)."""
    hit = _CLOSES.get(vocab.key)
    if hit is None:
        hit = np.array([any(c in _CLOSING for c in b) for b in vocab.token_bytes], dtype=bool)
        _CLOSES[vocab.key] = hit
    return hit


def _byte_classes(vocab: TokenVocab) -> dict[int, int]:
    """Class of each single-byte probe token: 1 digit, 2 lowercase, 3 uppercase letter, 0 other."""
    out: dict[int, int] = {}
    for t in _probe_ids(vocab).tolist():
        b = vocab.token_bytes[t]
        c = b[0] if len(b) == 1 else -1
        out[t] = 1 if 48 <= c <= 57 else 2 if 97 <= c <= 122 else 3 if 65 <= c <= 90 else 0
    return out


def _probe_ids(vocab: TokenVocab) -> np.ndarray:
    """Token ids the endgame search tries, in order: the single closing bytes (``"`` ``)`` ``]`` ``}``
    ``>`` ``'``); 24 tokens made only of punctuation and spaces, those closing the most brackets first,
    then the longest (``"}]}``, then ``","``); the other single bytes (punctuation, digits, letters);
    40 more punctuation tokens; a few UTF-8 continuation bytes (to finish a character a token left
    half-written)."""
    hit = _PROBES.get(vocab.key)
    if hit is None:
        multi, singles, continuations = [], {}, []
        for i, (b, sp) in enumerate(zip(vocab.token_bytes, vocab.special)):
            if sp or not b:
                continue
            if 1 < len(b) <= 8 and all(c in _PUNCT for c in b):
                multi.append((-sum(c in _CLOSING for c in b), -len(b), i))
            elif len(b) == 1 and b[0] in _PROBE_BYTES and b[0] not in singles:
                singles[b[0]] = i
            elif len(b) == 1 and b[0] in (0x80, 0x90, 0xA0, 0xBF):
                continuations.append(i)
        multi = [i for *_, i in sorted(multi)[:64]]
        order = [singles[c] for c in _PROBE_BYTES[:6] if c in singles] + multi[:24]
        order += [singles[c] for c in _PROBE_BYTES[6:] if c in singles] + multi[24:] + continuations
        hit = np.asarray(list(dict.fromkeys(order)), dtype=np.int64)
        _PROBES[vocab.key] = hit
    return hit
