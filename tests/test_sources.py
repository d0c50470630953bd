"""Pointer targets: where the generators say a value comes from, as token positions, batches and a loss."""

from __future__ import annotations

import pytest
import torch
from transformers import PreTrainedTokenizerFast

from structgen.errors import ConfigError
from structgen.train.batches import PromptEncoder, Row, assemble, encode_examples
from structgen.train.config import TrainConfig
from structgen.train.data import json_drills, json_extract, tool_calls
from structgen.train.data.base import Example, Template, ValueSource, generate
from structgen.train.objective import llada_loss, source_nll
from structgen.train.sources import find_runs, pointer_targets, text_positions
from structgen.train.tokenizer import encode_target

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tok():
    """The embedded model's tokenizer (the ``words`` pre-tokenizer the small recipe trains)."""
    from structgen.models.default import DEFAULT_MODEL_DIR

    return PreTrainedTokenizerFast.from_pretrained(str(DEFAULT_MODEL_DIR))


def _targets(tok, ex):
    prompt = PromptEncoder(tok).encode_prompt(ex.spec.render_prompt(ex.prompt))
    target = encode_target(tok, ex.target)
    return prompt, target, pointer_targets(tok, prompt, ex.target, target, ex.sources)


def _words(tok, ids, positions):
    return {tok.decode([ids[j]]).strip() for j in positions} - {""}


def test_find_runs_finds_every_whole_occurrence():
    assert find_runs([5, 1, 2, 5, 1, 2, 1], [1, 2]) == [1, 4]
    assert find_runs([256, 1, 0, 0], [1]) == [1]  # 256 holds a byte 1 that is not an id 1
    assert find_runs([1, 2], []) == [] and find_runs([1], [1, 2]) == []


def test_a_month_in_words_is_the_source_of_the_month_number(tok):
    text = "Meeting in the month of July, room 4."
    ex = Example("json", "t", text, json_extract.GeneratedSchema(
        {"type": "object", "properties": {"month": {"type": "integer"}}}), '{"month": 7}', {"month": 7},
        (ValueSource.of("month", 7, "July"),))
    prompt, target, where = _targets(tok, ex)
    (i, js), = where
    assert tok.decode([target[i]]) == "7" and _words(tok, prompt, js) == {"July"}


def test_each_token_of_a_value_gets_its_own_part_of_the_source(tok):
    """Any target position satisfies the loss, so a month token given all of "July 14, 2026" learnt to read
    a digit (run 20): a spelled token reads its copy, a converted one the words nothing copies."""
    ex = Example("json", "t", "Due by July 14, 2026 at the latest.", json_extract.GeneratedSchema(
        {"type": "object", "properties": {"due": {"type": "string"}}}), '{"due": "2026-07-14"}',
        {"due": "2026-07-14"}, (ValueSource.of("due", "2026-07-14", "July 14, 2026"),))
    prompt, target, where = _targets(tok, ex)
    read = {}
    for i, js in where:
        read.setdefault(tok.decode([target[i]]), set()).update(_words(tok, prompt, js))
    assert read["07"] == {"July"} and read["14"] == {"14"} and "-" not in read
    assert all(piece in read and read[piece] == {piece} for piece in tok.tokenize("2026"))


def test_each_side_of_a_pair_points_at_its_own_words(tok):
    """The role drills state two airports or currencies in one sentence: each key's value reads its own."""
    seen = 0
    for ex in json_drills.examples(400, seed=3):
        codes = list(ex.gold.values())
        if ex.template != "json.drill_roles" or not all(isinstance(c, str) and len(c) == 3 for c in codes):
            continue  # airports and currencies (two dates share their year's tokens)
        prompt, target, where = _targets(tok, ex)
        by_value = {}
        for i, js in where:
            by_value.setdefault(tok.decode([target[i]]), set()).update(_words(tok, prompt, js))
        for code, other in (codes, codes[::-1]):
            assert by_value[code] and other not in by_value[code], (ex.prompt, by_value)
        seen += 1
    assert seen >= 5


