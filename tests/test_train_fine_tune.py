"""Fine-tuning (`structgen train --from DIR`, ``TrainConfig.fine_tune``): a run that starts from a trained
model's weights and tokenizer, keeps its architecture, learns the new data and records its base."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

import structgen as sg
from structgen.errors import ConfigError
from structgen.train.config import TrainConfig
from structgen.train.data.base import Example
from structgen.train.trainer import TrainData, train

from test_train import person_examples

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _weights(folder) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A tiny trained model, stored in bfloat16 (a fine-tuning run computes in float32 from it)."""
    out = tmp_path_factory.mktemp("ft") / "base"
    train(TrainConfig.tiny(steps=8, save_dtype="bfloat16"), out, progress=False,
          data=TrainData(person_examples(24), person_examples(4, 1)))
    return out


CODES = [Example("code", "c", f"The ticket for {n} is {c}.", sg.Regex(r"[A-Z]{3}-[0-9]{4}"), c, None)
         for n, c in (("Tom Berg", "QZX-7302"), ("Ana Silva", "MKP-1188"), ("Li Wei", "RTA-5521"))]


def test_a_fine_tuning_run_starts_from_the_base_and_records_it(base, tmp_path):
    cfg = TrainConfig.fine_tune(base, steps=1, lr=1e-12, warmup_steps=0)
    assert cfg.init_from == str(base.resolve()) and (cfg.hidden_size, cfg.num_layers) == (64, 2)
    assert (cfg.curriculum, cfg.save_dtype) == (0.0, "bfloat16")  # FINE_TUNE's schedule; the base's dtype
    train(cfg, tmp_path / "ft", progress=False, data=TrainData(CODES * 4))
    before, after = _weights(base), _weights(tmp_path / "ft")
    assert before.keys() == after.keys()  # a step at lr 1e-12 leaves the base's weights: no fresh model
    assert all(torch.allclose(before[k].float(), after[k].float(), atol=1e-2) for k in before)
    assert (base / "tokenizer.json").read_text() == (tmp_path / "ft" / "tokenizer.json").read_text()
    recipe = json.loads((tmp_path / "ft" / "structgen_recipe.json").read_text())
    assert recipe["base"]["dir"] == str(base.resolve()) and recipe["tokenizer"]["kind"].startswith("the base")
    assert recipe["base"]["weights_sha256"] == hashlib.sha256((base / "model.safetensors").read_bytes()).hexdigest()
    assert recipe["base"]["training"]["steps"] == 8 and recipe["config"]["init_from"] == str(base.resolve())
    # a second fine-tuning run chains its base's record
    train(TrainConfig.fine_tune(tmp_path / "ft", steps=1), tmp_path / "ft2", progress=False, data=TrainData(CODES))
    chained = json.loads((tmp_path / "ft2" / "structgen_recipe.json").read_text())
    assert chained["base"]["base"]["dir"] == str(base.resolve())


def test_fine_tuning_learns_the_new_task_and_is_seeded(base, tmp_path):
    cfg = TrainConfig.fine_tune(base, steps=60, lr=3e-3, warmup_steps=5, eval_every=1, max_canvas=64,
                                canvas_sizes=(32, 64), canvas_family_prob=0.0)
    report = train(cfg, tmp_path / "a", progress=False, data=TrainData(CODES * 4, CODES))
    assert report.steps == 60 and report.heldout_loss < 0.5 * report.curve[0]["heldout_loss"]
    train(cfg, tmp_path / "b", progress=False, data=TrainData(CODES * 4, CODES))
    a, b = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_embedded_model_is_a_base():
    cfg = TrainConfig.fine_tune("default", lr=1e-4)
    recipe = json.loads((sg.models.default.DEFAULT_MODEL_DIR / "structgen_recipe.json").read_text())["config"]
    assert all(getattr(cfg, k) == recipe[k] for k in ("hidden_size", "num_layers", "copy_head", "vocab_size"))
    assert (cfg.lr, cfg.steps, cfg.minutes, cfg.warmup_steps) == (1e-4, 1000, 10.0, 50)


