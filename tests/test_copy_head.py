"""The copy-head ModernBERT: a proper distribution, copying from visible tokens, training, saving, loading."""

from __future__ import annotations

import pytest
import torch

import structgen as sg
from structgen.models.copy_head import ARCHITECTURE, ModernBertWithCopyHead
from structgen.train.config import TrainConfig
from structgen.train.model_init import build_model
from structgen.train.objective import llada_loss, masked_logits

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MASK = 4


def _model(seed: int = 0, neighbours: bool = False, convert: bool = False, maps: int = 1,
           topk: int = 0, lookup: bool = False) -> ModernBertWithCopyHead:
    from transformers import ModernBertConfig

    torch.manual_seed(seed)
    cfg = ModernBertConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, layer_types=["full_attention"] * 2, pad_token_id=0,
                           eos_token_id=1, sep_token_id=1, bos_token_id=None, cls_token_id=None,
                           attn_implementation="sdpa", copy_head_mask_id=MASK,
                           copy_head_neighbours=neighbours, copy_head_convert=convert,
                           copy_head_convert_maps=maps, copy_head_convert_topk=topk, copy_head_lookup=lookup)
    return ModernBertWithCopyHead(cfg).eval()


def _ids():
    ids = torch.tensor([[10, 11, 12, 13, MASK, MASK, MASK], [20, 21, MASK, MASK, MASK, 0, 0]])
    att = torch.tensor([[1] * 7, [1] * 5 + [0, 0]])
    return ids, att


@pytest.mark.parametrize("convert, maps", [(False, 1), (True, 1), (True, 3)])
def test_logits_are_the_log_of_a_distribution_everywhere(convert, maps):
    m = _model(convert=convert, maps=maps)
    ids, att = _ids()
    p = m(input_ids=ids, attention_mask=att).logits.exp()
    assert p.shape == (2, 7, 50) and torch.allclose(p.sum(-1), torch.ones(2, 7), atol=1e-4)
    all_masked = m(input_ids=torch.full((1, 5), MASK)).logits.exp()  # nothing to copy: the generator alone
    assert torch.allclose(all_masked.sum(-1), torch.ones(1, 5), atol=1e-4)


def test_copying_puts_mass_on_visible_tokens_only():
    m = _model()
    with torch.no_grad():
        m.copy_gate.bias.fill_(-30.0)  # always copy
    ids, att = _ids()
    with torch.no_grad():
        p = m(input_ids=ids, attention_mask=att).logits.exp()
    assert p[0, 5, [10, 11, 12, 13]].sum() == pytest.approx(1.0, abs=1e-4)  # row 0's visible tokens
    assert p[1, 3, [20, 21]].sum() == pytest.approx(1.0, abs=1e-4)  # not padding, not masks, not row 0
    assert p[0, 1, 11] < 1e-6  # a visible position never copies itself
    with torch.no_grad():
        lone = m(input_ids=torch.tensor([[7, MASK, MASK]])).logits.exp()  # one visible token: copy it, or itself
    assert lone[0, 1, 7] == pytest.approx(1.0, abs=1e-4) and torch.allclose(lone.sum(-1), torch.ones(1, 3), atol=1e-4)


@pytest.mark.parametrize("neighbours, convert, maps", [(False, False, 1), (True, False, 1), (True, True, 1),
                                                       (True, True, 2)])
def test_tail_path_matches_the_full_forward(neighbours, convert, maps):
    """Inference asks for the canvas rows only: the pointer's queries and the mixture from ``start`` on."""
    m = _model(neighbours=neighbours, convert=convert, maps=maps)
    ids, att = _ids()
    with torch.no_grad():
        full = m(input_ids=ids, attention_mask=att).logits
        for start in (0, 2, 6):
            assert torch.allclose(m.tail_log_probs(ids, att, start), full[:, start:], atol=1e-5)


