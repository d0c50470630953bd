"""The model protocol every backend implements: a tokenizer, a mask id, and logits at every position.

``DiffusionModel`` owns what is common to all backends: the ``logits`` contract (inference mode, the
model's device, float32, shape ``[B, L, vocab_size]``, or from a start position on), turning a prompt
(text or chat messages) into token ids, and the constraint layer's view of the vocabulary (``vocab()``).
A backend implements ``_logits``, and ``_logits_from`` when it can skip the prompt's rows.

Chat rendering (``encode_prompt`` with a list of ``{"role", "content"}`` messages), first match wins:

1. the tokenizer has the role markers ``<|system|>``, ``<|user|>``, ``<|assistant|>`` (structgen's own
   tokenizers, hence the embedded default): ``<|role|>content`` for every message, then ``<|assistant|>``;
   the canvas follows that final marker. Contents are tokenized with special tokens split, so text inside a
   message can never forge a role marker. A final assistant message is a prefill: its content is kept and
   the canvas continues it.
2. the tokenizer has a chat template: ``apply_chat_template(..., add_generation_prompt=True)``.
3. otherwise the contents joined by newlines, encoded as a plain string.

A plain string is encoded as the tokenizer does it, keeping only the special tokens the tokenizer puts
*before* the text (e.g. BERT's ``[CLS]``), never those after it (``[SEP]``): the canvas continues the text.
"""

from __future__ import annotations

import abc
from typing import Any, Mapping, Sequence

import torch

from ..errors import ConfigError

