"""The copy head's lookup: the generator reading the visible tokens themselves (``copy_head_lookup``)."""

from __future__ import annotations

import pytest
import torch

import structgen as sg
from structgen.errors import ConfigError
from structgen.models.copy_head import ModernBertWithCopyHead
from structgen.train.config import TrainConfig
from structgen.train.objective import llada_loss, masked_logits

from test_copy_head import MASK, _ids  # the same small rows: a prompt, masks, padding
from test_copy_head import _model as copy_head_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _model(seed: int = 0, lookup: bool = True, awake: bool = True) -> ModernBertWithCopyHead:
    """``test_copy_head``'s small copy-head model (with the neighbour bonuses) and the lookup; ``awake`` gives
    its value map (zero at initialisation) random weights, so that the lookup changes the logits."""
    m = copy_head_model(seed, neighbours=True, lookup=lookup)
    if lookup and awake:
        with torch.no_grad():
            m.lookup_v.weight.normal_(std=0.5)
    return m


def test_an_untrained_lookup_is_the_plain_generator():
    """Its value map starts at zero: a model trained with --lookup starts where one without it does."""
    with_it = _model(awake=False)
    without = _model(lookup=False)
    missing, unexpected = without.load_state_dict(with_it.state_dict(), strict=False)
    assert not missing and sorted(unexpected) == ["lookup_k.weight", "lookup_q.weight", "lookup_v.weight"]
    ids, att = _ids()
    with torch.no_grad():
        assert torch.allclose(with_it(input_ids=ids, attention_mask=att).logits,
                              without(input_ids=ids, attention_mask=att).logits, atol=1e-6)
        with_it.lookup_v.weight.normal_(std=0.5)
        assert not torch.allclose(with_it(input_ids=ids, attention_mask=att).logits,
                                  without(input_ids=ids, attention_mask=att).logits, atol=1e-3)


def test_logits_stay_a_distribution_and_the_tail_path_matches_the_full_forward():
    m = _model()
    ids, att = _ids()
    with torch.no_grad():
        full = m(input_ids=ids, attention_mask=att).logits
        assert torch.allclose(full.exp().sum(-1), torch.ones(2, 7), atol=1e-4)
        for start in (0, 2, 6):  # inference asks for the canvas only: queries from ``start`` on
            assert torch.allclose(m.tail_log_probs(ids, att, start), full[:, start:], atol=1e-5)
        assert torch.isfinite(m(input_ids=torch.full((1, 4), MASK)).logits).all()  # nothing visible to read


def test_the_lookup_reads_visible_tokens_only_and_trains():
    m = _model().train()
    ids, att = _ids()
    masked = ids == MASK
    parts = m.masked_log_probs(ids, att, masked, pointer=True)
    assert torch.allclose(parts.mixed, m(input_ids=ids, attention_mask=att).logits[masked], atol=1e-5)
    w = parts.lookup  # [N, L]: each masked position's weights over its row
    assert w.shape == (6, 7) and torch.allclose(w.sum(-1), torch.ones(6), atol=1e-5)
    assert (w[:3, 4:] == 0).all() and (w[:3, :4] > 0).all()  # row 0: its four prompt tokens, not masks
    assert (w[3:, 2:] == 0).all()  # row 1: not masks, not padding
    target = torch.tensor([30, 31, 32, 33, 34, 35])
    torch.nn.functional.cross_entropy(masked_logits(m, ids, att, masked), target).backward()
    for lin in (m.lookup_q, m.lookup_k, m.lookup_v):
        assert lin.weight.grad.abs().sum() > 0


def test_the_source_loss_trains_the_lookups_weights_too():
    """With sources, the lookup is told which request words a value was rendered from, as the pointer is."""
    m = _model().train()
    ids = torch.tensor([[3, 12, 2, 32, 1, 1]] * 4)
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 3:] = True
    sources = torch.zeros(4, 6, 6, dtype=torch.bool)
    sources[:, 3, 1] = True  # the value at position 3 comes from the word at position 1

    def grads(weight: float, on: str = "both") -> tuple[float, float]:
        """The lookup's and the pointer's key gradients."""
        m.zero_grad()
        loss, _ = llada_loss(m, ids, torch.ones_like(ids), canvas, MASK, generator=torch.Generator().manual_seed(0),
                             sources=sources, source_loss=weight, eps=0.999,  # every canvas position masked
                             source_loss_on=on)
        loss.backward()
        return m.lookup_k.weight.grad.abs().sum().item(), m.copy_k.weight.grad.abs().sum().item()

    lookup0, pointer0 = grads(0.0)
    lookup1, pointer1 = grads(1.0)
    assert lookup1 > lookup0 * 1.01 and pointer1 > pointer0 * 1.01
    assert grads(1.0, "pointer") == pytest.approx((lookup0, pointer1))  # --source-loss-on pointer
    assert grads(1.0, "lookup") == pytest.approx((lookup1, pointer0))  # --source-loss-on lookup


def test_the_config_refuses_a_source_loss_target_it_cannot_train():
    assert TrainConfig.small(lookup=True, source_loss=0.5, source_loss_on="lookup").source_loss_on == "lookup"
    with pytest.raises(ConfigError, match="set lookup=True"):
        TrainConfig.small(source_loss=0.5, source_loss_on="lookup")
    with pytest.raises(ConfigError, match="source_loss_on must be"):
        TrainConfig.small(lookup=True, source_loss=0.5, source_loss_on="generator")


