"""The Generator end to end with random logits: results, settings, repair, traces and errors."""

from __future__ import annotations

import json

import pytest
import torch
from pydantic import BaseModel, Field

import structgen as sg
from structgen.validators import Issue

PERSON = {"type": "object", "additionalProperties": False, "required": ["name", "age"],
          "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 12},
                         "age": {"type": "integer", "minimum": 0, "maximum": 130}}}


@pytest.fixture(scope="module")
def gen(tok4k):
    return sg.Generator(sg.models.RandomLogits(tok4k, seed=0))


def test_json_result_fields(gen):
    r = gen.generate("Maria, 41", sg.JsonSchema(PERSON), max_tokens=48)
    assert r.valid and r.errors == [] and r.engine == "automaton"
    assert isinstance(r.value, dict) and 0 <= r.value["age"] <= 130
    assert json.loads(r.text) == r.value
    assert set(r.timings) == {"model_s", "constraint_s", "total_s"}
    assert 1 <= r.nfe <= r.n_output_tokens
    assert r.n_forced >= 2  # at least the opening '{"' and the key are forced
    assert r.forced_share <= 1.0  # the EOS tail is not counted as output


@pytest.mark.parametrize("kw", [dict(block_length=8, tokens_per_step=2), dict(block_length=48, threshold=0.5),
                                dict(block_length=16, temperature=1.0, seed=7)])
def test_policies_all_give_valid_output(gen, kw):
    r = gen.generate("x", sg.JsonSchema(PERSON), max_tokens=48, **kw)
    assert r.valid


def test_tokens_per_step_bounds_nfe(gen):
    r = gen.generate("x", sg.JsonSchema(PERSON), max_tokens=40, block_length=40, tokens_per_step=4)
    masked_by_model = r.n_output_tokens + (40 - r.n_output_tokens) - r.n_forced
    assert r.nfe <= -(-masked_by_model // 4) + 1


def test_seeded_sampling_is_reproducible(tok4k):
    a = sg.Generator(sg.models.RandomLogits(tok4k, seed=1), temperature=1.0, seed=5)
    b = sg.Generator(sg.models.RandomLogits(tok4k, seed=1), temperature=1.0, seed=5)
    s = sg.JsonSchema(PERSON)
    assert a.generate("x", s, max_tokens=40).text == b.generate("x", s, max_tokens=40).text


def test_pydantic_model_returns_an_instance(gen):
    class Item(BaseModel):
        sku: str = Field(pattern=r"^[A-Z]{3}[0-9]{2}$")
        qty: int = Field(ge=1, le=9)

    item = gen.json("order", Item, max_tokens=40)
    assert isinstance(item, Item) and 1 <= item.qty <= 9


def test_regex_choice_and_grammar(gen):
    assert gen.generate("x", sg.Regex(r"[a-z]{3}-[0-9]{2}"), max_tokens=12).valid
    assert gen.generate("x", sg.Choice(["red", "green", "blue"]), max_tokens=6).text in {"red", "green", "blue"}
    g = sg.Grammar('start: e\ne: NUM | e "+" e | "(" e ")"\nNUM: /[0-9]+/\n')
    r = gen.generate("x", g, max_tokens=24)
    assert r.valid and r.engine == "grammar"


def test_repair_remasks_and_redoes_failing_spans(gen):
    seen = []

    def no_sevens(text: str):
        seen.append(text)
        return [Issue("7 is not allowed", (text.index("7"), text.index("7") + 1))] if "7" in text else []

    g = sg.Grammar(r'start: /[0-9]{6}/' + "\n", validators=[no_sevens])
    gen.model.reseed(0)  # the module's model is shared: its draws must not depend on the tests before
    r = gen.generate("x", g, max_tokens=12, temperature=1.0, seed=3)
    assert r.valid and "7" not in r.text
    assert "7" in seen[0] and r.repair_rounds == len(seen) - 1 >= 1  # this draw needed a repair


def test_generation_error_after_bounded_rounds(gen):
    def never(text):
        return [Issue("always wrong", None)]

    g = sg.Grammar('start: "a" | "b"\n', validators=[never])
    with pytest.raises(sg.GenerationError) as e:
        gen.generate("x", g, max_tokens=4, max_repair_rounds=2)
    assert "always wrong" in str(e.value) and "2 repair round" in str(e.value)
    r = gen.generate("x", g, max_tokens=4, max_repair_rounds=1, strict=False)
    assert not r.valid and r.repair_rounds == 1


def test_trace_records_forced_and_model_steps(gen):
    r = gen.generate("x", sg.JsonSchema(PERSON), max_tokens=40, trace=True)
    kinds = {e.kind for e in r.trace}
    assert {"forced", "model"} <= kinds
    assert r.trace[-1].canvas == r.tokens
    assert all(-1 not in e.canvas for e in r.trace[-1:])


class _Exploding(sg.models.RandomLogits):
    def _logits(self, ids, attention_mask):
        raise AssertionError("the model must not be called")


def test_errors_are_raised_before_any_model_call(tok4k):
    gen = sg.Generator(_Exploding(tok4k))
    with pytest.raises(sg.CanvasTooSmallError, match="needs"):
        gen.generate("x", sg.JsonSchema(PERSON), max_tokens=3)
    with pytest.raises(sg.SpecError):
        gen.generate("x", {"type": "object", "properties": 3}, max_tokens=30)
    with pytest.raises(sg.GrammarSyntaxError):
        gen.generate("x", sg.Grammar("start: (\n"), max_tokens=30)
    with pytest.raises(sg.ConfigError):
        gen.generate("x", sg.JsonSchema(PERSON), max_tokens=30, threshold=1.5)
    with pytest.raises(sg.ConfigError):
        gen.generate("x", sg.JsonSchema(PERSON), max_tokens=30, not_a_setting=1)
    with pytest.raises(sg.SpecError):
        sg.Regex("(?=x)a")


def test_forced_only_output_needs_no_model_call(tok4k):
    gen = sg.Generator(_Exploding(tok4k))
    r = gen.generate("x", sg.Choice(["only answer"]), max_tokens=8)
    assert r.text == "only answer" and r.nfe == 0


def test_canvas_stays_on_model_device(gen):
    r = gen.generate("x", sg.JsonSchema(PERSON), max_tokens=32)
    assert all(isinstance(t, int) for t in r.tokens) and torch.device(gen.model.device).type == "cpu"


def test_shipped_grammar_by_name(gen):
    import lark

    g = sg.Grammar("arith.lark")
    assert g.path is not None and g.path.name == "arith.lark"
    r = gen.generate("x", g, max_tokens=16)
    lark.Lark(g.text).parse(r.text)
