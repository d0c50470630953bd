"""Training: batching (prompt ids identical to inference), the sparse head, the tokenizer, determinism, the
atomic save, and a tiny end-to-end run whose saved model loads with ``sg.load_model`` and generates (the
objective itself: test_train_objective.py)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import torch

import structgen as sg
from structgen.errors import ConfigError, StructgenError
from structgen.train.batches import (PromptEncoder, assemble, batch_stream, curriculum_cap, encode_examples,
                                     epoch_batches)
from structgen.train.config import TrainConfig
from structgen.train.model_init import count_parameters, model_config, use_bf16
from structgen.train.data.base import Example
from structgen.train.objective import add_noise, llada_loss, masked_logits
from structgen.train.tokenizer import ROUND_TRIP_SAMPLES, build_tokenizer, check_round_trip, encode_target
from structgen.train.trainer import TrainData, corpus_of, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
NAMES = ["Maria Lopez", "Tom Berg", "Ana Silva", "Li Wei", "Omar Haddad", "Eva Novak", "Zoë Ång", "王芳"]


def person_examples(n: int, seed: int = 0) -> list[Example]:
    """Stand-in JSON-extraction examples: text prompts and chat prompts, one schema."""
    rng = random.Random(seed)
    spec = sg.JsonSchema(PERSON)
    out = []
    for i in range(n):
        name, age = rng.choice(NAMES), rng.randint(18, 90)
        text = rng.choice(["{n}, {a}, lives in Porto", "{n} is {a} years old", "Meet {n} (age {a})"])
        text = text.format(n=name, a=age)
        prompt = text if i % 2 else [{"role": "system", "content": "Extract the person."},
                                     {"role": "user", "content": text}]
        target = json.dumps({"name": name, "age": age}, ensure_ascii=False, separators=(", ", ": "))
        out.append(Example("json", f"t{i % 3}", prompt, spec, target, {"name": name, "age": age}))
    return out


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(TrainConfig.tiny(), corpus_of(person_examples(64)))


@pytest.fixture(scope="module")
def tiny_mlm(tok):
    from transformers import ModernBertForMaskedLM

    torch.manual_seed(0)
    return ModernBertForMaskedLM(model_config(tok, TrainConfig.tiny())).eval()


def test_sparse_head_matches_full_logits_and_gradient_flows(tok, tiny_mlm):
    ex = person_examples(4)
    rows, _ = encode_examples(ex, tok, TrainConfig.tiny())
    b = assemble(rows, [32] * len(rows), tok.pad_token_id, tok.eos_token_id)
    n = add_noise(b.input_ids, b.canvas, tok.mask_token_id, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        sparse = masked_logits(tiny_mlm, n.ids, b.attention_mask, n.masked)
        full = tiny_mlm(input_ids=n.ids, attention_mask=b.attention_mask).logits[n.masked]
    assert torch.allclose(sparse, full, atol=1e-4)
    tiny_mlm.train()
    try:
        loss, _ = llada_loss(tiny_mlm, b.input_ids, b.attention_mask, b.canvas, tok.mask_token_id,
                             generator=torch.Generator().manual_seed(3))
        loss.backward()
        grads = {name: p.grad for name, p in tiny_mlm.named_parameters()}
        assert torch.isfinite(loss) and loss > 0
        assert all(g is not None and torch.isfinite(g).all() for g in grads.values())
        assert grads["model.layers.0.attn.Wqkv.weight"].abs().sum() > 0
        assert grads["model.embeddings.tok_embeddings.weight"].abs().sum() > 0
    finally:
        tiny_mlm.zero_grad(set_to_none=True)
        tiny_mlm.eval()


# ---------------------------------------------------------------------------------------------- batching
def test_rows_use_the_inference_prompt_ids(tok, tiny_mlm):
    model = sg.models.HFMaskedLM.from_model(tiny_mlm, tok)
    examples = person_examples(6)
    rows, dropped = encode_examples(examples, tok, TrainConfig.tiny())
    assert not dropped and len(rows) == 6
    for ex, row in zip(examples, rows):
        assert list(row.prompt_ids) == model.encode_prompt(ex.spec.render_prompt(ex.prompt))
        assert tok.decode(list(row.target_ids)) == ex.target
    chat = rows[0].prompt_ids
    assert chat[-1] == tok.convert_tokens_to_ids("<|assistant|>")  # the canvas follows the assistant marker
    assert PromptEncoder(tok).encode_prompt("x") == model.encode_prompt("x")


def test_batch_layout_prompt_target_eos_tail_then_pad(tok):
    rows, _ = encode_examples(person_examples(3), tok, TrainConfig.tiny())
    canv = [len(r.target_ids) + k for r, k in zip(rows, (0, 5, 17))]
    b = assemble(rows, canv, tok.pad_token_id, tok.eos_token_id)
    for i, (r, c) in enumerate(zip(rows, canv)):
        P, n = len(r.prompt_ids), len(r.target_ids)
        seq = b.input_ids[i].tolist()
        assert seq[:P] == list(r.prompt_ids) and seq[P:P + n] == list(r.target_ids)
        assert seq[P + n:P + c] == [tok.eos_token_id] * (c - n)
        assert set(seq[P + c:]) <= {tok.pad_token_id}
        assert b.canvas[i].nonzero().flatten().tolist() == list(range(P, P + c))
        assert b.attention_mask[i].sum() == P + c


def test_canvas_policy_covers_inference_lengths():
    cfg = TrainConfig.tiny(canvas_sizes=(32, 64), max_canvas=96, canvas_fixed_prob=0.3)
    rng = random.Random(0)
    seen = [cfg.canvas_length(20, rng) for _ in range(400)]
    assert all(20 <= c <= 96 for c in seen)
    assert all(c % 16 == 0 or c in (32, 64) for c in seen)
    assert {32, 48, 64} <= set(seen)  # EOS tails of several lengths
    assert cfg.canvas_length(97, rng) is None and cfg.canvas_length(40, rng, cap=39) is None
    assert cfg.canvas_length(0, rng) >= 1
    fam = TrainConfig.tiny(max_canvas=128, canvas_family_prob=0.5, family_canvas={"alert": 80})
    alert = [fam.canvas_length(20, rng, family="alert") for _ in range(400)]
    assert 150 < alert.count(80) < 250  # the family's inference canvas about half of the time
    assert all(c != 80 for c in (fam.canvas_length(90, rng, family="alert") for _ in range(50)))


def test_family_canvases_are_the_ones_evaluation_decodes_with():
    from structgen.train.evaluate import CANVAS

    assert TrainConfig.small().family_canvas == CANVAS


def test_long_examples_are_dropped_and_counted(tok):
    cfg = TrainConfig.tiny(max_canvas=4)
    rows, dropped = encode_examples(person_examples(4), tok, cfg)
    assert rows == [] and dropped["target too long"] == 4
    with pytest.raises(ConfigError, match="no training rows"):
        epoch_batches(rows, cfg, random.Random(0), 0, 1)


def test_bucketing_is_seeded_and_covers_every_row(tok):
    cfg = TrainConfig.tiny(batch_size=4, bucket_batches=2)
    rows, _ = encode_examples(person_examples(20), tok, cfg)
    a = epoch_batches(rows, cfg, random.Random(5), tok.pad_token_id, tok.eos_token_id)
    b = epoch_batches(rows, cfg, random.Random(5), tok.pad_token_id, tok.eos_token_id)
    assert all(torch.equal(x.input_ids, y.input_ids) for x, y in zip(a, b))
    assert sum(x.input_ids.shape[0] for x in a) == 20
    capped = TrainConfig.tiny(batch_size=8, max_batch_tokens=300)
    for x in epoch_batches(rows, capped, random.Random(5), tok.pad_token_id, tok.eos_token_id):
        assert x.input_ids.numel() <= 300 or x.input_ids.shape[0] == 1


def test_competence_grows_from_the_start_share_to_everything():
    cfg = TrainConfig.small(curriculum=0.4, curriculum_start=0.05)
    cs = [cfg.competence(p / 100) for p in range(101)]
    assert cs[0] == pytest.approx(0.05) and all(a <= b for a, b in zip(cs, cs[1:]))
    assert cs[39] < 1.0 and cs[40] == cs[100] == 1.0
    assert TrainConfig.small(curriculum=0.0).competence(0.0) == 1.0
    with pytest.raises(ConfigError, match="curriculum"):
        TrainConfig.small(curriculum_start=0.0)


def test_curriculum_draws_short_rows_with_short_tails_first_then_every_row(tok):
    cfg = TrainConfig.tiny(batch_size=2, bucket_batches=2, canvas_extra_max=32, canvas_family_prob=0.0)
    rows, _ = encode_examples(person_examples(40), tok, cfg)
    by_len = sorted(len(r.prompt_ids) + len(r.target_ids) for r in rows)
    clock = {"c": 0.1}
    stream = batch_stream(rows, cfg, 3, tok.pad_token_id, tok.eos_token_id, competence=lambda: clock["c"])
    for _ in range(20):
        _, b = next(stream)
        for i in range(b.input_ids.shape[0]):
            n_prompt = int(b.canvas[i].long().argmax())
            target = int(((b.input_ids[i] != tok.eos_token_id) & b.canvas[i]).sum())
            assert n_prompt + target <= by_len[3]  # the shortest 4 rows (the pool is at least one window)
            row = next(r for r in rows if len(r.prompt_ids) == n_prompt and len(r.target_ids) == target)
            assert int(b.canvas[i].sum()) <= curriculum_cap(row, 0.1)
    clock["c"] = 1.0
    seen = set()
    for _ in range(60):
        _, b = next(stream)
        seen |= {tuple(x[m].tolist()) for x, m in zip(b.input_ids, b.canvas)}
    targets = {r.target_ids for r in rows}
    got = {tuple(t for t in s if t != tok.eos_token_id) for s in seen}
    assert targets <= got  # at full competence the stream goes over every row


def test_bf16_autocast_choice_and_training_keeps_fp32_weights(tmp_path):
    cpu = torch.device("cpu")
    assert use_bf16(TrainConfig.tiny(precision="bf16"), cpu) and not use_bf16(TrainConfig.tiny(), cpu)
    assert use_bf16(TrainConfig.small(), cpu) == bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    with pytest.raises(ConfigError, match="precision"):
        TrainConfig.tiny(precision="fp8")
    data = TrainData(person_examples(16), person_examples(2, 1))
    report = train(TrainConfig.tiny(precision="bf16", steps=4), tmp_path / "m", progress=False, data=data)
    assert report.steps == 4 and math.isfinite(report.heldout_loss)
    assert all(t.dtype == torch.float32 for t in _weights(tmp_path / "m").values())
    recipe = json.loads((tmp_path / "m" / "structgen_recipe.json").read_text())
    assert recipe["provenance"]["autocast"] == "bfloat16"


# --------------------------------------------------------------------------------------------- tokenizer
def test_tokenizer_round_trips_any_utf8(tok):
    check_round_trip(tok)
    hard = ("\U0001F600" * 3 + "\x00\n\t" + "漢字かなカナ", "".join(map(chr, range(1, 300))))
    for s in ROUND_TRIP_SAMPLES + hard:
        assert tok.decode(encode_target(tok, s)) == s
    assert tok.eos_token_id not in encode_target(tok, "<|eos|>")  # a spelled special token is text
    assert len(tok) <= TrainConfig.tiny().vocab_size


def test_words_pretokenizer_keeps_a_word_one_token_wherever_it_stands():
    """The embedded model's tokenizer: a value copied from the prompt into JSON is the same tokens."""
    from structgen.tokenizers import train_bpe

    corpus = ["Maria Lopez lives in Porto.", '{"name": "Maria Lopez", "city": "Porto"}'] * 50
    words = train_bpe(corpus, 400, pretokenizer="words")
    gpt2 = train_bpe(corpus, 400, pretokenizer="gpt2")

    def pieces(tok, text):
        return [tok.decode([i]) for i in encode_target(tok, text)]

    prompt, target = pieces(words, "lives in Porto."), pieces(words, '"city": "Porto"')
    assert "Porto" in prompt and "Porto" in target and " " in prompt  # spaces are tokens of their own
    assert " Porto" in pieces(gpt2, "lives in Porto.") and " Porto" not in pieces(gpt2, '"city": "Porto"')
    for s in ROUND_TRIP_SAMPLES:
        assert words.decode(encode_target(words, s)) == s
    with pytest.raises(ConfigError, match="pretokenizer"):
        TrainConfig.tiny(pretokenizer="sentencepiece").validated()