@pytest.mark.parametrize("neighbours, convert, maps", [(False, False, 1), (True, False, 1), (True, True, 1),
                                                       (True, True, 2)])
def test_sparse_training_path_matches_the_full_forward_and_trains_the_pointer(neighbours, convert, maps):
    m = _model(neighbours=neighbours, convert=convert, maps=maps).train()
    ids, att = _ids()
    masked = ids == MASK
    sparse = masked_logits(m, ids, att, masked)
    full = m(input_ids=ids, attention_mask=att).logits[masked]
    assert torch.allclose(sparse, full, atol=1e-5)
    target = torch.tensor([10, 11, 12, 20, 21, 20])  # tokens that are visible in their rows
    torch.nn.functional.cross_entropy(sparse, target).backward()
    assert m.copy_q.weight.grad.abs().sum() > 0 and m.copy_gate.weight.grad.abs().sum() > 0
    if convert:
        assert m.copy_convert.weight.grad.abs().sum() > 0 and m.copy_convert_gate.weight.grad.abs().sum() > 0
    if maps > 1:  # the slot's choice of map learns too
        assert m.copy_convert_pick.weight.grad.abs().sum() > 0
    if neighbours:  # a masked position after a repeated token (10) matches a source: the bonus trains too
        m.zero_grad()
        ids = torch.tensor([[10, 11, 12, 10, MASK, MASK]])
        logp = masked_logits(m, ids, None, ids == MASK)
        torch.nn.functional.cross_entropy(logp, torch.tensor([11, 12])).backward()
        assert m.copy_neighbour.bias.grad.abs().sum() > 0


def _copy_only(neighbours: bool) -> ModernBertWithCopyHead:
    """A copy head that always copies, with no content preference: the pointer is uniform over the
    visible tokens unless the neighbour bonuses say otherwise."""
    m = _model(neighbours=neighbours)
    with torch.no_grad():
        m.copy_gate.bias.fill_(-30.0)
        m.copy_q.weight.zero_()
    return m


@pytest.mark.parametrize("canvas, at, expected", [
    ([11, MASK, MASK], 1, 12),  # left neighbour 11: continue the span after the source's 11
    ([MASK, 12, 13, MASK, MASK], 3, 14),  # two left neighbours (12 13): the source's successor 14
    ([MASK, 13, MASK], 0, 12),  # right neighbour 13: the token before the source's 13
    ([MASK, MASK, 11, 12], 1, 10),  # grows leftwards from a span committed on the right
])
def test_neighbour_bonuses_continue_a_span_of_the_prompt(canvas, at, expected):
    prompt = [10, 11, 12, 13, 14, 5]  # 5: a separator
    ids = torch.tensor([prompt + canvas])
    with torch.no_grad():
        plain = _copy_only(False)(input_ids=ids).logits.exp()[0, len(prompt) + at]
        spans = _copy_only(True)(input_ids=ids).logits.exp()[0, len(prompt) + at]
    assert spans.argmax() == expected and spans[expected] > 0.5  # the span's next token, clearly
    assert plain[expected] < 0.3  # without the bonuses: spread over every visible token


def test_neighbour_bonuses_ignore_masks_and_padding():
    """Masked and padded neighbours match nothing, not each other: a position between masks gets no bonus."""
    m = _copy_only(True)
    ids = torch.tensor([[10, MASK, 11, 0, 12, MASK, MASK, MASK, 0]])
    att = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1, 0]])
    with torch.no_grad():
        with_w = m(input_ids=ids, attention_mask=att).logits.exp()[0, 6]
        m.copy_neighbour.bias.zero_()
        m.copy_neighbour.weight.zero_()
        without = m(input_ids=ids, attention_mask=att).logits.exp()[0, 6]
    assert torch.allclose(with_w, without, atol=1e-6)


