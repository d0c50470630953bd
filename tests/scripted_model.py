"""``ScriptedLogits``: a stand-in model that tries hard to write one given text, for tests that need a model
to insist on something (an attack on the commit boundary, a query the repair rounds cannot talk it out of)."""

from __future__ import annotations

import structgen as sg


class ScriptedLogits(sg.models.RandomLogits):
    """Random logits plus ``strength`` on the tokens of ``target`` at canvas positions 0, 1, ... and on EOS
    after it: a model that tries hard to write ``target``, whatever the constraint allows."""

    def __init__(self, tokenizer, target: str, strength: float = 25.0, seed: int = 0):
        super().__init__(tokenizer, seed=seed)
        self.target = list(self.tokenizer.encode(target, add_special_tokens=False))
        self.strength = strength
        self.prompt_len = 0

    def encode_prompt(self, prompt):
        ids = super().encode_prompt(prompt)
        self.prompt_len = len(ids)
        return ids

    def _logits(self, ids, attention_mask):
        out = super()._logits(ids, attention_mask)
        p, n = self.prompt_len, ids.shape[1]
        for i, tok in enumerate(self.target):
            if p + i < n:
                out[:, p + i, tok] += self.strength
        if p + len(self.target) < n:
            out[:, p + len(self.target):, self.eos_id] += self.strength
        return out