def test_json_words_pretokenizer_cuts_punctuation_at_a_values_edge_as_in_the_prompt():
    """``json-words``: a path or sentence copied into JSON keeps its edge punctuation's tokens;
    ``words`` merged them with the JSON quote (``"/``, ``."}}``), so the copy was of different tokens."""
    from structgen.tokenizers import train_bpe

    corpus = ['delete /tmp/dump.sql now. See you on Monday.', '{"path": "/tmp/dump.sql", "body": "Monday."}'] * 50
    new = train_bpe(corpus, 400, pretokenizer="json-words")
    old = train_bpe(corpus, 400, pretokenizer="words")

    def pieces(tok, text):
        return [tok.decode([i]) for i in encode_target(tok, text)]

    target = '{"path": "/tmp/dump.sql", "body": "Monday."}'
    assert pieces(new, target)[pieces(new, target).index("tmp") - 2:][:2] == ['"', "/"]
    assert '"/' in pieces(old, target) and '."}' in pieces(old, target)
    assert '"/' not in pieces(new, target) and "." in pieces(new, target) and '"}' in pieces(new, target)
    assert {"{\"", "\":", "\","} <= set(pieces(new, target))  # JSON's own punctuation still merges
    for s in (*ROUND_TRIP_SAMPLES, target, 'C:\\Users\\Søren\\x.docx', "ORDER BY 'a', \"b\""):
        assert new.decode(encode_target(new, s)) == s