def test_a_model_with_a_copy_head_learns_to_copy_unseen_tokens():
    """Copy a token across a separator: the pointer copies token ids never seen in training, which a
    vocabulary head cannot (it never learnt to output them)."""
    m = _model(1).train()
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(200):
        w = torch.randint(10, 40, (16, 1), generator=gen)  # training tokens: 10..39
        ids = torch.cat([torch.full((16, 1), 3), w, torch.full((16, 1), 2), w, torch.ones(16, 2, dtype=torch.long)], 1)
        canvas = torch.zeros_like(ids, dtype=torch.bool)
        canvas[:, 3:] = True
        loss, _ = llada_loss(m, ids, torch.ones_like(ids), canvas, MASK, generator=gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    w = torch.arange(40, 50)[:, None]  # never seen in training
    ids = torch.cat([torch.full((10, 1), 3), w, torch.full((10, 1), 2), torch.full((10, 3), MASK)], 1)
    with torch.no_grad():
        pred = m(input_ids=ids).logits[:, 3].argmax(-1)
    assert (pred == w[:, 0]).float().mean() >= 0.9


#: the form tokens of ``_token_map_accuracy``: after ``2`` the answer is ``w + 20``, after ``5`` ``w + 10``
FORMS = {2: 20, 5: 10}


def _token_map_accuracy(m: ModernBertWithCopyHead, steps: int, forms: tuple[int, ...] = (2,)) -> float:
    """Train ``m`` with the LLaDA loss (mask_power 0.5, as the small recipe) on ``w -> w + 20`` (w in
    10..19; prompt ``3 w 2``, canvas ``w+20 EOS EOS``), then the share of w whose answer, decoded from an
    empty canvas, is right. ``w + 20`` is never visible: it is converted, not copied. With ``forms=(2, 5)``
    half the prompts end in ``5`` and want ``w + 10``: one word, two conversions (``FORMS``)."""
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    shift = torch.tensor([FORMS[f] for f in forms])
    for _ in range(steps):
        w = torch.randint(10, 20, (16, 1), generator=gen)
        f = torch.randint(0, len(forms), (16, 1), generator=gen)
        ids = torch.cat([torch.full((16, 1), 3), w, torch.tensor(forms)[f], w + shift[f],
                         torch.ones(16, 2, dtype=torch.long)], 1)
        canvas = torch.zeros_like(ids, dtype=torch.bool)
        canvas[:, 3:] = True
        loss, _ = llada_loss(m, ids, torch.ones_like(ids), canvas, MASK, generator=gen, mask_power=0.5)
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    right = []
    for form in forms:
        w = torch.arange(10, 20)[:, None]
        ids = torch.cat([torch.full((10, 1), 3), w, torch.full((10, 1), form), torch.full((10, 3), MASK)], 1)
        with torch.no_grad():
            pred = m(input_ids=ids).logits[:, 3].argmax(-1)
        right.append(pred == w[:, 0] + FORMS[form])
    return torch.cat(right).float().mean().item()


def _learnt_in(seeds: tuple[int, ...], steps: int, maps: int = 1, forms: tuple[int, ...] = (2,)) -> list[float]:
    """``_token_map_accuracy`` of a conversion-path model (pointer loss 0.3) from each seed. A model this
    small learns the map from most seeds, not from all, and which ones depends on the CPU's float rounding
    too (seed 1 learnt it on one machine and wrote 0% on another; at 600 steps seeds 0-7 wrote 70, 100,
    100, 20, 80, 80, 100 and 30% on an AMD EPYC, at 1,200 steps 90-100% every one)."""
    out = []
    for seed in seeds:
        m = _model(seed, convert=True, maps=maps)
        m.config.copy_head_pointer_loss = 0.3
        assert m.pointer_loss_weight == 0.3
        out.append(_token_map_accuracy(m, steps, forms=forms))
    return out


def test_the_conversion_path_with_its_pointer_loss_learns_a_token_map():
    """The plain copy head writes one constant here for a thousand steps (benchmarks/conversion_task.py);
    the conversion path, trained by the pointer loss too, reads each source token and maps it."""
    got = _learnt_in((2, 3, 4), 1200)
    assert sum(round(a, 4) >= 0.9 for a in got) >= 2, got  # 9 of 10 is 0.8999999 in float32


def test_a_slot_that_picks_one_map_gets_that_maps_conversion():
    """With K maps, a slot's converted tokens are its pick's mixture of what each map reads off the source:
    a pick of one map alone gives that map's conversion, which a one-map model with its weights gives too."""
    two = _model(neighbours=True, convert=True, maps=2)
    one = _model(neighbours=True, convert=True)
    ids, att = _ids()
    d = two.config.hidden_size
    for k in (0, 1):
        state = {n: v for n, v in two.state_dict().items() if not n.startswith("copy_convert_pick")}
        state["copy_convert.weight"] = two.copy_convert.weight[k * d:(k + 1) * d]
        one.load_state_dict(state)
        with torch.no_grad():
            two.copy_convert_pick.weight.zero_()
            two.copy_convert_pick.bias.copy_(torch.tensor([30.0, -30.0] if k == 0 else [-30.0, 30.0]))
            assert torch.allclose(two(input_ids=ids, attention_mask=att).logits,
                                  one(input_ids=ids, attention_mask=att).logits, atol=1e-4)


def test_two_maps_let_one_word_convert_two_ways():
    """One map per source writes one conversion of a word wherever it is read, so at most half of these
    answers can be right: the prompt's last token asks for ``w + 20`` or ``w + 10``. With two maps the
    slot picks the one its context asks for. The maps do not part from every seed of a model this small,
    and which seeds part depends on the CPU (seeds 0-7 after 900 steps on an AMD EPYC: 5, 5, 60, 100, 100,
    55, 10 and 75%; seeds 0, 2 and 3 gave two of three above 90% on an Intel Xeon), so one seed of three
    above the one-map ceiling of 50%, at 90% or more, shows that the maps can part."""
    got = _learnt_in((2, 3, 4), 900, maps=2, forms=(2, 5))
    assert max(round(a, 4) for a in got) >= 0.9, got  # 9 of 10 is 0.8999999 in float32


def test_the_pointer_loss_trains_only_in_training_mode():
    """Held-out losses (eval mode) stay the mixture's alone, comparable with models without the path."""
    m = _model(convert=True)
    m.config.copy_head_pointer_loss = 0.3
    ids = torch.tensor([[3, 12, 2, 32, 1, 1]] * 4)
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 3:] = True
    losses = {}
    for mode, w in (("train", 0.3), ("eval", 0.3), ("train-off", 0.0)):
        m.train(mode != "eval")
        m.config.copy_head_pointer_loss = w
        with torch.no_grad():
            losses[mode], _ = llada_loss(m, ids, torch.ones_like(ids), canvas, MASK,
                                         generator=torch.Generator().manual_seed(0))
    assert losses["eval"] == pytest.approx(losses["train-off"].item())
    assert losses["train"] > losses["train-off"]


