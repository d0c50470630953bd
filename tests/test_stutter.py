"""The commit policy's no-stutter rule: within one step, a word token repeated a position or two away from a
more confident commit of the same token waits for the next model call (``sampler.policy``)."""

from __future__ import annotations

import pytest
import torch

import structgen as sg
from structgen.constraints.base import Proposal
from structgen.errors import ConfigError
from structgen.sampler.policy import CommitPolicy

WORD, DIGIT, OTHER = 1, 2, 3
WORDED = torch.tensor([False, True, False, True])  # token 1 and 3 are words, 2 is a digit


def _prop(tokens, conf, prefix_only=False):
    t = torch.tensor(tokens)
    return Proposal(t, torch.tensor(conf), torch.ones(len(tokens), dtype=torch.bool), prefix_only)


def test_a_repeated_word_waits_and_the_more_confident_one_commits():
    p = CommitPolicy(8, threshold=0.9)
    prop = _prop([WORD, WORD, OTHER, DIGIT, DIGIT], [0.95, 0.97, 0.99, 0.95, 0.96])
    assert p.choose(prop, WORDED).tolist() == [1, 2, 3, 4]  # position 0 waits; digits repeat legitimately
    assert p.choose(prop).tolist() == [0, 1, 2, 3, 4]  # no vocabulary: the rule is off
    assert CommitPolicy(8, threshold=0.9, stutter_gap=0).choose(prop, WORDED).tolist() == [0, 1, 2, 3, 4]


def test_only_repeats_within_the_gap_wait():
    prop = _prop([WORD, DIGIT, DIGIT, WORD, OTHER], [0.99, 0.95, 0.95, 0.98, 0.5])
    assert CommitPolicy(8, threshold=0.9).choose(prop, WORDED).tolist() == [0, 1, 2, 3]  # 3 apart
    assert CommitPolicy(8, threshold=0.9, stutter_gap=3).choose(prop, WORDED).tolist() == [0, 1, 2]
    ties = _prop([OTHER, OTHER], [0.95, 0.95])
    assert CommitPolicy(8, threshold=0.9).choose(ties, WORDED).tolist() == [0]  # a tie: the earlier one


def test_every_step_still_commits_its_most_confident_pick():
    prop = _prop([WORD, WORD, WORD], [0.4, 0.6, 0.5])
    assert CommitPolicy(8, threshold=0.9).choose(prop, WORDED).tolist() == [1]
    k = CommitPolicy(8, threshold=None, tokens_per_step=3).choose(prop, WORDED)
    assert k.tolist() == [1]
    assert CommitPolicy(8, threshold=None, tokens_per_step=1).choose(prop, WORDED).tolist() == [1]


def test_a_frontier_run_stops_before_its_first_stutter():
    p = CommitPolicy(8, threshold=0.9)
    run = _prop([OTHER, DIGIT, DIGIT, WORD, OTHER, WORD, WORD], [0.99] * 7, prefix_only=True)
    assert p.choose(run, WORDED).tolist() == [0, 1, 2, 3, 4]  # the word at 5 repeats 3's; digits pass
    assert p.choose(run).tolist() == list(range(7))
    first = _prop([WORD, WORD], [0.99, 0.99], prefix_only=True)
    assert p.choose(first, WORDED).tolist() == [0]  # never empty


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_stutter_gap_is_checked(bad):
    with pytest.raises(ConfigError, match="stutter_gap"):
        CommitPolicy(8, threshold=0.9, stutter_gap=bad)


def test_token_vocab_marks_the_tokens_with_three_letters(tok4k):
    v = sg.models.RandomLogits(tok4k).vocab()
    w = v.worded
    assert w.dtype == torch.bool and w.shape == (v.size,)
    for text, want in (("name", True), ("city", True), ("a", False), ("2025", False), (", ", False),
                       ("\"", False)):
        ids = v.encode(text)
        assert bool(w[ids].any()) is want, text
    assert not bool(w[v.eos_id]) and not bool(w[v.mask_id])


class TwoWords(sg.models.RandomLogits):
    """Random logits that know where the canvas starts; subclasses steer ``first`` and ``second`` there."""

    def __init__(self, tokenizer, first: int, second: int):
        super().__init__(tokenizer, seed=0)
        self.first, self.second, self.prompt_len = first, second, 0

    def encode_prompt(self, prompt):
        ids = super().encode_prompt(prompt)
        self.prompt_len = len(ids)
        return ids