def test_a_tool_calls_name_reads_its_own_entry_of_the_tool_list(tok):
    """Choosing the tool is the pointer finding its line of the list (training log, run 26): each word of
    the name points at that line's copy of it, never at the request's words or another tool's line."""
    for ex in tool_calls.examples("train", 40, 0) + tool_calls.examples("heldout", 40, 0):
        prompt, target, where = _targets(tok, ex)
        name = ex.gold["name"]
        block_end = find_runs(prompt, encode_target(tok, "### Request"))[0]
        read = [(i, js) for i, js in where if tok.decode([target[i]]).strip() in name.split("_")
                and i < len(encode_target(tok, f'{{"name": "{name}"'))]
        assert read and {tok.decode([target[i]]).strip() for i, _ in read} == set(name.split("_")), ex.target
        for i, js in read:
            assert all(j < block_end and prompt[j] == target[i] for j in js), (ex.prompt, name)
            assert all(name in tok.decode(prompt[max(0, j - 3):j + 4]) for j in js), (ex.prompt, name)


@pytest.mark.parametrize("family, examples", [
    ("tool calls", lambda: tool_calls.examples("train", 200, 0)),
    ("JSON", lambda: json_extract.examples("train", 200, 0)),
    ("drills", lambda: json_drills.examples(200, 0)),
    ("JSON held-out", lambda: json_extract.examples("heldout", 100, 0)),
])
def test_the_generators_state_where_values_come_from(tok, family, examples):
    """Nearly every stated value's source is found in the prompt (a miss only loses a hint), and every
    target token given a source lies inside a value the example names."""
    stated = found = 0
    for ex in examples():
        prompt, target, where = _targets(tok, ex)
        stated += len(ex.sources)
        found += sum(bool(any(text_positions(tok, prompt, t) for t in s.texts)) for s in ex.sources)
        for i, js in where:
            assert 0 <= i < len(target) and js and all(0 <= j < len(prompt) for j in js)
    assert stated > 100 and found >= 0.97 * stated, f"{family}: {found} of {stated} sources found"


def test_a_template_without_sources_still_renders_and_gets_no_targets(tok):
    t = Template("plain", "json", "train", lambda rng: ("Name: Ana", '{"name": "Ana"}', {"name": "Ana"},
                                                         json_extract.GeneratedSchema({"type": "object"})))
    (ex,) = generate("json", "train", [t], 1, 0)
    assert ex.sources == () and _targets(tok, ex)[2] == ()


def test_rows_and_batches_carry_the_targets(tok):
    exs = json_drills.examples(6, 0)
    cfg = TrainConfig.small()
    rows, _ = encode_examples(exs, tok, cfg, pointers=True)
    assert all(r.pointers for r in rows)
    assert not any(r.pointers for r in encode_examples(exs, tok, cfg)[0])  # off unless asked for
    batch = assemble(rows, [len(r.target_ids) + 3 for r in rows], tok.pad_token_id, tok.eos_token_id)
    dense = batch.sources()
    B, L = batch.input_ids.shape
    assert dense.shape == (B, L, L) and int(dense.sum()) == batch.pointers.shape[0]
    for b, r in enumerate(rows):
        for t, js in r.pointers:
            assert dense[b, len(r.prompt_ids) + t].nonzero().flatten().tolist() == list(js)
    for b, r in enumerate(rows):
        assert not dense[b, :, len(r.prompt_ids):].any()  # targets are prompt positions, never canvas ones
    plain = assemble([Row(r.prompt_ids, r.target_ids, r.family, r.cap) for r in rows], [40] * len(rows), 0, 1)
    assert plain.pointers is None and plain.sources() is None


def test_batched_rows_equal_each_example_encoded_alone(tok, monkeypatch):
    """encode_examples encodes a chunk at a time with the tokenizer's batch encoder and reuses the targets'
    offsets for the pointers: the rows are exactly those of one example at a time, chat prompts included."""
    import structgen.train.batches as batches

    monkeypatch.setattr(batches, "ENCODE_CHUNK", 7)  # several chunks, the last one short
    chat = Example("json", "chat", [{"role": "system", "content": "Extract <|eos|> as text."},
                                    {"role": "user", "content": "Name: Ana"}],
                   json_extract.GeneratedSchema({"type": "object"}), '{"name": "Ana"}', {"name": "Ana"},
                   (ValueSource.of("name", "Ana", "Ana"),))
    exs = tool_calls.examples("train", 12, 5) + json_drills.examples(12, 5) + [chat]
    exs += json_extract.examples("heldout", 6, 5)
    rows, dropped = encode_examples(exs, tok, TrainConfig.small(), pointers=True)
    assert not dropped and len(rows) == len(exs)
    enc = PromptEncoder(tok)
    for ex, row in zip(exs, rows):
        prompt = enc.encode_prompt(ex.spec.render_prompt(ex.prompt))
        target = encode_target(tok, ex.target)
        assert row.prompt_ids == tuple(prompt) and row.target_ids == tuple(target)
        assert row.pointers == pointer_targets(tok, prompt, ex.target, target, ex.sources)
    assert rows[len(exs) - 7].pointers  # the chat example's name points at "Ana"