def test_the_pointer_loss_skips_the_eos_tail():
    """On EOS targets (most of a real canvas) the pointer term mirrors the mixture's, without gradient of
    its own: trained there, every source learnt to 'convert' to EOS (training log, run 18)."""
    m = _model(convert=True).train()
    ids = torch.tensor([[3, 12, 2, 1, 1, 1, 1]] * 4)  # the canvas is all EOS
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 3:] = True

    def loss(weight, eos_id):
        m.config.copy_head_pointer_loss = weight
        out, _ = llada_loss(m, ids, torch.ones_like(ids), canvas, MASK, eos_id=eos_id,
                            generator=torch.Generator().manual_seed(0))
        return out

    mixture = loss(0.0, 1)
    assert loss(0.3, 1).item() == pytest.approx(1.3 * mixture.item(), rel=1e-5)
    m.zero_grad()
    loss(0.3, 1).backward()
    with_skip = m.copy_convert.weight.grad.clone()
    m.zero_grad()
    loss(0.0, 1).backward()
    assert torch.allclose(with_skip, m.copy_convert.weight.grad, atol=1e-7)  # no gradient of its own
    assert loss(0.3, None).item() != pytest.approx(1.3 * mixture.item(), rel=1e-5)  # EOS too: its own term


@pytest.mark.parametrize("neighbours, convert, maps", [(False, False, 1), (True, False, 1), (True, True, 1),
                                                       (True, True, 2)])