def _words(tok) -> tuple[int, int]:
    """The single-token words ``name`` and ``city`` of ``tok``."""
    (name,), (city,) = tok.encode("name", add_special_tokens=False), tok.encode("city", add_special_tokens=False)
    return name, city


class Stutterer(TwoWords):
    """Wants ``first`` at canvas positions 0 and 1 while both are masked (0 more strongly): the parallel
    stutter. Once position 0 holds ``first``, it wants ``second`` at position 1; EOS after."""

    def _logits(self, ids, attention_mask):
        out = super()._logits(ids, attention_mask)
        p = self.prompt_len
        out[:, p, self.first] += 30
        sees_first = ids[:, p] == self.first
        out[sees_first, p + 1, self.second] += 30
        out[~sees_first, p + 1, self.first] += 28
        out[:, p + 2:, self.eos_id] += 30
        return out


def test_the_generator_writes_the_word_after_the_committed_one(tok4k):
    gen = sg.Generator(Stutterer(tok4k, *_words(tok4k)))
    spec = sg.Regex(r"[A-Za-z]+")
    r = gen.generate("name?", spec, max_tokens=8)
    assert r.text == "namecity" and r.nfe == 2
    plain = gen.generate("name?", spec, max_tokens=8, stutter_gap=0)
    assert plain.text == "namename" and plain.nfe == 1


def test_a_masked_position_beside_a_committed_word_scores_it_far_lower():
    p = CommitPolicy(8, threshold=0.9)
    canvas = torch.tensor([WORD, -1, DIGIT, -1, -1, -1])
    scores = torch.zeros(6, 4)
    p.suppress_echoes(scores, canvas, (0, 6), WORDED)
    assert scores[1, WORD] < -1000 and scores[1, DIGIT] == 0  # a digit may repeat
    assert scores[3, WORD] == 0  # three positions away
    assert scores[5].eq(0).all() and scores[0].eq(0).all()  # nothing near / committed rows untouched
    p.suppress_echoes(scores := torch.zeros(6, 4), canvas, (2, 6), WORDED)
    assert scores[1].eq(0).all()  # outside the window
    CommitPolicy(8, threshold=0.9, stutter_gap=0).suppress_echoes(scores := torch.zeros(6, 4), canvas, (0, 6), WORDED)
    assert scores.eq(0).all()


def test_a_word_the_prompt_repeats_is_exempt():
    p = CommitPolicy(8, threshold=0.9)
    prompt = torch.tensor([OTHER, WORD, DIGIT, WORD])  # WORD twice, two apart: "Bora Bora"
    assert p.stutter_tokens(WORDED, prompt).tolist() == [False, False, False, True]
    assert p.stutter_tokens(WORDED, torch.tensor([WORD, DIGIT, OTHER, WORD])).tolist() == WORDED.tolist()
    assert CommitPolicy(8, threshold=0.9, stutter_gap=3).stutter_tokens(
        WORDED, torch.tensor([WORD, DIGIT, OTHER, WORD])).tolist() == [False, False, False, True]


class Echoer(TwoWords):
    """Wants ``first`` at canvas position 0, and at position 1 ``first`` again (the echo) above ``second``."""

    def _logits(self, ids, attention_mask):
        out = super()._logits(ids, attention_mask)
        p = self.prompt_len
        out[:, p, self.first] += 30
        out[:, p + 1, self.first] += 30
        out[:, p + 1, self.second] += 25
        out[:, p + 2:, self.eos_id] += 30
        return out


def test_the_generator_does_not_echo_a_committed_word_unless_the_prompt_does(tok4k):
    gen = sg.Generator(Echoer(tok4k, *_words(tok4k)))
    spec = sg.Regex(r"[a-z]+")
    assert gen.generate("which?", spec, max_tokens=8).text == "namecity"
    assert gen.generate("which?", spec, max_tokens=8, stutter_gap=0).text == "namename"
    assert gen.generate("name-name?", spec, max_tokens=8).text == "namename"  # the request repeats it


BLANK = torch.tensor([False, False, True, False])  # token 2 stands for a space here


