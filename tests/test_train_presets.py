"""The training presets beyond ``small`` and the dtype the weights are saved in (``TrainConfig.save_dtype``)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open
from typer.testing import CliRunner

import structgen as sg
from structgen.cli import app
from structgen.errors import ConfigError
from structgen.train.config import TrainConfig
from structgen.train.model_init import build_model, count_parameters
from structgen.train.trainer import TrainData, train

from test_train import PERSON, person_examples  # stand-in JSON examples: text and chat prompts

MAX_SHIPPED_MB = 25.0  # issue 4: the shipped weights are at most 25 MB


def _tensors(path) -> dict[str, torch.Tensor]:
    with safe_open(str(path / "model.safetensors"), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def test_bfloat16_weights_are_the_trained_ones_rounded_and_load_as_float32(tmp_path):
    data = TrainData(person_examples(16), person_examples(4, 1))
    for name, dtype in (("fp32", "float32"), ("bf16", "bfloat16")):
        train(TrainConfig.tiny(steps=6, save_dtype=dtype), tmp_path / name, progress=False, data=data)
    full, half = _tensors(tmp_path / "fp32"), _tensors(tmp_path / "bf16")
    assert full.keys() == half.keys()
    floats = [k for k in full if full[k].is_floating_point()]
    assert floats and all(full[k].dtype == torch.float32 and half[k].dtype == torch.bfloat16 for k in floats)
    assert all(torch.equal(full[k].to(torch.bfloat16), half[k]) for k in floats)  # the same run, rounded once
    size = {n: (tmp_path / n / "model.safetensors").stat().st_size for n in ("fp32", "bf16")}
    assert size["bf16"] < 0.6 * size["fp32"]

    model = sg.load_model(tmp_path / "bf16", device="cpu")  # computes in float32 on the CPU
    assert {p.dtype for p in model.model.parameters()} == {torch.float32}
    ids = torch.tensor([[model.tokenizer.mask_token_id] * 4])
    assert model.logits(ids).dtype == torch.float32
    assert sg.Generator(model).generate("Tom Berg, 31", sg.JsonSchema(PERSON), max_tokens=24).valid


def test_gpu_preset_is_the_capacity_recipe_and_fits_the_shipping_limit():
    cfg = TrainConfig.preset("gpu")
    assert (cfg.num_layers, cfg.hidden_size, cfg.device, cfg.save_dtype, cfg.keep) == (6, 384, "cuda", "bfloat16",
                                                                                         "best")
    assert cfg.request_notes and cfg.dropout > 0 and cfg.max_batch_tokens > TrainConfig.small().max_batch_tokens
    model = build_model(sg.models.default.default_tokenizer(), cfg)
    n = count_parameters(model)
    assert n > 2 * count_parameters(build_model(sg.models.default.default_tokenizer(), TrainConfig.small()))
    assert n * 2 / 1e6 < MAX_SHIPPED_MB - 1  # bfloat16 weights, with room for the tokenizer and config
    assert TrainConfig.preset("gpu", device="cpu", minutes=1.0).device == "cpu"  # overrides still apply



def test_every_train_grid_recipe_is_a_valid_config(bench_script):
    """A GPU session runs ``benchmarks/train_grid.py``'s recipes on a bare machine with minutes to spare: each
    recipe's preset and overrides make a valid ``TrainConfig`` (a misspelt setting fails here, not there)."""
    grid = bench_script("train_grid")
    configs = {name: TrainConfig(**{**TrainConfig.preset(preset).to_dict(), **overrides}).validated()
               for name, (preset, overrides) in grid.RECIPES.items()}
    assert configs["gpu-sql2"].sql_shapes == 2 and configs["gpu"].sql_shapes == 1
    assert configs["gpu-sql2"].hidden_size == configs["gpu"].hidden_size

def test_save_dtype_is_checked():
    with pytest.raises(ConfigError, match="save_dtype must be one of float32, bfloat16"):
        TrainConfig.tiny(save_dtype="float16")


def test_cli_gpu_preset_without_a_gpu_says_what_to_do(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the preset would train")
    r = CliRunner().invoke(app, ["train", "--preset", "gpu", "--out", str(tmp_path / "m")])
    assert r.exit_code == 2 and "no CUDA device" in r.output and "--device cpu" in r.output
    assert not (tmp_path / "m").exists()
    r = CliRunner().invoke(app, ["train", "--preset", "tiny", "--save-dtype", "half", "--out", str(tmp_path / "m")])
    assert r.exit_code == 2 and "save_dtype" in r.output


def test_cli_sets_the_model_shape_and_the_saved_dtype(tmp_path):
    out = tmp_path / "m"
    r = CliRunner().invoke(app, ["train", "--preset", "tiny", "--steps", "2", "--examples-per-family", "4",
                                 "--hidden-size", "96", "--layers", "3", "--heads", "3", "--intermediate-size", "160",
                                 "--save-dtype", "bfloat16", "--out", str(out)])
    assert r.exit_code == 0, r.output
    config = json.loads((out / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"],
            config["intermediate_size"]) == (96, 3, 3, 160)
    recipe = json.loads((out / "structgen_recipe.json").read_text())["config"]
    assert (recipe["hidden_size"], recipe["num_layers"], recipe["save_dtype"]) == (96, 3, "bfloat16")
    assert {t.dtype for t in _tensors(out).values() if t.is_floating_point()} == {torch.bfloat16}
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--hidden-size", "100", "--heads", "3",
                                   "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "multiple of num_heads" in bad.output and not (tmp_path / "bad").exists()