def test_trained_and_saved_it_loads_through_load_model(tmp_path, neighbours, convert, maps):
    from test_train import TrainData, person_examples, train

    data = TrainData(person_examples(16), person_examples(2, 1))
    cfg = TrainConfig.tiny(copy_head=True, copy_neighbours=neighbours, copy_convert=convert, convert_maps=maps,
                           steps=4)
    report = train(cfg, tmp_path / "m", progress=False, data=data)
    assert report.steps == 4
    model = sg.load_model(tmp_path / "m", device="cpu")
    assert isinstance(model.model, ModernBertWithCopyHead)
    assert hasattr(model.model, "copy_neighbour") == neighbours  # the bonuses' weights saved and loaded
    assert hasattr(model.model, "copy_convert") == convert  # and the conversion path's
    assert model.model.convert_maps == maps and hasattr(model.model, "copy_convert_pick") == (maps > 1)
    assert model.model.config.architectures == [ARCHITECTURE]
    assert model.model.config.copy_head_mask_id == model.mask_id
    r = sg.Generator(model).generate("Maria Lopez, 41", sg.JsonSchema({"type": "object", "properties": {
        "name": {"type": "string"}}, "required": ["name"]}), max_tokens=16)
    assert r.valid
    fresh = build_model(model.tokenizer, TrainConfig.tiny(copy_head=True))
    assert isinstance(fresh, ModernBertWithCopyHead)
    assert not isinstance(build_model(model.tokenizer, TrainConfig.tiny()), ModernBertWithCopyHead)


