"""LLaDA's objective as the trainer uses it (``structgen.train.objective``): which positions the noise masks,
at what rate, the prefix and frontier rows, and the loss's weighting; on toy batches, no model."""

from __future__ import annotations

import math

import pytest
import torch

from structgen.errors import ConfigError
from structgen.train.config import TrainConfig
from structgen.train.objective import add_noise, diffusion_loss

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _toy_batch(B=8, P=5, T=12, L=20, pad=2):
    ids = torch.randint(10, 90, (B, L))
    canvas = torch.zeros(B, L, dtype=torch.bool)
    canvas[:, P:P + T] = True
    ids[:, P + T:] = pad
    return ids, canvas


def test_noise_masks_only_canvas_and_at_least_one_per_row():
    ids, canvas = _toy_batch(B=256, T=3)
    gen = torch.Generator().manual_seed(0)
    n = add_noise(ids, canvas, mask_id=1, eps=1e-3, generator=gen)
    assert not (n.masked & ~canvas).any(), "a prompt or pad position was masked"
    assert n.masked.any(dim=1).all(), "a row has no masked position"
    assert (n.ids[n.masked] == 1).all() and torch.equal(n.ids[~n.masked], ids[~n.masked])
    assert ((n.p >= 1e-3) & (n.p <= 1)).all()


def test_mask_rate_follows_t():
    B, T = 32, 4000
    ids = torch.randint(10, 90, (B, T + 4))
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 4:] = True
    n = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(1))
    rate = n.masked.sum(dim=1).float() / T
    assert torch.allclose(rate, n.p, atol=0.03), (rate, n.p)
    assert n.p.std() > 0.1  # t is drawn per row, not once per batch


def test_mask_power_draws_rows_towards_an_empty_canvas():
    ids, canvas = _toy_batch(B=4000, T=3)
    plain = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(5))
    same = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(5), mask_power=1.0)
    assert torch.equal(plain.p, same.p)  # the default is LLaDA's uniform t, the same draws
    high = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(5), mask_power=0.5)
    assert abs(float(plain.p.mean()) - 0.5) < 0.02 and abs(float(high.p.mean()) - 2 / 3) < 0.02  # E[u^a] = 1/(1+a)
    assert float((high.p > 0.9).float().mean()) == pytest.approx(1 - 0.9 ** 2, abs=0.03)
    with pytest.raises(ConfigError, match="mask_power"):
        TrainConfig.tiny(mask_power=0.0)


def test_prefix_rows_keep_a_prefix_of_the_answer_visible_and_normalise_by_what_remains():
    B, T, EOS = 400, 12, 0
    ids = torch.randint(10, 90, (B, 3 + T))
    ids[:, 3 + 8:] = EOS  # 8 answer tokens, then an EOS tail
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 3:] = True
    plain = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(3))
    assert torch.equal(plain.canvas, canvas)  # prefix_share=0: the plain LLaDA objective, same draws
    same = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(3), prefix_share=0.0)
    assert torch.equal(same.masked, plain.masked)
    n = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(3), prefix_share=0.5, eos_id=EOS)
    cut = T - n.canvas.sum(dim=1)  # how many answer tokens became prompt
    assert (n.canvas <= canvas).all() and not (n.masked & ~n.canvas).any() and n.masked.any(dim=1).all()
    for row in range(B):  # what was removed is a prefix of the canvas
        kept = n.canvas[row, 3:].nonzero().flatten()
        assert kept.tolist() == list(range(int(cut[row]), T))
    assert 0.3 < (cut > 0).float().mean() < 0.6  # about half the rows (cut 0 also happens)
    assert int(cut.max()) <= 8 and int(cut.max()) >= 7  # cuts fall inside the answer (0..8), not the EOS tail
    V = 100
    logits = torch.zeros(int(n.masked.sum()), V)
    per_row = diffusion_loss(logits, ids[n.masked], n, n.canvas.sum(1), per_row=True)
    assert torch.allclose(per_row, n.masked.sum(1) * math.log(V) / (n.p * n.canvas.sum(1)), rtol=1e-5)


def test_frontier_rows_are_the_states_the_samplers_visit():
    B, T, EOS, BLOCK = 600, 80, 0, 16
    ids = torch.randint(10, 90, (B, 3 + T))
    ids[:, 3 + 50:] = EOS  # 50 answer tokens, then an EOS tail
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 3:] = True
    plain = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(4))
    off = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(4), frontier_share=0.0)
    assert torch.equal(off.masked, plain.masked) and off.q is None  # share 0: LLaDA's draws, unchanged
    n = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(4), frontier_share=1.0,
                  frontier_block=BLOCK, eos_id=EOS, mask_power=0.5)
    assert not (n.masked & ~canvas).any() and n.masked.any(dim=1).all()
    kinds = {"frontier": 0, "block": 0}
    for row in range(B):
        m = n.masked[row, 3:]
        first = int(m.nonzero()[0])
        q = n.q[row, 3:]
        if (q[first:] == 1).all():  # a frontier: every position from the first mask on, each certain
            kinds["frontier"] += 1
            assert first <= 50 and m[first:].all()
            continue
        kinds["block"] += 1  # a block: nothing before its block, its block at random, every later one masked
        start = first // BLOCK * BLOCK
        assert not m[:start].any() and m[start + BLOCK:].all() and (q[start + BLOCK:] == 1).all()
        random_in_block = m[start:start + BLOCK] & (q[start:start + BLOCK] < 1)
        assert torch.allclose(q[start:start + BLOCK][random_in_block], n.p[row].expand(int(random_in_block.sum())))
    assert 0.4 < kinds["block"] / B < 0.6, kinds
    V = 100
    logits = torch.zeros(int(n.masked.sum()), V)
    per_row = diffusion_loss(logits, ids[n.masked], n, canvas.sum(1), per_row=True)
    want = torch.stack([(1.0 / n.q[r][n.masked[r]]).sum() for r in range(B)]) * math.log(V) / T
    assert torch.allclose(per_row, want, rtol=1e-5)
    for bad in (dict(frontier_share=1.5), dict(frontier_block=0)):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            TrainConfig.tiny(**bad)


def test_loss_is_ce_over_masked_weighted_by_one_over_p_and_normalised_by_canvas():
    ids, canvas = _toy_batch(B=6, T=10)
    n = add_noise(ids, canvas, mask_id=1, generator=torch.Generator().manual_seed(2))
    V = 100
    logits = torch.zeros(int(n.masked.sum()), V)  # uniform: CE = log V at every masked position
    per_row = diffusion_loss(logits, ids[n.masked], n, canvas.sum(1), per_row=True)
    expected = n.masked.sum(1) * math.log(V) / (n.p * 10)
    assert torch.allclose(per_row, expected, rtol=1e-5)
    mean = diffusion_loss(logits, ids[n.masked], n, canvas.sum(1))
    assert torch.isclose(mean, expected.mean(), rtol=1e-5)