def test_two_blank_tokens_side_by_side_in_one_step_the_less_confident_waits():
    p = CommitPolicy(8, threshold=0.9)
    prop = _prop([OTHER, DIGIT, DIGIT, OTHER, DIGIT], [0.99, 0.95, 0.97, 0.99, 0.96])
    assert p.choose(prop, WORDED, BLANK).tolist() == [0, 2, 3, 4]  # 1 waits for the more confident 2
    assert p.choose(prop, WORDED).tolist() == [0, 1, 2, 3, 4]  # no blank set: spaces may touch
    assert CommitPolicy(8, threshold=0.9, stutter_gap=0).choose(prop, WORDED, BLANK).tolist() == [0, 1, 2, 3, 4]
    apart = _prop([DIGIT, OTHER, DIGIT], [0.95, 0.99, 0.95])
    assert p.choose(apart, None, BLANK).tolist() == [0, 1, 2]  # blanks two apart are fine


def test_a_frontier_run_stops_before_a_second_blank():
    p = CommitPolicy(8, threshold=0.9)
    run = _prop([OTHER, DIGIT, OTHER, DIGIT, DIGIT, OTHER], [0.99] * 6, prefix_only=True)
    assert p.choose(run, None, BLANK).tolist() == [0, 1, 2, 3]
    assert p.choose(_prop([DIGIT, DIGIT], [0.99, 0.99], prefix_only=True), None, BLANK).tolist() == [0]


def test_a_masked_position_beside_a_committed_blank_scores_every_blank_far_lower():
    p = CommitPolicy(8, threshold=0.9)
    canvas = torch.tensor([DIGIT, -1, -1, OTHER, -1, DIGIT])
    scores = torch.zeros(6, 4)
    p.suppress_echoes(scores, canvas, (0, 6), None, BLANK)
    assert scores[1, DIGIT] < -1000 and scores[4, DIGIT] < -1000  # beside a committed blank, either side
    assert scores[1, OTHER] == 0 and scores[2].eq(0).all()  # other tokens / two away from any blank
    CommitPolicy(8, threshold=0.9, stutter_gap=0).suppress_echoes(scores := torch.zeros(6, 4), canvas, (0, 6),
                                                                  None, BLANK)
    assert scores.eq(0).all()


def test_blank_runs_in_the_prompt_exempt_them():
    p = CommitPolicy(8, threshold=0.9)
    assert p.blank_tokens(BLANK, torch.tensor([OTHER, DIGIT, OTHER, DIGIT])).tolist() == BLANK.tolist()
    assert p.blank_tokens(BLANK, torch.tensor([OTHER, DIGIT, DIGIT, OTHER])) is None  # indentation in the request
    assert CommitPolicy(8, threshold=0.9, stutter_gap=0).blank_tokens(BLANK, torch.tensor([OTHER])) is None


def test_token_vocab_marks_spaces_and_tabs_as_blank(tok4k):
    v = sg.models.RandomLogits(tok4k).vocab()
    b = v.blank
    assert b.dtype == torch.bool and b.shape == (v.size,)
    for text, want in ((" ", True), ("\t", True), ("\n", False), ("a", False), ("name", False), ('"', False)):
        assert bool(b[v.encode(text)].all()) is want, text
    assert not bool(b[v.eos_id]) and not bool(b[v.mask_id])


class Spacer(TwoWords):
    """Wants ``first`` at canvas position 0, then a space at every position up to 6 (``second`` next
    best there), then EOS: a model unsure of a string's words."""

    def _logits(self, ids, attention_mask):
        out = super()._logits(ids, attention_mask)
        p = self.prompt_len
        out[:, p, self.first] += 30
        out[:, p + 1:p + 7, self.space] += 40
        out[:, p + 1:p + 7, self.second] += 30
        out[:, p + 7:, self.eos_id] += 30
        return out


def test_the_generator_writes_no_run_of_spaces_unless_the_prompt_has_one(tok4k):
    model = Spacer(tok4k, *_words(tok4k))
    (model.space,) = tok4k.encode(" ", add_special_tokens=False)
    gen, spec = sg.Generator(model), sg.Regex(r"[a-z ]+")
    r = gen.generate("which?", spec, max_tokens=12)
    assert r.valid and "  " not in r.text and r.text.startswith("name "), r.text
    assert gen.generate("which?", spec, max_tokens=12, stutter_gap=0).text == "name      "
    assert "  " in gen.generate("which  one?", spec, max_tokens=12).text  # the request has a run itself