def test_what_the_base_fixes_cannot_be_changed(base, tmp_path):
    with pytest.raises(ConfigError, match=r"hidden_size, num_layers would change the model .*hidden_size=64"):
        TrainConfig.fine_tune(base, hidden_size=128, num_layers=3)
    TrainConfig.fine_tune(base, hidden_size=64)  # the base's own value is fine
    with pytest.raises(ConfigError, match="does not exist"):
        TrainConfig.fine_tune(tmp_path / "nope")
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="has no structgen_recipe.json"):
        TrainConfig.fine_tune(tmp_path / "hf")


def test_cli_fine_tunes_and_refuses_clearly(base, tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app

    data = tmp_path / "codes.jsonl"
    data.write_text("\n".join(json.dumps({"prompt": e.prompt, "regex": e.spec.pattern, "target": e.target})
                              for e in CODES) + "\n")
    out = tmp_path / "tuned"
    res = CliRunner().invoke(app, ["train", "--from", str(base), "--data", str(data), "--steps", "3", "--out",
                                   str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert "fine-tuning" in res.stderr and json.loads(res.stdout[res.stdout.index("{"):])["steps"] == 3
    assert sg.load_model(out, device="cpu").vocab_size == sg.load_model(base, device="cpu").vocab_size
    for args, message in ((["--hidden-size", "128"], "would change the model"),
                          (["--preset", "tiny"], "pass one of them"),
                          (["--pretokenizer", "gpt2"], "pretokenizer would change")):
        bad = CliRunner().invoke(app, ["train", "--from", str(base), *args, "--out", str(tmp_path / "x")])
        assert bad.exit_code == 2 and message in bad.output and not (tmp_path / "x").exists()
    bad = CliRunner().invoke(app, ["train", "--from", str(tmp_path / "nope"), "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "does not exist" in bad.output


def test_mix_adds_the_built_in_families_to_your_examples(tmp_path):
    from typer.testing import CliRunner

    from structgen.cli import app
    from structgen.train.data import mixed_in

    rows = mixed_in(CODES, 2, seed=3)
    assert sorted(e.family for e in rows) == sorted(["code"] * 3 + ["json", "tool", "sql", "alert"] * 2)
    assert [e.prompt for e in rows] == [e.prompt for e in mixed_in(CODES, 2, seed=3)]  # seeded
    data = tmp_path / "codes.jsonl"
    data.write_text("\n".join(json.dumps({"prompt": e.prompt, "regex": e.spec.pattern, "target": e.target})
                              for e in CODES) + "\n")
    res = CliRunner().invoke(app, ["train", "--preset", "tiny", "--data", str(data), "--mix", "3", "--steps", "2",
                                   "--out", str(tmp_path / "m"), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout[res.stdout.index("{"):])
    assert report["n_train"] + sum(report["dropped"].values()) == 3 + 4 * 3
    bad = CliRunner().invoke(app, ["train", "--preset", "tiny", "--mix", "3", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--mix goes with --data" in bad.output and not (tmp_path / "x").exists()


def test_the_fine_tuning_benchmark_writes_valid_lines_in_unseen_phrasings(bench_script, tmp_path):
    """benchmarks/fine_tune.py: every line it writes satisfies its schema and loads as --data does, and the
    held-out requests are phrased in ways the file never uses."""
    import random

    from structgen.train.data.from_file import load_file

    ft = bench_script("fine_tune")
    rng = random.Random(0)
    lines = [ft.record(rng, ft.TRAIN_PHRASES) for _ in range(40)]
    path = tmp_path / "parcels.jsonl"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    rows, held = load_file(path)  # refuses a line whose target does not satisfy its spec
    assert len(rows) == 40 and not held
    assert all(x["target"]["tracking_code"] in x["prompt"] and x["target"]["recipient"] in x["prompt"] for x in lines)
    assert not set(ft.HELDOUT_PHRASES) & set(ft.TRAIN_PHRASES)
    assert all(ft.record(rng, ft.HELDOUT_PHRASES)["prompt"] not in {x["prompt"] for x in lines} for _ in range(20))