def test_source_nll_is_minus_log_the_weight_on_the_marked_positions():
    attn = torch.tensor([[0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1], [0.5, 0.5, 0.0, 0.0]])
    where = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)  # the last: no target
    masked = torch.tensor([[1, 1, 0], [0, 0, 1]], dtype=torch.bool)  # row 0 has the first two positions
    expected = (-torch.log(torch.tensor(0.5)) - torch.log(torch.tensor(0.7))) / 2
    assert source_nll(attn, where, masked).item() == pytest.approx(expected.item(), rel=1e-4)
    rows = source_nll(attn, where, masked, per_row=True)
    assert rows.shape == (2,) and rows.mean().item() == pytest.approx(expected.item(), rel=1e-4)
    assert rows[1].item() == 0.0
    assert source_nll(attn, torch.zeros_like(where), masked).item() == 0.0


def _copy_model(seed=0):
    from test_copy_head import _model

    return _model(seed, convert=True)


def test_the_source_loss_teaches_the_pointer_where_a_value_comes_from():
    """A converted value (never a token of the prompt) gives the pointer nothing to match; with the source
    loss it learns to look at the word after the key, wherever that stands."""
    from test_copy_head import MASK

    m = _copy_model(2).train()
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)

    def batch(rng):
        rows, where = [], []
        for _ in range(16):  # six prompt tokens: filler, the key 3 somewhere, the word after it; then the answer
            row = torch.randint(20, 40, (6,), generator=rng).tolist()
            at, word = int(torch.randint(0, 5, (1,), generator=rng)), int(torch.randint(10, 20, (1,), generator=rng))
            row[at: at + 2] = [3, word]
            rows.append(row + [word + 30, 1])
            where.append(at + 1)
        ids = torch.tensor(rows)
        canvas = torch.zeros_like(ids, dtype=torch.bool)
        canvas[:, 6:] = True
        sources = torch.zeros(16, 8, 8, dtype=torch.bool)
        sources[torch.arange(16), 6, torch.tensor(where)] = True
        return ids, canvas, sources

    def weight_on_source():
        m.eval()
        ids, _, sources = batch(torch.Generator().manual_seed(99))
        ids = ids.clone()
        ids[:, 6:] = MASK
        with torch.no_grad():
            hidden = m.model(input_ids=ids).last_hidden_state
            rows, cols = torch.arange(16), torch.full((16,), 6)
            parts = m.mixed_log_probs(hidden, ids, ids != MASK, rows, cols, pointer=True)
        m.train()
        return float((parts.attn * sources[rows, cols]).sum(-1).mean())

    before = weight_on_source()
    rng = torch.Generator().manual_seed(1)
    for _ in range(150):
        ids, canvas, sources = batch(rng)
        loss, _ = llada_loss(m, ids, torch.ones_like(ids), canvas, MASK, generator=gen, eos_id=1,
                             sources=sources, source_loss=1.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert before < 0.4 and weight_on_source() > 0.9


def test_the_source_loss_trains_only_in_training_mode_and_only_when_weighted():
    from test_copy_head import MASK

    m = _copy_model()
    ids = torch.tensor([[3, 12, 2, 32, 1, 1]] * 4)
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 3:] = True
    sources = torch.zeros(4, 6, 6, dtype=torch.bool)
    sources[:, 3, 1] = True

    def loss(train, w, src=sources):
        m.train(train)
        with torch.no_grad():
            out, _ = llada_loss(m, ids, torch.ones_like(ids), canvas, MASK, eos_id=1, sources=src,
                                source_loss=w, generator=torch.Generator().manual_seed(0))
        return out.item()

    plain = loss(True, 0.0)
    assert loss(True, 1.0) > plain and loss(False, 1.0) == pytest.approx(loss(False, 0.0))
    assert loss(True, 1.0, None) == pytest.approx(plain)