def test_dropout_trains_with_it_and_decodes_without(tok, tmp_path):
    """``TrainConfig.dropout`` goes into ModernBERT's config; the saved model loads in eval mode, so the
    same canvas gives the same logits twice."""
    cfg = model_config(tok, TrainConfig.small(dropout=0.2))
    assert (cfg.attention_dropout, cfg.mlp_dropout, cfg.embedding_dropout) == (0.2, 0.2, 0.2)
    cfg = model_config(tok, TrainConfig.small(dropout=0.2, attention_dropout=0.0))  # the fast CPU kernel stays
    assert (cfg.attention_dropout, cfg.mlp_dropout, cfg.embedding_dropout) == (0.0, 0.2, 0.2)
    with pytest.raises(ConfigError, match="attention_dropout must be in"):
        TrainConfig.tiny(attention_dropout=-0.1).validated()
    with pytest.raises(ConfigError, match="dropout must be in"):
        TrainConfig.tiny(dropout=None).validated()
    assert TrainConfig.small().dropout == 0.0 == TrainConfig.tiny().dropout
    with pytest.raises(ConfigError, match="dropout"):
        TrainConfig.tiny(dropout=1.0).validated()
    train(TrainConfig.tiny(dropout=0.5, steps=2), tmp_path / "m", progress=False,
          data=TrainData(person_examples(8)))
    model = sg.load_model(tmp_path / "m")
    assert model.model.config.mlp_dropout == 0.5 and not model.model.training
    ids = [model.encode_prompt("Maria, 41") + [model.mask_id] * 8]
    assert torch.equal(model.logits(ids), model.logits(ids))