ROLE_MARKERS = {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>", "tool": "<|tool|>"}

Prompt = str | Sequence[Mapping[str, Any]]


class DiffusionModel(abc.ABC):
    """A masked diffusion model: predicts a distribution over the vocabulary at every position.

    Attributes every backend sets: ``tokenizer`` (a Hugging Face fast tokenizer), ``vocab_size`` (the logits
    width, which may exceed ``len(tokenizer)``), ``mask_id`` (the model's own mask token), ``eos_id``,
    ``device`` (a ``torch.device``), ``name`` and ``max_length`` (most positions per sequence, or None).
    ``request_notes``: 0, or the version of ``structgen.request_notes`` the model was trained with (prompts
    with the ISO form of their dates, times and UTC offsets written beside them); ``encode_prompt`` then
    writes them too.
    """

    tokenizer: Any
    vocab_size: int
    mask_id: int
    eos_id: int
    device: torch.device
    name: str
    max_length: int | None = None
    request_notes: int = 0

    # ------------------------------------------------------------------ logits
    @abc.abstractmethod
    def _logits(self, ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Backend forward pass: ``ids`` is a LongTensor ``[B, L]`` on ``self.device``; returns ``[B, L, V]``."""

    def _logits_from(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, start: int) -> torch.Tensor:
        """Logits ``[B, L - start, V]`` of positions ``start..``: a backend that can skip the prompt's rows
        (the output layer is per position) overrides this; by default the full logits, sliced."""
        return self._logits(ids, attention_mask)[:, start:]

    def logits(self, ids: torch.Tensor | Sequence[Sequence[int]],
               attention_mask: torch.Tensor | None = None, *, start: int = 0) -> torch.Tensor:
        """Logits ``[B, L - start, vocab_size]`` (float32, on ``self.device``) for token ids ``[B, L]`` on any
        device: every position, or from position ``start`` on (the sampler asks for the canvas only).

        ``attention_mask`` (``[B, L]``, 1 = attend) is optional: for batches of left-padded prompts.
        """
        ids = torch.as_tensor(ids, dtype=torch.long)
        if ids.dim() != 2:
            raise ConfigError(
                f"{self.name}: logits() takes token ids of shape [batch, length], got shape {tuple(ids.shape)}; "
                "wrap a single sequence as ids[None]"
            )
        if self.max_length is not None and ids.shape[1] > self.max_length:
            raise ConfigError(
                f"{self.name} handles at most {self.max_length} positions, got {ids.shape[1]} "
                "(prompt + canvas); lower max_tokens or shorten the prompt"
            )
        ids = ids.to(self.device)
        if attention_mask is not None:
            attention_mask = torch.as_tensor(attention_mask).to(self.device)
        if not 0 <= start < ids.shape[1]:
            raise ConfigError(f"{self.name}: start={start} is outside the {ids.shape[1]} positions given")
        with torch.inference_mode():
            out = self._logits(ids, attention_mask) if start == 0 else self._logits_from(ids, attention_mask, start)
            if out.shape[-1] != self.vocab_size:  # pragma: no cover - a backend bug, not a user error
                raise ConfigError(f"{self.name} returned logits of width {out.shape[-1]}, expected {self.vocab_size}")
            return out.float()

    # ------------------------------------------------------------------ prompts
    def encode_prompt(self, prompt: Prompt) -> list[int]:
        """Token ids of a prompt: a plain string, or chat messages ``[{"role": ..., "content": ...}]``."""
        prompt = self.with_notes(prompt)
        if isinstance(prompt, str):
            return self._encode_text(prompt)
        messages = _check_messages(prompt, self.name)
        tok = self.tokenizer
        markers = self._role_marker_ids()
        if markers is not None:
            ids = list(self._leading_special_ids())
            for i, m in enumerate(messages):
                role, content = m["role"], _content_text(m["content"])
                if role not in markers:
                    raise ConfigError(
                        f"chat role {role!r} has no marker in this tokenizer; use one of {sorted(markers)}"
                    )
                prefill = i == len(messages) - 1 and role == "assistant"
                ids.append(markers[role])
                ids += self._encode_plain(content, split_special=True)
                if prefill:
                    return ids
            ids.append(markers["assistant"])
            return ids
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template(
                [{"role": m["role"], "content": _content_text(m["content"])} for m in messages],
                tokenize=False, add_generation_prompt=True,
            )
            return self._encode_plain(text, split_special=False)
        return self._encode_text("\n".join(_content_text(m["content"]) for m in messages))

    def with_notes(self, prompt: Prompt) -> Prompt:
        """``prompt`` with request notes (a string, or the user messages' text) when the model reads them."""
        if not self.request_notes:
            return prompt
        from ..request_notes import annotate

        if isinstance(prompt, str):
            return annotate(prompt, self.request_notes)
        return [{**m, "content": annotate(_content_text(m["content"]), self.request_notes)}
                if m.get("role") == "user" else m
                for m in _check_messages(prompt, self.name)]

    def _encode_text(self, text: str) -> list[int]:
        return list(self._leading_special_ids()) + self._encode_plain(text, split_special=False)

    def _encode_plain(self, text: str, *, split_special: bool) -> list[int]:
        if not text:
            return []
        kw = {"split_special_tokens": True} if split_special else {}
        return list(self.tokenizer.encode(text, add_special_tokens=False, **kw))

    def _leading_special_ids(self) -> tuple[int, ...]:
        """The special tokens the tokenizer itself puts in front of a text (``[CLS]``, ``<s>``), if any."""
        cached = self.__dict__.get("_leading_cache")
        if cached is None:
            tok = self.tokenizer
            with_special = list(tok.encode("x", add_special_tokens=True))
            plain = list(tok.encode("x", add_special_tokens=False))
            cached = ()
            if plain:
                for k in range(len(with_special) - len(plain) + 1):
                    if with_special[k:k + len(plain)] == plain:
                        cached = tuple(with_special[:k])
                        break
            self.__dict__["_leading_cache"] = cached
        return cached

    def _role_marker_ids(self) -> dict[str, int] | None:
        """Ids of structgen's role markers, or None when the tokenizer lacks any of system/user/assistant."""
        if "_marker_cache" not in self.__dict__:
            vocab = self.tokenizer.get_vocab()
            found = {role: vocab[m] for role, m in ROLE_MARKERS.items() if m in vocab}
            ok = all(r in found for r in ("system", "user", "assistant"))
            self.__dict__["_marker_cache"] = found if ok else None
        return self.__dict__["_marker_cache"]

    # ------------------------------------------------------------------ helpers
    def vocab(self):
        """The constraint layer's view of this model's vocabulary (cached per tokenizer and width)."""
        from ..constraints.vocab import TokenVocab

        return TokenVocab.of(self.tokenizer, self.vocab_size, eos_id=self.eos_id, mask_id=self.mask_id)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of token ids (special tokens skipped)."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, vocab_size={self.vocab_size}, mask_id={self.mask_id}, "
                f"eos_id={self.eos_id}, device={str(self.device)!r})")


def _check_messages(messages: Any, name: str) -> list[Mapping[str, Any]]:
    if not isinstance(messages, Sequence) or isinstance(messages, (bytes, bytearray)) or not messages:
        raise ConfigError(
            f"a prompt is a string or a non-empty list of chat messages {{'role': ..., 'content': ...}}, "
            f"got {type(messages).__name__}"
        )
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
            raise ConfigError(f"chat message {i} must be a dict with 'role' and 'content', got {m!r:.80}")
    return list(messages)


def _content_text(content: Any) -> str:
    """A message content as text: a string, or OpenAI-style parts ``[{"type": "text", "text": ...}]``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, Mapping) and p.get("type", "text") == "text" and "text" in p:
                parts.append(str(p["text"]))
            else:
                raise ConfigError(f"only text message parts are supported, got {p!r:.80}")
        return "".join(parts)
    raise ConfigError(f"message content must be text, got {type(content).__name__}")