def test_the_config_and_the_cli_check_the_source_loss(tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app

    with pytest.raises(ConfigError, match="source_loss must be a number >= 0"):
        TrainConfig.small(source_loss=-1)
    with pytest.raises(ConfigError, match="trains the copy head"):
        TrainConfig.tiny(source_loss=0.5)
    assert TrainConfig.small(source_loss=0.5).source_loss == 0.5
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--source-loss", "1", "--out", str(tmp_path / "z")])
    assert bad.exit_code == 2 and "trains the copy head" in bad.output and not (tmp_path / "z").exists()


def test_rows_of_a_users_file_point_at_the_values_their_prompt_spells(tmp_path, tok):
    import json

    from structgen.train.data.from_file import load_file

    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                               "adult": {"type": "boolean"}, "month": {"type": "integer"}}}
    line = {"prompt": "Maria Lopez, 41, born in July", "schema": schema,
            "target": {"name": "Maria Lopez", "age": 41, "adult": True, "month": 7}}
    (tmp_path / "d.jsonl").write_text(json.dumps(line) + "\n")
    (ex,), _ = load_file(tmp_path / "d.jsonl")
    assert [s.key for s in ex.sources] == ["name", "age", "month"]  # a boolean is never spelled as it is
    prompt, target, where = _targets(tok, ex)
    read = {tok.decode([target[i]]): _words(tok, prompt, js) for i, js in where}
    assert read == {"Maria": {"Maria"}, "Lopez": {"Lopez"}, "41": {"41"}}  # "7" is not in the text


def test_the_pointer_loss_on_sources_trains_the_path_only_where_a_value_has_a_source():
    """``--pointer-loss-on sources``: a key or punctuation token (no source) gives the conversion path no
    gradient of the pointer's own loss, so its freedom is not spent on them (run 23); a value token with a
    source still trains it."""
    from test_copy_head import MASK, _model

    m = _model(convert=True).train()
    ids = torch.tensor([[3, 12, 2, 32, 33, 1]] * 4)  # canvas: a key-like token, a value, EOS
    canvas = torch.zeros_like(ids, dtype=torch.bool)
    canvas[:, 3:] = True
    none = torch.zeros(4, 6, 6, dtype=torch.bool)
    value = none.clone()
    value[:, 4, 1] = True  # the value at position 4 was rendered from prompt position 1

    def grad(weight, on_sources, sources):
        m.config.copy_head_pointer_loss = weight
        m.zero_grad()
        loss, noised = llada_loss(m, ids, torch.ones_like(ids), canvas, MASK, eos_id=1, sources=sources,
                                  pointer_on_sources=on_sources, generator=torch.Generator().manual_seed(0))
        assert noised.masked[:, 3].any() and noised.masked[:, 4].any()  # both kinds are trained in this batch
        loss.backward()
        return m.copy_convert.weight.grad.clone()

    mixture = grad(0.0, False, none)
    assert torch.allclose(grad(0.3, True, none), mixture, atol=1e-7)  # nothing sourced: no gradient of its own
    assert not torch.allclose(grad(0.3, True, value), mixture, atol=1e-5)  # the value trains the path
    assert not torch.allclose(grad(0.3, True, value), grad(0.3, False, value), atol=1e-5)  # the key does not


def test_the_config_and_the_cli_check_where_the_pointer_loss_trains(tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app

    with pytest.raises(ConfigError, match="pointer_loss_on must be 'content' or 'sources'"):
        TrainConfig.small(pointer_loss_on="values")
    with pytest.raises(ConfigError, match="--source-loss"):
        TrainConfig.small(copy_convert=True, pointer_loss_on="sources")
    with pytest.raises(ConfigError, match="--convert-path"):
        TrainConfig.small(source_loss=0.5, pointer_loss_on="sources")
    cfg = TrainConfig.small(copy_convert=True, source_loss=0.5, pointer_loss_on="sources")
    assert cfg.pointer_loss_on == "sources" and TrainConfig.small().pointer_loss_on == "content"
    bad = CliRunner().invoke(app, ["train", "--pointer-loss-on", "sources", "--out", str(tmp_path / "z")])
    assert bad.exit_code == 2 and "--source-loss" in bad.output and not (tmp_path / "z").exists()