def test_tokenizer_without_special_tokens_is_refused():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel()
    with pytest.raises(ConfigError, match="special token"):
        check_round_trip(PreTrainedTokenizerFast(tokenizer_object=raw))


# ---------------------------------------------------------------------------------------------- training
def _weights(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


def test_same_seed_same_weights(tmp_path):
    data = TrainData(person_examples(24), person_examples(4, 1))
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        train(TrainConfig.tiny(seed=seed, steps=8), tmp_path / name, progress=False, data=data)
    a, b, c = (_weights(tmp_path / n) for n in "abc")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)


def test_trained_model_loads_and_generates_what_it_learnt(tmp_path):
    """Memorise two examples: the Generator must then write each target exactly, for two canvas lengths,
    which holds only if training used the inference prompt ids, canvas position and EOS tail."""
    spec = sg.JsonSchema(PERSON)
    exs = [Example("json", "a", "Maria Lopez, 41, lives in Porto", spec, '{"name": "Maria Lopez", "age": 41}', None),
           Example("code", "b", "The ticket for Tom Berg is QZX-7302.", sg.Regex(r"[A-Z]{3}-[0-9]{4}"), "QZX-7302",
                   None)]
    # 900 steps: every one of 8 seeds memorised both (at 500, 1 in 8 still wrote " Lopez Lopez")
    cfg = TrainConfig.tiny(steps=900, lr=5e-3, batch_size=4, eval_every=300, canvas_family_prob=0.0,
                           max_canvas=64, canvas_sizes=(32, 64))
    report = train(cfg, tmp_path / "m", progress=False, data=TrainData(exs * 8, exs))
    assert report.steps == 900 and report.stopped_by == "steps"
    assert report.heldout_loss < report.curve[0]["heldout_loss"]
    model = sg.load_model(tmp_path / "m", device="cpu")
    assert report.params == count_parameters(model.model)
    assert report.peak_rss_mb > 0 and report.tokens > 0
    recipe = json.loads((tmp_path / "m" / "structgen_recipe.json").read_text())
    assert recipe["config"]["steps"] == 900 and recipe["training"]["steps"] == 900
    assert recipe["data"]["seed"] == 0 and len(recipe["training"]["curve"]) == 3
    gen = sg.Generator(model)
    for ex in exs:
        for max_tokens in (24, 64):
            r = gen.generate(ex.prompt, ex.spec, max_tokens=max_tokens)
            assert r.valid and r.text == ex.target, (max_tokens, r.text)
    assert gen.generate(exs[0].prompt, spec, max_tokens=64).value == {"name": "Maria Lopez", "age": 41}


