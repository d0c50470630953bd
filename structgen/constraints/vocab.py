"""The tokenizer as the constraint layer sees it: bytes of every token id, and the special ids.

``TokenVocab.of(tokenizer, size)`` is built once per (tokenizer, logits width) and cached. It wraps any
Hugging Face *fast* tokenizer (``PreTrainedTokenizerFast``) or a raw ``tokenizers.Tokenizer``. Token bytes
come from llguidance's tokenizer bridge, so both engines see exactly the same vocabulary.
"""

from __future__ import annotations

import hashlib
import threading
from functools import cached_property

import numpy as np
import torch

from ..errors import CompileError

_CACHE: dict[tuple[int, int], "TokenVocab"] = {}
_LOCK = threading.Lock()


def _as_fast_tokenizer(tok):
    from transformers import PreTrainedTokenizerFast

    if isinstance(tok, PreTrainedTokenizerFast):
        return tok
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover
        Tokenizer = None
    if Tokenizer is not None and isinstance(tok, Tokenizer):
        return PreTrainedTokenizerFast(tokenizer_object=tok)
    if hasattr(tok, "backend_tokenizer"):
        return tok
    raise CompileError(
        f"structgen needs a Hugging Face fast tokenizer, got {type(tok).__name__}; "
        "load it with AutoTokenizer.from_pretrained(path, use_fast=True)"
    )


class TokenVocab:
    """Token bytes, special ids and a stable hash for one tokenizer at one logits width."""

    def __init__(self, tokenizer, size: int | None = None, *, eos_id: int | None = None,
                 mask_id: int | None = None):
        self.tokenizer = _as_fast_tokenizer(tokenizer)
        tk = self.tokenizer
        n_tok = len(tk)
        self.size = int(size or n_tok)
        if self.size < n_tok:
            raise CompileError(f"logits width {self.size} is smaller than the tokenizer's {n_tok} tokens")
        self.eos_id = eos_id if eos_id is not None else _first_id(tk, "eos_token_id", "sep_token_id", "pad_token_id")
        if self.eos_id is None:
            raise CompileError(
                "the tokenizer has no EOS (or SEP/PAD) token to fill the canvas tail; "
                "add one, e.g. tokenizer.add_special_tokens({'eos_token': '<|eos|>'})"
            )
        self.mask_id = mask_id if mask_id is not None else getattr(tk, "mask_token_id", None)
        self.pad_id = getattr(tk, "pad_token_id", None)
        ll = self.ll
        special = np.zeros(self.size, dtype=bool)
        token_bytes: list[bytes] = []
        for i in range(self.size):
            if i >= n_tok or ll.is_special_token(i):
                special[i] = True
                token_bytes.append(b"")
                continue
            b = ll.decode_bytes([i])
            token_bytes.append(b)
            if not b:
                special[i] = True
        for sid in getattr(tk, "all_special_ids", []) or []:
            if 0 <= sid < self.size:
                special[sid] = True
                token_bytes[sid] = b""
        for sid in (self.eos_id, self.mask_id, self.pad_id):
            if sid is not None:
                special[sid] = True
                token_bytes[sid] = b""
        self.token_bytes = token_bytes
        self.special = special
        h = hashlib.sha256()
        h.update(f"{self.size}:{self.eos_id}:{self.mask_id}".encode())
        for b in token_bytes:
            h.update(len(b).to_bytes(2, "little"))
            h.update(b)
        self.key = h.hexdigest()[:24]

    @cached_property
    def ll(self):
        """llguidance's view of this tokenizer (shared by the grammar engine)."""
        import llguidance.hf

        return llguidance.hf.from_tokenizer(self.tokenizer, n_vocab=self.size, eos_token=self.eos_id)

    @cached_property
    def worded(self) -> torch.Tensor:
        """BoolTensor[size]: tokens with at least three letters in them (a word, a name, a code), the ones
        a parallel decoder may stutter (``sampler.policy``); digits, spaces and punctuation repeat
        legitimately, and so do the one- and two-letter pieces a rare word is cut into (``pa s s wd``)."""
        return torch.tensor([sum(ch.isalpha() for ch in b.decode("utf-8", errors="ignore")) >= 3
                             for b in self.token_bytes], dtype=torch.bool)

    @cached_property
    def blank(self) -> torch.Tensor:
        """BoolTensor[size]: tokens made only of spaces and tabs, which the no-stutter rule keeps from
        standing side by side (``sampler.policy``); newlines are not blank here."""
        return torch.tensor([bool(b) and not b.strip(b" \t") for b in self.token_bytes], dtype=torch.bool)

    @classmethod
    def of(cls, tokenizer, size: int | None = None, **kw) -> "TokenVocab":
        """The cached vocabulary for this tokenizer object and logits width."""
        if isinstance(tokenizer, TokenVocab):
            return tokenizer
        k = (id(tokenizer), int(size or 0), kw.get("eos_id"), kw.get("mask_id"))
        with _LOCK:
            v = _CACHE.get(k)
            if v is None or v._src is not tokenizer:
                v = cls(tokenizer, size, **kw)
                v._src = tokenizer
                _CACHE[k] = v
            return v

    _src = None

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids) -> str:
        """Text of the tokens up to the first EOS (mask and other special ids are dropped)."""
        out = bytearray()
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if 0 <= i < self.size:
                out += self.token_bytes[i]
        return out.decode("utf-8", errors="replace")

    def token_offsets(self, ids) -> list[tuple[int, int]]:
        """Character span (start, end) of each token in ``decode(ids)``; tokens from EOS on get empty spans.

        A token that ends inside a multi-byte character owns that character from where it starts.
        """
        data, byte_spans, done = bytearray(), [], False
        for i in ids:
            i = int(i)
            done = done or i == self.eos_id
            start = len(data)
            if not done and 0 <= i < self.size:
                data += self.token_bytes[i]
            byte_spans.append((start, len(data)))
        # character index of every byte boundary: count the bytes that start a character before it
        starts = np.frombuffer(bytes(data), dtype=np.uint8) & 0xC0 != 0x80
        char_at = np.concatenate([[0], np.cumsum(starts)])
        return [(int(char_at[s]), int(char_at[e])) for s, e in byte_spans]


def _first_id(tk, *names):
    for n in names:
        v = getattr(tk, n, None)
        if v is not None:
            return int(v)
    return None
