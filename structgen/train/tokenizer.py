"""The trained model's tokenizer: a byte-level BPE learnt from the training corpus.

``build_tokenizer(cfg)`` trains ``structgen.tokenizers.train_bpe`` (``cfg.vocab_size`` tokens, pieces cut by
``cfg.pretokenizer``, the special tokens EOS / mask / pad and the chat role markers) on
``structgen.train.data.corpus_texts``: the prompts as the model sees them (``spec.render_prompt``) and the
targets. Byte-level BPE covers every byte, so any
UTF-8 text round-trips; ``check_round_trip`` proves it on hard samples (emoji, CJK, control characters,
text that spells a special token) before a tokenizer is used for training.

Targets are encoded with ``encode_target``: special tokens *split*, so a literal ``<|eos|>`` in a target is
text, never the EOS id (the same rule ``encode_prompt`` applies to chat contents).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..errors import ConfigError
from ..tokenizers import SPECIAL_TOKENS, train_bpe

ROUND_TRIP_SAMPLES = (
    "plain ascii, with punctuation: {\"a\": [1, 2.5e-3, null]}",
    "emoji 😀👍🏽🧑‍💻 and flags 🇵🇹",
    "CJK 中文字符 日本語 한국어",
    "controls \x00\x01\x07\x1b[0m\x7f tab\tnewline\ncarriage\r",
    "accents àéîõü ß Ω ‰ \u200b zero-width \ufeff bom",
    "  leading and trailing spaces  ",
    "specials as text: <|eos|> <|mask|> <|user|>",
)


def build_tokenizer(cfg, corpus: Iterable[str] | None = None):
    """Train the BPE for ``cfg`` on ``corpus`` (default: ``corpus_texts(cfg.tokenizer_corpus, cfg.seed)``)."""
    if corpus is None:
        from .data import corpus_texts

        corpus = corpus_texts(cfg.tokenizer_corpus, cfg.seed, sql_shapes=cfg.sql_shapes)
    texts = [t for t in corpus if isinstance(t, str) and t]
    if not texts:
        raise ConfigError("the tokenizer corpus is empty; pass texts (prompts and targets) to train it on")
    tok = train_bpe(texts, cfg.vocab_size, pretokenizer=cfg.pretokenizer)
    check_round_trip(tok)
    return tok


def encode_target(tok, text: str) -> list[int]:
    """Token ids of a gold output: no special tokens added, special-token spellings kept as text."""
    if not text:
        return []
    return list(tok.encode(text, add_special_tokens=False, split_special_tokens=True))


def encode_targets(tok, texts: Sequence[str], *, offsets: bool = False):
    """``encode_target`` of many texts in one call of the tokenizer's batch encoder (its native threads, no
    per-text Python overhead); with ``offsets``, ``(ids, character offsets)`` per text."""
    if not texts:
        return []
    enc = tok(list(texts), add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=offsets,
              return_attention_mask=False, return_token_type_ids=False)
    ids = [list(x) for x in enc["input_ids"]]
    return list(zip(ids, enc["offset_mapping"])) if offsets else ids


def check_round_trip(tok, samples: Sequence[str] = ROUND_TRIP_SAMPLES) -> None:
    """Raise ``ConfigError`` if any sample does not decode back to itself, or a special token is missing."""
    vocab = tok.get_vocab()
    missing = [s for s in SPECIAL_TOKENS if s not in vocab]
    if missing:
        raise ConfigError(f"the tokenizer lacks the special token(s) {missing}; train it with "
                          "structgen.tokenizers.train_bpe, which adds them")
    for s in samples:
        ids = encode_target(tok, s)
        back = tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if back != s:
            raise ConfigError(f"the tokenizer does not round-trip {s!r} (decoded {back!r}); it must be a "
                              "byte-level BPE (structgen.tokenizers.train_bpe)")