def test_time_budget_stops_and_still_saves(tmp_path):
    cfg = TrainConfig.tiny(steps=10_000, minutes=0.0005)
    report = train(cfg, tmp_path / "m", progress=False, data=TrainData(person_examples(8)))
    assert report.stopped_by == "time" and report.steps < 10_000
    assert sg.load_model(tmp_path / "m", device="cpu").vocab_size > 0


def test_failed_save_leaves_no_directory(tmp_path, monkeypatch):
    from transformers import PreTrainedTokenizerFast

    def broken(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(PreTrainedTokenizerFast, "save_pretrained", broken)
    with pytest.raises(StructgenError, match="nothing was written"):
        train(TrainConfig.tiny(steps=2), tmp_path / "m", progress=False, data=TrainData(person_examples(8)))
    assert list(tmp_path.iterdir()) == []


def test_failed_save_keeps_the_previous_model(tmp_path, monkeypatch):
    data = TrainData(person_examples(8))
    train(TrainConfig.tiny(steps=2), tmp_path / "m", progress=False, data=data)
    before = _weights(tmp_path / "m")
    import structgen.train.saving as saving

    real = saving._normal_permissions

    def broken(folder):
        real(folder)
        raise OSError(5, "I/O error")

    monkeypatch.setattr(saving, "_normal_permissions", broken)
    with pytest.raises(StructgenError):
        train(TrainConfig.tiny(steps=3, seed=4), tmp_path / "m", progress=False, data=data)
    after = _weights(tmp_path / "m")
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert [p.name for p in tmp_path.iterdir()] == ["m"]


def test_refuses_to_replace_a_folder_that_is_not_a_model(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not a structgen-trained model"):
        train(TrainConfig.tiny(), tmp_path, progress=False, data=TrainData(person_examples(4)))
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_config_checks_and_presets():
    small = TrainConfig.small()
    assert small.minutes <= 60 and small.threads == 2
    with pytest.raises(ConfigError, match="num_heads"):
        TrainConfig.tiny(hidden_size=65)
    with pytest.raises(ConfigError, match="unknown preset"):
        TrainConfig.preset("huge")
    assert TrainConfig.from_dict(small.to_dict()) == small
    from structgen.request_notes import VERSION

    # request notes: true is the newest version, kept as its number; a recipe's true is version 1, the only one
    # there was when recipes stored a flag
    assert [TrainConfig.small(request_notes=v).request_notes for v in (False, True, 0, 1, VERSION)] == [
        0, VERSION, 0, 1, VERSION]
    assert TrainConfig.from_dict({**small.to_dict(), "request_notes": True}).notes_version == 1
    for bad in (VERSION + 1, -1, "1"):
        with pytest.raises(ConfigError, match="request_notes must be a version"):
            TrainConfig.small(request_notes=bad)
    w = small.warmup_steps
    lrs = [small.lr_at(s, s / 1000, w / 1000) for s in range(1001)]
    assert lrs[0] < lrs[w // 2] < lrs[w] == pytest.approx(small.lr)
    assert all(a >= b for a, b in zip(lrs[w:], lrs[w + 1:]))  # then only down
    assert lrs[-1] == pytest.approx(small.lr * small.min_lr_ratio)


# ------------------------------------------------------------------------------ the real data and the CLI
def test_every_family_encodes_like_inference(tok, tiny_mlm):
    from structgen.train.data import FAMILIES, mixture

    model = sg.models.HFMaskedLM.from_model(tiny_mlm, tok)
    examples = mixture("train", 2, seed=3)
    rows, dropped = encode_examples(examples, tok, TrainConfig.tiny(max_positions=4096, max_canvas=256))
    assert not dropped and {r.family for r in rows} == set(FAMILIES)
    for ex, row in zip(examples, rows):
        assert list(row.prompt_ids) == model.encode_prompt(ex.spec.render_prompt(ex.prompt))
        assert model.decode(row.target_ids) == ex.target


def test_cli_train_tiny(tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app

    out = tmp_path / "model"
    res = CliRunner().invoke(app, ["train", "--preset", "tiny", "--steps", "3", "--out", str(out), "--json",
                                   "--examples-per-family", "6", "--seed", "2", "--precision", "fp32",
                                   "--pretokenizer", "json-words", "--dropout", "0.1", "--attention-dropout", "0",
                                   "--lr", "2e-3", "--request-notes"])
    assert res.exit_code == 0, res.output
    assert "step 3 at " in res.stderr  # not a terminal: one plain log line per held-out evaluation
    report = json.loads(res.stdout[res.stdout.index("{"):])
    assert report["steps"] == 3 and report["n_train"] + sum(report["dropped"].values()) == 24
    assert report["n_train"] >= 20
    recipe = json.loads((out / "structgen_recipe.json").read_text())
    assert recipe["config"]["seed"] == 2 and recipe["data"]["families"].keys() == {"json", "tool", "sql", "alert"}
    assert (recipe["config"]["pretokenizer"], recipe["config"]["dropout"]) == ("json-words", 0.1)
    assert recipe["config"]["attention_dropout"] == 0.0 and recipe["config"]["lr"] == 2e-3
    model = sg.load_model(out, device="cpu")
    assert model.mask_id == model.tokenizer.mask_token_id
    from structgen.request_notes import VERSION

    # the newest version, stored as its number (the recipe retrains with the same notes); the prompts carry them
    assert recipe["config"]["request_notes"] == VERSION == model.request_notes
    assert json.loads((out / "config.json").read_text())["structgen_request_notes"] == VERSION
    assert model.encode_prompt("on May 2, 2027") == model.encode_prompt("on May 2, 2027 (2027-05-02)")
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--notes-version", str(VERSION + 1),
                                   "--out", str(tmp_path / "v")])
    assert bad.exit_code == 2 and "request_notes must be a version" in bad.output and not (tmp_path / "v").exists()
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--notes-version", "1", "--no-request-notes",
                                   "--out", str(tmp_path / "v")])
    assert bad.exit_code == 2 and "drop --no-request-notes" in bad.output
    bad = CliRunner().invoke(app, ["train", "--preset", "huge", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "unknown preset" in bad.output
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--dropout", "1", "--out", str(tmp_path / "y")])
    assert bad.exit_code == 2 and "dropout must be in [0, 1)" in bad.output and not (tmp_path / "y").exists()
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--convert-path", "--out", str(tmp_path / "z")])
    assert bad.exit_code == 2 and "needs the copy head" in bad.output and not (tmp_path / "z").exists()
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--lr", "0", "--out", str(tmp_path / "w")])
    assert bad.exit_code == 2 and "lr (--lr) must be a number > 0" in bad.output and not (tmp_path / "w").exists()


def test_a_diverging_run_stops_and_keeps_finite_weights(tmp_path, monkeypatch):
    import structgen.train.step as step_mod  # the training step computes the loss there

    real, calls = step_mod.llada_loss, []

    def nan_on_third(*a, **k):
        loss, noised = real(*a, **k)
        calls.append(1)
        return (loss * float("nan") if len(calls) == 3 else loss), noised

    monkeypatch.setattr(step_mod, "llada_loss", nan_on_third)
    report = train(TrainConfig.tiny(steps=10), tmp_path / "m", progress=False, data=TrainData(person_examples(8)))
    assert report.stopped_by == "diverged" and report.steps == 2
    assert all(torch.isfinite(w).all() for w in _weights(tmp_path / "m").values())


def test_keep_best_saves_the_weights_of_the_lowest_held_out_loss(tmp_path):
    """``--keep best``: the saved weights are those the run had at its lowest held-out loss, which are the
    weights a run stopped at that step ends with (a constant learning rate keeps the two runs alike)."""
    data = TrainData(person_examples(6), person_examples(6, 1))
    common = dict(steps=60, eval_every=5, lr=2e-2, schedule="constant")
    best = train(TrainConfig.tiny(keep="best", **common), tmp_path / "best", progress=False, data=data)
    losses = {p["step"]: p["heldout_loss"] for p in best.curve}
    assert best.kept_step == min(losses, key=losses.get) and best.heldout_loss == pytest.approx(min(losses.values()), abs=1e-5)
    assert best.kept_step != best.steps  # at this learning rate the held-out loss wanders: not the last step
    recipe = json.loads((tmp_path / "best" / "structgen_recipe.json").read_text())
    assert recipe["training"]["kept"] == {"weights": "best", "step": best.kept_step}
    assert f"weights of step {best.kept_step}" in best.summary()
    stopped = train(TrainConfig.tiny(**{**common, "steps": best.kept_step}), tmp_path / "stop", progress=False,
                    data=data)
    last = train(TrainConfig.tiny(**common), tmp_path / "last", progress=False, data=data)
    assert stopped.steps == stopped.kept_step == best.kept_step and last.kept_step == last.steps == 60
    a, b, c = (_weights(tmp_path / n) for n in ("best", "stop", "last"))
    assert all(torch.allclose(a[k], b[k]) for k in a)
    assert any(not torch.allclose(a[k], c[k]) for k in a)


def test_keep_best_needs_held_out_examples(tmp_path):
    with pytest.raises(ConfigError, match="keep must be 'last' or 'best'"):
        TrainConfig.tiny(keep="first")
    with pytest.raises(ConfigError, match="no held-out examples"):
        train(TrainConfig.tiny(keep="best", steps=2), tmp_path / "m", progress=False,
              data=TrainData(person_examples(8)))
    assert not (tmp_path / "m").exists()