def test_the_lookup_learns_a_token_map_the_plain_copy_head_does_not():
    """``w -> w + 20`` with ``w + 20`` never visible: the plain copy head writes a constant for a thousand
    steps (benchmarks/conversion_task.py); with the lookup the generator reads ``w`` and maps it."""
    from test_copy_head import _token_map_accuracy

    got = [_token_map_accuracy(_model(seed, awake=False), 400) for seed in (0, 1, 2)]
    assert sum(round(a, 4) >= 0.9 for a in got) >= 2, got


def test_trained_saved_and_loaded_it_keeps_the_lookup(tmp_path):
    from test_train import TrainData, person_examples, train

    data = TrainData(person_examples(16), person_examples(2, 1))
    cfg = TrainConfig.tiny(copy_head=True, lookup=True, source_loss=0.5, steps=4)
    assert train(cfg, tmp_path / "m", progress=False, data=data).steps == 4
    model = sg.load_model(tmp_path / "m", device="cpu")
    assert model.model.config.copy_head_lookup is True and hasattr(model.model, "lookup_v")
    r = sg.Generator(model).generate("Maria Lopez, 41", sg.JsonSchema({"type": "object", "properties": {
        "name": {"type": "string"}}, "required": ["name"]}), max_tokens=16)
    assert r.valid


def test_the_config_and_the_cli_refuse_a_lookup_without_the_copy_head(tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app

    with pytest.raises(ConfigError, match="lookup .*copy_head=True"):
        TrainConfig.tiny(lookup=True)
    assert TrainConfig.small(lookup=True).lookup
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--lookup", "--out", str(tmp_path / "z")])
    assert bad.exit_code != 0 and "copy_head=True" in bad.output and not (tmp_path / "z").exists()


def _on_prompt() -> ModernBertWithCopyHead:
    """The lookup reading the request only (``copy_head_lookup_prompt``, ``--lookup-keys prompt``)."""
    m = _model()
    m.config.copy_head_lookup_prompt = True
    return m


def test_a_lookup_on_the_prompt_never_reads_the_canvas():
    """Run 33's lookup read the canvas digit beside a date's month slot; on the prompt only, it cannot."""
    m = _on_prompt()
    ids = torch.tensor([[10, 11, 12, 13, 14, MASK, MASK]])  # a prompt of 4, a committed canvas token at 4
    masked = ids == MASK
    prompt = torch.arange(7)[None] < 4
    on_prompt = m.masked_log_probs(ids, None, masked, pointer=True, prompt=prompt).lookup
    everywhere = m.masked_log_probs(ids, None, masked, pointer=True).lookup  # no boundary given: as before
    assert (on_prompt[:, 4:] == 0).all() and (on_prompt[:, :4] > 0).all()
    assert (everywhere[:, 4] > 0).all()
    with torch.no_grad():  # inference: the sampler's start is the boundary, and forward takes it too
        full = m(input_ids=ids, prompt_length=4).logits
        assert torch.allclose(m.tail_log_probs(ids, None, 4), full[:, 4:], atol=1e-5)
        assert not torch.allclose(full, m(input_ids=ids).logits, atol=1e-4)
    plain = _model()  # a lookup over every visible token ignores the boundary
    with torch.no_grad():
        assert torch.allclose(plain(input_ids=ids, prompt_length=4).logits, plain(input_ids=ids).logits)


def test_training_gives_the_lookup_the_request_before_any_prefix():
    """``llada_loss`` marks the prompt as the rows' non-canvas positions; a response prefix moved into the
    prompt (``prefix_share``) stays outside it, as the sampler's start leaves a committed block outside."""
    m = _on_prompt().train()
    seen = []
    inner = m.masked_log_probs

    def spy(*args, prompt=None, **kw):
        seen.append(prompt)
        return inner(*args, prompt=prompt, **kw)

    m.masked_log_probs = spy
    ids, att = torch.tensor([[10, 11, 12, 30, 31, 1, 0]] * 3), torch.tensor([[1] * 6 + [0]] * 3)
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 3:6] = True
    for prefix, sources in ((0.0, None), (1.0, torch.zeros(3, 7, 7, dtype=torch.bool))):
        llada_loss(m, ids, att, canvas, MASK, generator=torch.Generator().manual_seed(0), prefix_share=prefix,
                   eos_id=1, sources=sources, source_loss=0.5 if sources is not None else 0.0)
        assert torch.equal(seen[-1], (att > 0) & ~canvas)


def test_the_config_refuses_prompt_keys_without_the_lookup(tok4k):
    from structgen.train.model_init import model_config

    assert model_config(tok4k, TrainConfig.small(lookup=True, lookup_keys="prompt")).copy_head_lookup_prompt is True
    assert model_config(tok4k, TrainConfig.small(lookup=True)).copy_head_lookup_prompt is False
    with pytest.raises(ConfigError, match="set lookup=True"):
        TrainConfig.small(lookup_keys="prompt")
    with pytest.raises(ConfigError, match="lookup_keys must be"):
        TrainConfig.small(lookup=True, lookup_keys="canvas")