def test_the_config_and_the_cli_refuse_maps_without_the_conversion_path(tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app
    from structgen.errors import ConfigError

    with pytest.raises(ConfigError, match="set copy_convert=True too"):
        TrainConfig.small(convert_maps=2)
    with pytest.raises(ConfigError, match="convert_maps must be a positive integer"):
        TrainConfig.small(copy_convert=True, convert_maps=0)
    assert TrainConfig.small(copy_convert=True, convert_maps=2).convert_maps == 2
    bad = CliRunner().invoke(app, ["train", "--convert-maps", "2", "--out", str(tmp_path / "z")])
    assert bad.exit_code == 2 and "--convert-path" in bad.output and not (tmp_path / "z").exists()


@pytest.mark.parametrize("maps", [1, 2])
def test_the_packed_conversion_is_the_pointer_weighted_sum_of_the_sources_maps(maps):
    """``_converted`` runs its products over the reading positions alone, packed per row, in any order the
    positions come in; the result is ``sum_k m_ik sum_j a_ij conv_jk`` as the module docstring writes it."""
    m = _model(neighbours=True, convert=True, maps=maps)
    ids, att = _ids()
    B, L = ids.shape
    with torch.no_grad():
        hidden = m.model(input_ids=ids, attention_mask=att).last_hidden_state
        g = torch.Generator().manual_seed(0)
        rows = torch.tensor([1, 0, 1, 0, 0, 1])  # not grouped by row, rows of unequal counts
        attn = torch.softmax(torch.randn(len(rows), L, generator=g), dim=-1)
        slot = torch.randn(len(rows), hidden.shape[-1], generator=g)
        got = m._converted(hidden, ids, attn, rows, slot=slot)
        own = m.model.embeddings.norm(m.model.embeddings.tok_embeddings(ids))
        maps_ = m.copy_convert(torch.cat([hidden, own], dim=-1)).view(B, L, maps, -1)
        conv = torch.softmax(m.decoder(m.head(maps_)).float(), dim=-1)  # [B, L, K, V]
        pick = (torch.softmax(m.copy_convert_pick(slot), dim=-1) if maps > 1 else torch.ones(len(rows), 1))
        want = torch.einsum("nl,nk,nlkv->nv", attn, pick, conv[rows])
    assert torch.allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("maps", [1, 2])
def test_the_top_k_conversion_reads_only_the_heaviest_sources(maps):
    """``convert_topk`` = k: each position's conversion is ``sum_k m_ik sum_{j in top_k(a_i)} a_ij conv_jk``
    (not renormalised), the dense value wherever the pointer's weight sits on k sources or fewer; the same
    products feed the gradient."""
    dense, top = _model(convert=True, maps=maps), _model(convert=True, maps=maps, topk=2)
    top.load_state_dict(dense.state_dict())
    ids, att = _ids()
    B, L = ids.shape
    with torch.no_grad():
        hidden = dense.model(input_ids=ids, attention_mask=att).last_hidden_state
    g = torch.Generator().manual_seed(1)
    rows = torch.tensor([1, 0, 1, 0, 0, 1])
    slot = torch.randn(len(rows), hidden.shape[-1], generator=g)
    attn = torch.softmax(torch.randn(len(rows), L, generator=g), dim=-1)
    with torch.no_grad():
        want_full = dense._converted(hidden, ids, attn, rows, slot=slot)
        kept = torch.zeros_like(attn).scatter(1, attn.topk(2, dim=-1).indices, 1.0) * attn
        want = dense._converted(hidden, ids, kept, rows, slot=slot)  # dense over the top two alone
        got = top._converted(hidden, ids, attn, rows, slot=slot)
        two = top._converted(hidden, ids, kept, rows, slot=slot)  # weight on two sources: the dense value
    assert torch.allclose(got, want, atol=1e-6) and not torch.allclose(got, want_full, atol=1e-3)
    assert torch.allclose(two, dense._converted(hidden, ids, kept, rows, slot=slot), atol=1e-6)
    assert (got.sum(-1) <= 1 + 1e-5).all() and torch.allclose(got.sum(-1), kept.sum(-1), atol=1e-5)


def test_a_top_k_model_trains_and_its_logits_stay_finite():
    m = _model(neighbours=True, convert=True, topk=2).train()
    ids, att = _ids()
    masked = ids == MASK
    parts = m.masked_log_probs(ids, att, masked, pointer=True)
    assert torch.isfinite(parts.mixed).all() and (parts.mixed.exp().sum(-1) <= 1 + 1e-4).all()
    parts.mixed[:, 5].sum().neg().backward()
    assert m.copy_convert.weight.grad.abs().sum() > 0
    m.eval()
    with torch.no_grad():
        logits = m(input_ids=ids, attention_mask=att).logits
    assert torch.isfinite(logits).all()


def test_the_config_refuses_top_k_without_the_conversion_path():
    from structgen.errors import ConfigError

    with pytest.raises(ConfigError, match="set copy_convert=True too"):
        TrainConfig.small(convert_topk=4)
    with pytest.raises(ConfigError, match="convert_topk must be an integer >= 0"):
        TrainConfig.small(copy_convert=True, convert_topk=-1)
    from structgen.train.model_init import model_config

    cfg = TrainConfig.tiny(copy_head=True, copy_convert=True, convert_topk=4)

    class _Tok:  # what model_config reads off a tokenizer
        pad_token_id, eos_token_id, mask_token_id = 0, 1, MASK

        def __len__(self):
            return 64

    assert model_config(_Tok(), cfg).copy_head_convert_topk == 4
    assert model_config(_Tok(), TrainConfig.tiny(copy_head=True)).copy_head_convert_topk == 0
