"""Commit policies: which of the proposed positions to commit after one model call.

* ``threshold`` (Fast-dLLM style): every eligible position whose constrained confidence is at least
  ``threshold``, and always the single most confident one, so each step makes progress;
* ``tokens_per_step`` (LLaDA style): the ``k`` most confident eligible positions.

Both work inside LLaDA-style semi-autoregressive blocks: only positions of the first block that still has
masked positions are eligible. For a frontier engine (``prefix_only``) the commits are a prefix of the
proposed run.

**No stutter** (``stutter_gap``): one model call scores every masked position from the same canvas, so two
positions a token or two apart can both propose the token that belongs at one of them — the parallel
decoder's stutter (``"C:\\UsersSørenSøren\\DesktopDesktop..."``) — and a gap left beside a committed word
is filled with that word again. The rule applies to tokens of three or more letters (``TokenVocab.worded``:
digits, punctuation and the short pieces a rare word is cut into repeat legitimately, as in ``20:20`` and
``pa s s wd``) that the prompt does not itself repeat that closely
(:meth:`CommitPolicy.stutter_tokens`): among one step's commits, such a token equal to a more confident
commit at most ``stutter_gap`` positions away waits for the next call (:meth:`CommitPolicy.choose`), and a
masked position scores such a token committed that close far lower (:meth:`CommitPolicy.suppress_echoes`).

The rule has a second part for **blank** tokens (``TokenVocab.blank``: spaces and tabs). A space is a
token of its own under the ``words`` pre-tokenizer, and the likeliest token inside a string whose words the
model is unsure of, so the parallel decoder's stutter there is a run of spaces that swallows the canvas
(``"check in for                    "``: 46 of 50 held-out JSON answers of run 24 in docs/training-log.md).
Two blank tokens side by side are a stutter too, unless the prompt has such a run itself (indented code or
a table in the request; :meth:`CommitPolicy.blank_tokens`): among one step's commits the less confident of
two neighbours waits, and a masked position next to a committed blank scores every blank far lower.

Forced tokens never come through here, and every step still commits its most confident pick, so the rule
changes which text a model writes, never whether it is valid.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..constraints.base import MASK, Proposal
from ..errors import ConfigError


ECHO_PENALTY = 1e4  # logits; far below any real token, finite so the echoed tokens keep their order


@dataclass(frozen=True)
class CommitPolicy:
    block_length: int = 32
    threshold: float | None = 0.9
    tokens_per_step: int | None = None
    stutter_gap: int = 2  # 0 = off (see the module docstring)

    def __post_init__(self):
        if self.block_length < 1:
            raise ConfigError(f"block_length must be >= 1, got {self.block_length}")
        if self.threshold is None and self.tokens_per_step is None:
            raise ConfigError("set either threshold (e.g. 0.9) or tokens_per_step (e.g. 2)")
        if self.threshold is not None and not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"the commit threshold must be in (0, 1], got {self.threshold}; 0.9 is the default")
        if self.tokens_per_step is not None and self.tokens_per_step < 1:
            raise ConfigError(f"tokens_per_step must be >= 1, got {self.tokens_per_step}")
        if isinstance(self.stutter_gap, bool) or not isinstance(self.stutter_gap, int) or self.stutter_gap < 0:
            raise ConfigError(f"stutter_gap must be an integer >= 0, got {self.stutter_gap!r}")

    def window(self, masked: torch.Tensor) -> tuple[int, int]:
        """The current block: [start, end) of the first block that still has masked positions."""
        T = masked.shape[0]
        idx = torch.nonzero(masked)
        if len(idx) == 0:
            return T, T
        first = int(idx[0, 0])
        start = (first // self.block_length) * self.block_length
        return start, min(T, start + self.block_length)

    def run_hints(self) -> dict:
        """What a frontier engine's run need not go past (``propose(stop_below=, run_limit=)``): the prefix
        ``choose`` commits ends at the first token below the threshold, or after ``tokens_per_step``."""
        if self.tokens_per_step is not None:
            return {"stop_below": None, "run_limit": self.tokens_per_step}
        return {"stop_below": self.threshold, "run_limit": None}

    def choose(self, prop: Proposal, worded: torch.Tensor | None = None,
               blank: torch.Tensor | None = None) -> torch.Tensor:
        """LongTensor of positions to commit (never empty when something is eligible); ``worded`` (BoolTensor
        over the vocabulary, :meth:`stutter_tokens`) marks the tokens the no-stutter rule applies to (None:
        the rule is off), ``blank`` (:meth:`blank_tokens`) the tokens that may not stand side by side."""
        idx = torch.nonzero(prop.eligible)[:, 0]
        if len(idx) == 0:
            return idx
        conf = prop.confidence[idx]
        if prop.prefix_only:
            # contiguous run from the frontier: commit while confident (fixed k: the first k)
            if self.tokens_per_step is not None:
                n = min(self.tokens_per_step, len(idx))
            else:
                below = torch.nonzero(conf < self.threshold)
                n = int(below[0, 0]) if len(below) else len(idx)
                n = max(1, n)
            return idx[: self._unstuttered_run(prop.tokens[idx[:n]], worded, blank)]
        if self.tokens_per_step is not None:
            k = min(self.tokens_per_step, len(idx))
            pick = idx[conf.topk(k).indices]
        else:
            keep = conf >= self.threshold
            keep[conf.argmax()] = True
            pick = idx[keep]
        return self._unstuttered(pick, prop.tokens[pick], prop.confidence[pick], worded, blank)

    def blank_tokens(self, blank: torch.Tensor, prompt_ids: torch.Tensor) -> torch.Tensor | None:
        """The blank tokens the rule keeps apart for one request: ``blank`` (``TokenVocab.blank``), or None
        when the rule is off or the prompt itself puts two blank tokens side by side (its indentation or
        alignment may be what the answer should copy)."""
        if self.stutter_gap == 0:
            return None
        prompt_ids = prompt_ids.to(blank.device)
        if len(prompt_ids) > 1 and bool((blank[prompt_ids[1:]] & blank[prompt_ids[:-1]]).any()):
            return None
        return blank

    def stutter_tokens(self, worded: torch.Tensor, prompt_ids: torch.Tensor) -> torch.Tensor:
        """The tokens the no-stutter rule applies to for one request: ``worded`` (``TokenVocab.worded``)
        less every token the prompt itself repeats within ``stutter_gap`` positions, so a value the request
        spells that way is copied as it is (``Mississippi`` is ``M iss iss ip p i``, ``Bora Bora`` a word,
        a space and the word again)."""
        out = worded.clone()
        prompt_ids = prompt_ids.to(worded.device)
        for d in range(1, min(self.stutter_gap, len(prompt_ids) - 1) + 1):
            out[prompt_ids[d:][prompt_ids[d:] == prompt_ids[:-d]]] = False
        return out

    def suppress_echoes(self, scores: torch.Tensor, canvas: torch.Tensor, window: tuple[int, int],
                        worded: torch.Tensor | None, blank: torch.Tensor | None = None) -> None:
        """In place, before the constraint sees ``scores`` (the model's logits, canvas rows): at each masked
        position of ``window``, every worded token already committed at most ``stutter_gap`` positions away
        scores ``ECHO_PENALTY`` lower. The model's copy pointer fills a gap next to a committed word with
        that word (``Søren`` committed, the ``\\`` before it written ``Søren`` too); the penalty leaves
        the order of the echoed tokens among themselves, so a grammar that allows nothing else still
        decodes, and such a pick never reaches the threshold (it commits only as a step's one best). With
        ``blank``, a masked position next to a committed blank token scores every blank token that much
        lower too."""
        g = self.stutter_gap
        if g == 0 or (worded is None and blank is None):
            return
        w0, w1 = window
        rows = w0 + torch.nonzero(canvas[w0:w1] == MASK)[:, 0]
        T = canvas.shape[0]
        beside_blank = torch.zeros_like(rows, dtype=torch.bool)
        for d in [*range(-g, 0), *range(1, g + 1)]:
            nb = rows + d
            tok = canvas[nb.clamp(0, T - 1)]
            seen = (nb >= 0) & (nb < T) & (tok != MASK)
            if blank is not None and abs(d) == 1:
                beside_blank |= seen & blank[tok.clamp(min=0)]
            if worded is not None:
                echo = seen & worded[tok.clamp(min=0)]
                r, tok = rows[echo], tok[echo]
                scores[r, tok] = scores[r, tok] - ECHO_PENALTY
        if blank is not None:
            scores[rows[beside_blank]] -= ECHO_PENALTY * blank.to(scores.dtype)

    def _unstuttered(self, pos: torch.Tensor, tokens: torch.Tensor, conf: torch.Tensor,
                     worded: torch.Tensor | None, blank: torch.Tensor | None = None) -> torch.Tensor:
        """``pos`` without each commit whose worded token a more confident commit (ties: the earlier
        position) repeats at most ``stutter_gap`` positions away, or whose blank token such a commit next
        to it is blank too."""
        if (worded is None and blank is None) or self.stutter_gap == 0 or len(pos) < 2:
            return pos
        dist = (pos[:, None] - pos[None, :]).abs()
        clash = torch.zeros_like(dist, dtype=torch.bool)  # [a, b]: a's commit makes b a stutter
        if worded is not None:
            clash |= (tokens[:, None] == tokens[None, :]) & worded[tokens][None, :] & (dist <= self.stutter_gap)
        if blank is not None:
            clash |= blank[tokens][:, None] & blank[tokens][None, :] & (dist == 1)
        rank = torch.arange(len(pos), device=pos.device)
        beats = (conf[:, None] > conf[None, :]) | ((conf[:, None] == conf[None, :]) & (pos[:, None] < pos[None, :]))
        beaten = (clash & beats & (rank[:, None] != rank[None, :])).any(dim=0)
        return pos[~beaten]

    def _unstuttered_run(self, tokens: torch.Tensor, worded: torch.Tensor | None,
                         blank: torch.Tensor | None = None) -> int:
        """The length of the longest prefix of a contiguous run in which no worded token repeats one within
        ``stutter_gap`` positions and no two blank tokens stand side by side (at least 1)."""
        g = self.stutter_gap if (worded is not None or blank is not None) else 0
        if g == 0 or len(tokens) < 2:
            return len(tokens)
        bad_at = torch.zeros(len(tokens), dtype=torch.bool, device=tokens.device)
        if worded is not None:
            back = torch.zeros(len(tokens), dtype=torch.bool, device=tokens.device)
            for d in range(1, g + 1):  # back[k]: tokens[k] == tokens[k - d] for some d (never at k = 0)
                back[d:] |= tokens[d:] == tokens[:-d]
            bad_at |= back & worded[tokens]
        if blank is not None:
            bad_at[1:] |= blank[tokens[1:]] & blank[tokens[:-1]]
        bad = torch.nonzero(bad_at)
        return int(bad[0, 0]) if len(bad) else len(tokens)
