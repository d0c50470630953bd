"""Byte-level BPE tokenizers built locally: trained on a corpus, or synthetic at any vocabulary size.

Used by the untrained default model, tests and benchmarks (a 4k, 32k or 128k vocabulary with no download).
Every tokenizer has the special tokens structgen relies on: EOS, mask, pad and chat role markers.
"""

from __future__ import annotations

import random
from typing import Iterable

SPECIAL_TOKENS = ["<|eos|>", "<|mask|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"]


def _wrap(tok):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|eos|>", mask_token="<|mask|>", pad_token="<|pad|>",
        additional_special_tokens=SPECIAL_TOKENS[3:],
    )


#: How text is cut before BPE merges. ``gpt2``: GPT-2's rule, a word takes the space before it (`` Maria``).
#: ``words``: every whitespace character, every letter run, every run of up to 3 digits and every
#: punctuation run is its own piece, so a word is the same token wherever it stands — after a space in the
#: prompt or after a quote in the JSON the model writes (``"Maria``). Copying a value from the prompt is
#: then copying the same tokens, which a small model learns far sooner; texts get about 30% more tokens.
#: ``json-words``: ``words``, with JSON's structural punctuation (``{}[]":,``) cut apart from any other, so
#: punctuation at a value's edge is the token it is in the prompt: ``"/tmp`` is ``"`` ``/`` ``tmp`` (not
#: ``"/`` ``tmp``) and ``Monday."}}`` ends ``.`` ``"}}`` (not ``."}}``); about 1% more tokens than ``words``.
PRETOKENIZERS = ("gpt2", "words", "json-words")
WORDS_PATTERN = r"\s|\p{L}+|\p{N}{1,3}|[^\s\p{L}\p{N}]+"
JSON_WORDS_PATTERN = r"""\s|\p{L}+|\p{N}{1,3}|[{}\[\]":,]+|[^\s\p{L}\p{N}{}\[\]":,]+"""


def _empty_byte_level(pretokenizer: str = "gpt2"):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    if pretokenizer not in PRETOKENIZERS:
        from .errors import ConfigError

        raise ConfigError(f"unknown pretokenizer {pretokenizer!r}; choose from {', '.join(PRETOKENIZERS)}")
    tok = Tokenizer(models.BPE())
    if pretokenizer in ("words", "json-words"):
        pattern = WORDS_PATTERN if pretokenizer == "words" else JSON_WORDS_PATTERN
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    return tok


def train_bpe(corpus: Iterable[str], vocab_size: int = 4096, *, pretokenizer: str = "gpt2"):
    """Train a byte-level BPE on ``corpus`` (pieces cut by ``pretokenizer``, see :data:`PRETOKENIZERS`);
    any UTF-8 text round-trips through it."""
    from tokenizers import pre_tokenizers, trainers

    tok = _empty_byte_level(pretokenizer)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer)
    return _wrap(tok)


# characters synthetic tokens are made of, weighted like JSON and English text
_PIECES = list("abcdefghijklmnopqrstuvwxyz") * 4 + list("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + \
    list(' "{}[]:,._-/@') * 2


def synthetic_bpe(vocab_size: int, seed: int = 0):
    """A byte-level BPE of exactly ``vocab_size`` tokens built by random merges (no training corpus).

    Tokens are concatenations of earlier tokens, as real BPE merges are, mostly letters, digits and JSON
    punctuation, up to 16 bytes long. Good for measuring constraint cost at a 32k or 128k vocabulary.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers

    rng = random.Random(seed)
    b2u = pre_tokenizers.ByteLevel.alphabet()
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_map = bytes_to_unicode()
    vocab: dict[str, int] = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    for b in range(256):
        vocab.setdefault(byte_map[b], len(vocab))
    assert len(b2u) == 256
    pieces = [byte_map[ord(c)] for c in _PIECES]
    pool = list(dict.fromkeys(pieces))
    merges: list[tuple[str, str]] = []
    target = vocab_size - len(vocab)
    attempts = 0
    while len(merges) < target and attempts < target * 50:
        attempts += 1
        a = rng.choice(pool) if rng.random() < 0.7 else rng.choice(pieces)
        b = rng.choice(pieces) if rng.random() < 0.6 else rng.choice(pool)
        t = a + b
        if len(t) > 16 or t in vocab:
            continue
        vocab[t] = len(vocab)
        merges.append((a, b))
        pool.append(t)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    from tokenizers import decoders

    tok.decoder = decoders.ByteLevel()
    for s in SPECIAL_TOKENS:
        tok.add_special_tokens([s])
    return _wrap(tok)


def default_corpus(n: int = 2000, seed: int = 0) -> list[str]:
    """A small generated corpus of JSON, SQL-ish and English text to train a tokenizer on."""
    import json

    rng = random.Random(seed)
    words = ("the quick brown fox jumps over lazy dog name age city country email date time price "
             "order customer product status select from where group by count true false null id "
             "type value list items title description amount currency weather unit days").split()
    out = []
    for _ in range(n):
        obj = {rng.choice(words): rng.choice([rng.randint(-999, 99999), rng.random() * 100,
                                              " ".join(rng.choices(words, k=rng.randint(1, 4))),
                                              rng.choice([True, False, None]),
                                              [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]])
               for _ in range(rng.randint(1, 5))}
        out.append(json.dumps(obj))
        out.append(json.dumps(obj, separators=(",", ":")))
        out.append(" ".join(rng.choices(words, k=rng.randint(3, 12))).capitalize() + ".")
    return out
