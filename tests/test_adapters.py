"""LLaDA and Dream adapters against stand-in checkpoints built here (no weights can be downloaded).

The stand-ins have the real checkpoints' interfaces: a model directory with ``config.json`` (``model_type``,
``architectures``, ``auto_map``), its own ``configuration_*.py`` / ``modeling_*.py`` loaded through
``trust_remote_code`` exactly as the real ones are, safetensors weights, and a tokenizer with the real chat
format's special tokens and a chat template. LLaDA's ships ``tokenizer.json``; Dream's only ``vocab.json`` /
``merges.txt`` / ``tokenizer_config.json``, as Dream's does. Their logits make the conventions checkable:
the LLaDA stand-in's logit at ``i`` favours the token at ``i``, the Dream stand-in's the token at ``i + 1``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import structgen as sg
from structgen.errors import ConfigError, ModelLoadError
from structgen.models import DreamModel, HFMaskedLM, LLaDAModel, load_model
from structgen.models.default import backend_for
from structgen.models.dream import default_rope_parameters
from structgen.models.hf_mlm import quiet_loading
from structgen.models.llada import v5_compatible

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CORPUS = ['{"name": "Ada", "age": 36}', '{"name": "Bo", "city": "Porto"}', "hello world, the quick brown fox",
          "Maria Lopez, 41, lives in Porto"] * 20
EXTRA = 37  # output rows beyond the tokenizer, as LLaDA's 126,464 vs 126,349
LLADA_TOKENS = ["<|startoftext|>", "<|endoftext|>", "<|mdm_mask|>", "<|start_header_id|>", "<|end_header_id|>",
                "<|eot_id|>"]
LLADA_TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>"
                  "\\n\\n' }}{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
                  "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}")  # always ends with the header
DREAM_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
DREAM_TEMPLATE = ("{% if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                  "{% endif %}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                  "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

CONFIG_PY = '''
from transformers import PretrainedConfig


class {cls}(PretrainedConfig):
    model_type = "{model_type}"

    def __init__(self, hidden=16, vocab_size=64, mask_token_id=None, max_len=256, rope_theta=500.0, **kwargs):
        self.hidden, self.vocab_size, self.mask_token_id = hidden, vocab_size, mask_token_id
        self.hidden_size, self.num_attention_heads, self.rope_theta = hidden, 2, rope_theta
        self.{max_key} = max_len
        super().__init__(**kwargs)
'''

MODELING_PY = '''
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from .{config_module} import {config_cls}
{preamble}

class {cls}(PreTrainedModel):
    """Stand-in: a bidirectional mixing layer; position i favours the input token at i + {shift}."""

    config_class = {config_cls}
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden)
        self.mix = nn.Linear(config.hidden, config.hidden)
        self.head = nn.Linear(config.hidden, config.vocab_size, bias=False)
        self.calls = []
{v4_init}

    def get_output_embeddings(self):
        return self.head

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, **kwargs):
        self.calls.append({{"attention_mask": attention_mask, "position_ids": position_ids}})
        {check_mask}
        h = self.embed(input_ids)
        h = h + torch.tanh(self.mix(h.mean(dim=1, keepdim=True)))
        logits = self.head(h)
        target = torch.roll(input_ids, -{shift}, dims=1)
        return CausalLMOutputWithPast(logits=logits + 8.0 * F.one_hot(target, logits.shape[-1]).to(logits.dtype))
{methods}'''
LLADA_CHECK = "assert attention_mask is None or attention_mask.dim() == 2"
# transformers 4.x habits of the real modeling files: LLaDA never calls post_init() and has a tie_weights()
# without arguments; Dream computes RoPE frequencies through ROPE_INIT_FUNCTIONS["default"]
LLADA_METHODS = """
    def tie_weights(self):
        pass
"""
DREAM_PREAMBLE = """

class DreamRotaryEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config, self.rope_type, self.rope_kwargs = config, "default", {}
        self.rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
        inv_freq, self.attention_scaling = self.rope_init_fn(self.config, None, **self.rope_kwargs)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq
"""
DREAM_INIT = """        self.rotary_emb = DreamRotaryEmbedding(config)
        self.post_init()"""
DREAM_METHODS = """
    def _init_weights(self, module):  # like Dream's: Linear and Embedding only, no rotary buffers
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
"""
DREAM_CHECK = ('assert (isinstance(attention_mask, str) and attention_mask == "full") or '
               '(attention_mask.dim() == 4 and attention_mask.dtype == torch.bool)')


def _tokenizer(names, bos=None, eos=None, template=None):
    from structgen.tokenizers import train_bpe

    tok = train_bpe(CORPUS, 400)
    tok.add_tokens(names, special_tokens=True)
    if bos:
        tok.bos_token = bos
    if eos:
        tok.eos_token = tok.pad_token = eos
    tok.chat_template = template
    return tok


def _write_model(d: Path, *, kind: str, config: dict, tok_vocab: int) -> None:
    """config.json + the remote-code files + weights, for kind "llada" or "dream"."""
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    llada = kind == "llada"
    names = ("configuration_llada", "LLaDAConfig", "modeling_llada", "LLaDAModelLM") if llada else \
        ("configuration_dream", "DreamConfig", "modeling_dream", "DreamModel")
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{names[0]}.py").write_text(CONFIG_PY.format(
        cls=names[1], model_type="llada" if llada else "Dream",
        max_key="max_sequence_length" if llada else "max_position_embeddings"))
    (d / f"{names[2]}.py").write_text(MODELING_PY.format(
        config_module=names[0], config_cls=names[1], cls=names[3], shift=0 if llada else 1,
        check_mask=LLADA_CHECK if llada else DREAM_CHECK, preamble="" if llada else DREAM_PREAMBLE,
        v4_init="" if llada else DREAM_INIT, methods=LLADA_METHODS if llada else DREAM_METHODS))
    cfg = {"architectures": [names[3]], "model_type": "llada" if llada else "Dream",
           "auto_map": {"AutoConfig": f"{names[0]}.{names[1]}", "AutoModel": f"{names[2]}.{names[3]}"},
           "hidden": 16, "vocab_size": tok_vocab + EXTRA, "max_len": 256, **config}
    config_cls = get_class_from_dynamic_module(f"{names[0]}.{names[1]}", str(d), local_files_only=True)
    model_cls = get_class_from_dynamic_module(f"{names[2]}.{names[3]}", str(d), local_files_only=True)
    torch.manual_seed(0)
    with quiet_loading(), DreamModel._loading_context():
        v5_compatible(model_cls)(config_cls(**{k: v for k, v in cfg.items() if k not in ("auto_map", "model_type")})).save_pretrained(str(d))
    saved = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**saved, **cfg}))  # as published: auto_map names the .py files


@pytest.fixture(scope="module")
def llada_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("llada-standin")
    tok = _tokenizer(LLADA_TOKENS, bos="<|startoftext|>", eos="<|endoftext|>", template=LLADA_TEMPLATE)
    _write_model(d, kind="llada", tok_vocab=len(tok),
                 config={"mask_token_id": tok.convert_tokens_to_ids("<|mdm_mask|>"), "eos_token_id": tok.eos_token_id})
    tok.save_pretrained(str(d))
    return d


@pytest.fixture(scope="module")
def dream_dir(tmp_path_factory) -> Path:
    """Dream's layout: no tokenizer.json, only vocab.json, merges.txt and a tokenizer_config.json that names
    the remote DreamTokenizer and lists the added tokens."""
    d = tmp_path_factory.mktemp("dream-standin")
    tok = _tokenizer(DREAM_TOKENS)
    tok.backend_tokenizer.model.save(str(d))
    vocab = json.loads((d / "vocab.json").read_text())
    added = {str(vocab[t]): t for t in ("<|eos|>", "<|mask|>", "<|pad|>")}
    added.update({str(len(vocab) + i): t for i, t in enumerate(DREAM_TOKENS)})
    (d / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "DreamTokenizer", "auto_map": {"AutoTokenizer": ["tokenization_dream.DreamTokenizer", None]},
        "added_tokens_decoder": {i: {"content": t, "special": True, "lstrip": False, "rstrip": False,
                                     "normalized": False, "single_word": False} for i, t in added.items()},
        "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "mask_token": "<|mask|>", "bos_token": None,
        "chat_template": DREAM_TEMPLATE}))
    eos = len(vocab)
    _write_model(d, kind="dream", tok_vocab=len(vocab) + len(DREAM_TOKENS),
                 config={"mask_token_id": vocab["<|mask|>"], "eos_token_id": eos, "pad_token_id": eos})
    return d


@pytest.fixture(scope="module")
def llada(llada_dir) -> LLaDAModel:
    return load_model(llada_dir, device="cpu")


@pytest.fixture(scope="module")
def dream(dream_dir) -> DreamModel:
    return load_model(dream_dir, device="cpu")


# ---------------------------------------------------------------- loading and dispatch
def test_load_model_dispatches_on_config_json(llada, dream, llada_dir, dream_dir, tmp_path):
    assert type(llada) is LLaDAModel and type(dream) is DreamModel  # real trust_remote_code loads
    assert backend_for(llada_dir) is LLaDAModel and backend_for(dream_dir) is DreamModel
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "modernbert"}))
    assert backend_for(tmp_path) is HFMaskedLM and backend_for(tmp_path / "missing") is HFMaskedLM
    assert LLaDAModel.matches({"architectures": ["LLaDAModelLM"]}) and DreamModel.matches({"model_type": "dream"})
    assert not DreamModel.matches({"model_type": "llada"})
    for m in (llada, dream):
        assert m.device == torch.device("cpu") and next(m.model.parameters()).dtype == torch.float32
        assert m.max_length == 256 and m.name.startswith(("llada-standin", "dream-standin"))
    half = load_model(llada_dir, device="cpu", dtype="bfloat16")  # halves CPU memory for the 8B model
    assert next(half.model.parameters()).dtype == torch.bfloat16
    assert half.logits(torch.tensor([[5, 6, 7]])).dtype == torch.float32


def test_transformers5_shims_load_the_v4_era_modeling_code(llada, dream, llada_dir):
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    plain = get_class_from_dynamic_module("modeling_llada.LLaDAModelLM", str(llada_dir), local_files_only=True)
    with quiet_loading(), pytest.raises((AttributeError, TypeError)):  # what the stand-in reproduces
        plain.from_pretrained(str(llada_dir), local_files_only=True)
    assert type(llada.model).__mro__[1] is plain and hasattr(llada.model, "all_tied_weights_keys")
    inv_freq, scale = default_rope_parameters(dream.model.config)
    assert scale == 1.0 and torch.allclose(inv_freq, 1.0 / 500.0 ** (torch.arange(0, 8, 2) / 8))
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    assert "default" not in ROPE_INIT_FUNCTIONS  # only registered while Dream loads
    rotary = dream.model.rotary_emb
    assert torch.equal(rotary.inv_freq, inv_freq) and rotary.inv_freq.dtype == torch.float32


def test_llada_ids_width_and_no_shift(llada, llada_dir):
    tok = llada.tokenizer
    cfg = json.loads((llada_dir / "config.json").read_text())
    assert llada.mask_id == cfg["mask_token_id"] == tok.convert_tokens_to_ids("<|mdm_mask|>")
    assert llada.mask_id != tok.mask_token_id  # config.json wins over the tokenizer's own mask token
    assert llada.eos_id == tok.convert_tokens_to_ids("<|endoftext|>")
    assert llada.turn_end_ids == [tok.convert_tokens_to_ids("<|eot_id|>")]
    assert llada.vocab_size == len(tok) + EXTRA
    ids = torch.tensor([tok.encode("hello world, the quick brown fox", add_special_tokens=False)])
    out = llada.logits(ids)
    assert out.shape == (1, ids.shape[1], len(tok) + EXTRA) and out.dtype == torch.float32
    assert torch.equal(out.argmax(-1), ids)  # the stand-in's logit at i is about token i: no shift
    assert torch.isneginf(out[..., llada.turn_end_ids]).all()


def test_dream_shift_aligns_logits_with_positions(dream, dream_dir):
    tok = dream.tokenizer
    vocab = json.loads((dream_dir / "vocab.json").read_text())
    assert tok.is_fast and dream.mask_id == vocab["<|mask|>"] == tok.mask_token_id
    assert dream.eos_id == tok.convert_tokens_to_ids("<|endoftext|>") == tok.eos_token_id
    assert dream.turn_end_ids == [tok.convert_tokens_to_ids("<|im_end|>")]
    assert dream.vocab_size == len(tok) + EXTRA
    ids = torch.tensor([tok.encode("Maria Lopez, 41, lives in Porto", add_special_tokens=False)])
    raw = dream.model(input_ids=ids, attention_mask="full").logits
    assert torch.equal(raw.argmax(-1)[0, :-1], ids[0, 1:])  # the raw model predicts the next token
    out = dream.logits(ids)
    assert torch.equal(out.argmax(-1)[0, 1:], ids[0, 1:])  # after the shift, row i is about token i
    assert torch.equal(out[0, 0], out[0, 1])  # position 0 repeats its own row, as Dream's sampler does
    assert dream.model.calls[-1] == {"attention_mask": "full", "position_ids": None}


def test_dream_padding_mask_and_positions(dream):
    tok = dream.tokenizer
    ids = torch.tensor([tok.encode("hello world, the quick", add_special_tokens=False)])
    n = ids.shape[1]
    padded = torch.cat([torch.full((1, 3), dream.eos_id), ids], dim=1)
    mask = torch.cat([torch.zeros(1, 3, dtype=torch.long), torch.ones(1, n, dtype=torch.long)], dim=1)
    out = dream.logits(torch.cat([padded, torch.cat([ids, ids[:, :3]], dim=1)]),
                       attention_mask=torch.cat([mask, torch.ones_like(mask)]))
    call = dream.model.calls[-1]
    am, pos = call["attention_mask"], call["position_ids"]
    assert am.shape == (2, 1, n + 3, n + 3) and am.dtype == torch.bool
    assert not am[0, 0, 3:, :3].any() and am[0, 0, 3:, 3:].all()  # real tokens never see padding
    assert am[0, 0, :3, :3].equal(torch.eye(3, dtype=torch.bool))  # padding rows: only themselves, never empty
    assert pos[0].tolist() == [0, 0, 0] + list(range(n)) and pos[1].tolist() == list(range(n + 3))
    assert torch.isfinite(out[..., :len(tok)][..., dream.eos_id]).all()


def test_turn_end_probability_is_folded_into_eos():
    from structgen.tokenizers import train_bpe

    tok = train_bpe(CORPUS, 300)
    tok.add_tokens(["<|eot_id|>"], special_tokens=True)
    eot, eos, v = tok.convert_tokens_to_ids("<|eot_id|>"), tok.eos_token_id, len(tok) + 3
    table = torch.randn(4, v)
    table[1, eot], table[1, eos] = 5.0, 4.0
    stand_in = _TableModel(table, SimpleNamespace(vocab_size=v, mask_token_id=tok.mask_token_id))
    m = LLaDAModel.from_model(stand_in, tok)
    out = m.logits(torch.zeros(1, 4, dtype=torch.long))[0]
    assert out[1].argmax() == eos and torch.isneginf(out[:, eot]).all()
    assert torch.allclose(out[1].softmax(-1)[eos], table[1].softmax(-1)[[eot, eos]].sum())
    unfolded = LLaDAModel.from_model(stand_in, tok, fold_turn_end=False).logits(torch.zeros(1, 4, dtype=torch.long))
    assert unfolded[0, 1].argmax() == eot


class _TableModel(torch.nn.Module):
    """A model whose logits are a fixed table (row i for position i), whatever the input."""

    def __init__(self, table, config):
        super().__init__()
        self.table = torch.nn.Parameter(table, requires_grad=False)
        self.config = config

    def forward(self, input_ids=None, attention_mask=None, **kw):
        b, n = input_ids.shape
        return SimpleNamespace(logits=self.table[None, :n].expand(b, n, -1))


# ---------------------------------------------------------------- prompts
def test_llada_chat_rendering(llada):
    tok = llada.tokenizer
    ids = llada.encode_prompt([{"role": "user", "content": "  hello world "}])
    assert tok.decode(ids) == ("<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nhello world<|eot_id|>"
                               "<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert ids[0] == tok.bos_token_id and ids.count(tok.bos_token_id) == 1
    assert llada.encode_prompt("hello world") == ids  # a plain string is one user message (instruct model)
    pre = llada.encode_prompt([{"role": "user", "content": "hello world"}, {"role": "assistant", "content": '{"a'}])
    assert pre[:len(ids)] == ids and tok.decode(pre[len(ids):]) == '{"a'  # a prefill continues, no extra header
    plain = LLaDAModel.from_model(llada.model, tok, chat=False).encode_prompt("hello world")
    assert tok.decode(plain) == "hello world"
    with pytest.raises(ConfigError, match="prefill"):
        llada.encode_prompt([{"role": "assistant", "content": "x"}])


def test_dream_chat_rendering(dream):
    tok = dream.tokenizer
    text = tok.decode(dream.encode_prompt("hello world"))
    assert text == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nhello world"
                    "<|im_end|>\n<|im_start|>assistant\n")


# ---------------------------------------------------------------- generation through the adapters
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}


@pytest.mark.parametrize("which", ["llada", "dream"])
def test_generator_writes_valid_json(which, request):
    model = request.getfixturevalue(which)
    r = sg.Generator(model).generate("Maria Lopez, 41", sg.JsonSchema(SCHEMA), max_tokens=40)
    assert r.valid and set(r.value) == {"name", "age"} and 0 <= r.value["age"] <= 120
    assert all(t < len(model.tokenizer) for t in r.tokens)  # the extra output rows are never written
    assert r.tokens[r.n_output_tokens:] == [model.eos_id] * (len(r.tokens) - r.n_output_tokens)


# ---------------------------------------------------------------- errors
def test_missing_pieces_are_clear_errors(llada_dir, dream_dir, tmp_path):
    import shutil

    with pytest.raises(ModelLoadError, match="does not exist"):
        LLaDAModel.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(ModelLoadError, match="not a Dream checkpoint"):
        DreamModel.from_pretrained(llada_dir, device="cpu")
    broken = tmp_path / "no-code"
    shutil.copytree(llada_dir, broken)
    (broken / "modeling_llada.py").unlink()
    with pytest.raises(ModelLoadError, match="modeling_llada.py is missing.*huggingface-cli download"):
        load_model(broken, device="cpu")
    cfg = json.loads((broken / "config.json").read_text())
    cfg["auto_map"]["AutoModel"] = "GSAI-ML/LLaDA-8B-Instruct--modeling_llada.LLaDAModelLM"
    (broken / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="another repository"):
        load_model(broken, device="cpu")
    no_tok = tmp_path / "no-tok"
    shutil.copytree(dream_dir, no_tok)
    (no_tok / "merges.txt").unlink()
    with pytest.raises(ModelLoadError, match="merges.txt"):
        load_model(no_tok, device="cpu")


def test_mask_id_fallbacks(llada):
    tok = llada.tokenizer
    cfg = SimpleNamespace(vocab_size=llada.vocab_size)  # no mask_token_id in the config
    m = LLaDAModel.from_model(_TableModel(torch.zeros(2, llada.vocab_size), cfg), tok)
    assert m.mask_id == tok.convert_tokens_to_ids("<|mdm_mask|>")
    with pytest.raises(ModelLoadError, match="mask token id .*126336"):
        LLaDAModel.from_model(_TableModel(torch.zeros(2, llada.vocab_size), cfg), _tokenizer([]))
