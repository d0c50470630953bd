"""``train(config, out_dir)``: trains a masked-diffusion model from scratch, or fine-tunes one, and saves it as
a HF directory.

The run: seed everything (``random``, numpy, torch; data drawn from ``cfg.seed``); build the training
mixture and the held-out split (templates never seen in training); train the byte-level BPE; encode rows
(``batches.py``); initialise a ModernBERT, with a copy head by default (``model_init.build_model``); matmuls autocast to bfloat16 where
the device has fast bfloat16 kernels (``model_init.use_bf16``; weights and optimiser stay fp32); AdamW
(weight decay on matrices only), warmup + cosine (``TrainConfig.lr_at``), gradient clipping, LLaDA's loss
(``objective.py``), one step at a time (``step.py``); for the first part of the run a length curriculum (``TrainConfig.competence``). Every
``eval_every`` steps the held-out loss is measured with fixed noise, so values along the curve compare; with
``cfg.keep == "best"`` the weights of the lowest of those are saved instead of the last (``keep_best.py``).

The run stops at ``cfg.steps``, when ``cfg.minutes`` (counted from the call, data and tokenizer included)
are spent, at the first Ctrl-C, or before applying a non-finite loss (``stopped_by="diverged"``), and
still saves. The output directory is written atomically (``saving.py``): everything goes to a temporary
sibling folder that is renamed into place at the end, so ``out_dir`` is either the previous complete model,
the new complete model, or absent. It holds ``config.json``, ``model.safetensors`` (float32, or bfloat16
with ``cfg.save_dtype``), the tokenizer files and ``structgen_recipe.json`` (the config, the data seed and a
digest of the data, library versions, training time, losses): ``sg.load_model(out_dir)`` loads it.

Fine-tuning (``cfg.init_from``, ``TrainConfig.fine_tune``): the run starts from a structgen-trained model's
weights and tokenizer instead of a fresh model and BPE, with that model's architecture and prompt format;
the recipe records the base (``base``: its directory, a digest of its weights, its own data and training).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import random
import resource
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ..errors import ConfigError
from ..models.default import RECIPE_FILE
from ..models.hf_mlm import quiet_loading
from .batches import Batch, batch_stream, encode_examples, fixed_batches
from .config import TrainConfig
from .keep_best import BestWeights
from .model_init import build_model, count_parameters, use_bf16
from .objective import llada_loss
from .saving import check_out_dir, save_atomic
from .step import make_optimizer, training_step
from .tokenizer import build_tokenizer

EVAL_NOISE_SEED = 12345  # offset of the held-out noise seed: the same masks at every evaluation


@dataclass
class TrainData:
    """What a run trains on: examples (``structgen.train.data.Example``), held-out examples, a corpus for
    the tokenizer (default: the rendered prompts and targets of ``train``)."""

    train: Sequence[Any]
    heldout: Sequence[Any] = ()
    corpus: Sequence[str] | None = None


@dataclass
class TrainReport:
    out_dir: str
    steps: int
    epochs: float
    stopped_by: str  # "steps" | "time" | "interrupted" | "diverged" (a non-finite loss; lower lr)
    seconds: float  # the whole call
    prep_seconds: float  # data, tokenizer and encoding, before the first step
    train_seconds: float  # the optimisation loop (held-out evaluations included)
    eval_seconds: float  # the held-out evaluations inside the loop
    tokens: int  # non-pad tokens seen by the model
    steps_per_s: float
    tokens_per_s: float
    final_train_loss: float | None
    heldout_loss: float | None
    heldout_by_family: dict[str, float]
    params: int
    dir_mb: float
    peak_rss_mb: float
    n_train: int
    n_heldout: int
    dropped: dict[str, int]
    mean_prompt_tokens: float
    mean_target_tokens: float
    curve: list[dict[str, float]] = field(default_factory=list)
    kept_step: int | None = None  # the step whose weights were saved (``TrainConfig.keep``)

    def summary(self) -> str:
        held = "n/a" if self.heldout_loss is None else f"{self.heldout_loss:.4f}"
        fam = ", ".join(f"{k} {v:.3f}" for k, v in sorted(self.heldout_by_family.items()))
        train = "n/a" if self.final_train_loss is None else f"{self.final_train_loss:.4f}"
        return "\n".join([
            f"saved {self.out_dir} ({self.dir_mb:.1f} MB, {self.params:,} parameters)",
            f"{self.steps} steps ({self.epochs:.2f} epochs, stopped by {self.stopped_by}): {self.steps_per_s:.2f} "
            f"steps/s, {self.tokens_per_s:,.0f} tokens/s",
            f"time: {self.seconds:.0f}s = {self.prep_seconds:.0f}s data and tokenizer + {self.train_seconds:.0f}s "
            f"training ({self.eval_seconds:.0f}s of it held-out evaluation) + saving",
            f"loss: train {train}, held-out {held}" + (f" ({fam})" if fam else "")
            + (f"; saved the weights of step {self.kept_step}, the lowest held-out loss"
               if self.kept_step is not None and self.kept_step != self.steps else ""),
            f"rows: {self.n_train} train, {self.n_heldout} held-out, {self.mean_prompt_tokens:.0f} prompt + "
            f"{self.mean_target_tokens:.0f} target tokens on average"
            + (f"; dropped {dict(self.dropped)}" if self.dropped else "") + f"; peak RSS {self.peak_rss_mb:.0f} MB",
        ])


def load_data(cfg: TrainConfig) -> TrainData:
    """The training mixture (with ``cfg.drill_examples`` JSON drills), the held-out split and the tokenizer
    corpus for ``cfg`` (all from its seed)."""
    from .data import corpus_texts, json_drills, mixture

    train = mixture("train", cfg.examples_per_family, cfg.seed, sql_shapes=cfg.sql_shapes)
    if cfg.drill_examples:
        train += json_drills.examples(cfg.drill_examples, cfg.seed)
        random.Random(f"drills/{cfg.seed}").shuffle(train)
    return TrainData(train=train,
                     heldout=mixture("heldout", cfg.heldout_per_family, cfg.seed) if cfg.heldout_per_family else [],
                     corpus=None if cfg.init_from else corpus_texts(cfg.tokenizer_corpus, cfg.seed,
                                                                    sql_shapes=cfg.sql_shapes))


def start_from(cfg: TrainConfig, data: TrainData, device) -> tuple[Any, Any]:
    """``(tokenizer, model)`` a run starts with: a BPE trained on ``data``'s corpus (default: its training
    examples) and a fresh model, or, when fine-tuning (``cfg.init_from``), the base directory's tokenizer and
    weights (in float32, training mode)."""
    if not cfg.init_from:
        tok = build_tokenizer(cfg, data.corpus if data.corpus is not None else corpus_of(data.train))
        torch.manual_seed(cfg.seed)
        return tok, build_model(tok, cfg).to(device).train()
    from ..models.hf_mlm import HFMaskedLM
    from .tokenizer import check_round_trip

    base = HFMaskedLM.from_pretrained(cfg.init_from, device=device, dtype=torch.float32)
    check_round_trip(base.tokenizer)
    torch.manual_seed(cfg.seed)
    return base.tokenizer, base.model.float().train()


def corpus_of(examples: Sequence[Any]) -> list[str]:
    """The texts a tokenizer should learn from ``examples``: each rendered prompt (message contents) and target."""
    texts: list[str] = []
    for ex in examples:
        shown = ex.spec.render_prompt(ex.prompt)
        texts += [shown] if isinstance(shown, str) else [str(m.get("content") or "") for m in shown]
        texts.append(ex.target)
    return texts


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


@torch.no_grad()
def heldout_loss(model, batches: Sequence[Batch], mask_id: int, cfg: TrainConfig, device) -> tuple[float, dict]:
    """Mean held-out loss per row (and per family), with the same noise at every call."""
    if not batches:
        return math.nan, {}
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(cfg.seed + EVAL_NOISE_SEED)
    per_family: dict[str, list[float]] = defaultdict(list)
    for b in batches:
        b = b.to(device)
        rows, _ = llada_loss(model, b.input_ids, b.attention_mask, b.canvas, mask_id, eps=cfg.eps,
                             generator=gen, per_row=True)
        for fam, v in zip(b.families, rows.tolist()):
            per_family[fam].append(v)
    model.train(was_training)
    every = [v for vs in per_family.values() for v in vs]
    return float(np.mean(every)), {k: float(np.mean(v)) for k, v in per_family.items()}


def _progress(enabled: bool):
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return Progress(TextColumn("[bold]train[/]"), BarColumn(bar_width=24), TextColumn("{task.percentage:>3.0f}%"),
                    TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), disable=not enabled, transient=False)


def data_digest(examples: Sequence[Any]) -> str:
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps([ex.family, ex.template, ex.prompt, ex.target], default=str).encode("utf-8"))
    return h.hexdigest()[:32]


def train(config: TrainConfig | None, out_dir: str | os.PathLike, *, progress: bool = True,
          data: TrainData | None = None) -> TrainReport:
    """Train a model with ``config`` (default ``TrainConfig.small()``), save it to ``out_dir``, report."""
    t_start = time.perf_counter()
    cfg = (config or TrainConfig.small()).validated()
    out = Path(out_dir).expanduser().resolve()
    check_out_dir(out)
    device = torch.device(cfg.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda' was asked for but torch sees no CUDA device; pass --device cpu")
    budget = cfg.minutes * 60.0 if cfg.minutes else math.inf
    old_threads = torch.get_num_threads()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    try:
        _seed_everything(cfg.seed)
        data = data or load_data(cfg)
        if cfg.keep == "best" and not data.heldout:
            raise ConfigError("keep='best' (--keep best) chooses weights by the held-out loss, and this run has no "
                              "held-out examples; give some (a 'split': 'heldout' line in --data) or keep the last "
                              "weights (--keep last)")
        tok, model = start_from(cfg, data, device)
        rows, dropped = encode_examples(data.train, tok, cfg, pointers=cfg.source_loss > 0)
        held_rows, held_dropped = encode_examples(data.heldout, tok, cfg)
        if not rows:
            raise ConfigError(f"no training example fits (dropped: {dict(dropped) or 'none given'}); raise "
                              "max_positions / max_canvas or pass examples")
        pad_id, eos_id, mask_id = tok.pad_token_id, tok.eos_token_id, tok.mask_token_id
        held = fixed_batches(held_rows, cfg, cfg.seed + EVAL_NOISE_SEED, pad_id, eos_id)
        best = BestWeights() if cfg.keep == "best" else None

        opt = make_optimizer(model, cfg)
        bf16 = use_bf16(cfg, device)
        noise = torch.Generator().manual_seed(cfg.seed + 1)
        clock = {"progress": 0.0}  # the run's progress, read by the length curriculum
        stream = batch_stream(rows, cfg, cfg.seed + 2, pad_id, eos_id,
                              competence=(lambda: cfg.competence(clock["progress"])) if cfg.curriculum else None)

        curve: list[dict[str, float]] = []
        recent: list[float] = []
        since_eval: list[float] = []
        tokens = step = rows_seen = 0
        eval_seconds = 0.0
        stopped_by = "steps"
        warm = 0.0  # the progress at which the warmup ended
        lr = 0.0
        held_loss, held_fam = math.nan, {}
        t_loop = time.perf_counter()
        with _progress(progress) as bar:
            task = bar.add_task("train", total=1000, info="starting")
            try:
                while step < cfg.steps:
                    elapsed = time.perf_counter() - t_start
                    if elapsed >= budget:
                        stopped_by = "time"
                        break
                    frac = max(step / cfg.steps, elapsed / budget)
                    clock["progress"] = frac
                    if step == cfg.warmup_steps:
                        warm = frac
                    lr = cfg.lr_at(step, frac, warm)
                    for g in opt.param_groups:
                        g["lr"] = lr
                    _, batch = next(stream)
                    batch = batch.to(device)
                    value = training_step(model, opt, batch, cfg, mask_id, eos_id, noise, bf16)
                    if value is None:  # keep the last finite weights and save them
                        stopped_by = "diverged"
                        break
                    step += 1
                    tokens += batch.n_tokens
                    rows_seen += batch.input_ids.shape[0]
                    recent.append(value)
                    since_eval.append(value)
                    recent = recent[-50:]
                    if step % cfg.eval_every == 0:
                        t_eval = time.perf_counter()
                        held_loss, held_fam = heldout_loss(model, held, mask_id, cfg, device)
                        if best is not None:
                            best.offer(model, step, held_loss, held_fam)
                        eval_seconds += time.perf_counter() - t_eval
                        curve.append(_point(step, t_start, since_eval, held_loss, lr))
                        since_eval = []
                        _log_to_file(bar, progress, curve[-1], held_fam)
                    rate = tokens / max(1e-9, time.perf_counter() - t_loop - eval_seconds)
                    bar.update(task, completed=1000 * max(step / cfg.steps, (time.perf_counter() - t_start) / budget),
                               info=f"step {step} loss {np.mean(recent):.3f} held-out "
                                    f"{'-' if math.isnan(held_loss) else f'{held_loss:.3f}'} "
                                    f"lr {lr:.1e} {rate:,.0f} tok/s")
            except KeyboardInterrupt:
                stopped_by = "interrupted"
        train_seconds = time.perf_counter() - t_loop
        opt_seconds = max(train_seconds - eval_seconds, 1e-9)
        if since_eval or not curve:
            held_loss, held_fam = heldout_loss(model, held, mask_id, cfg, device)
            curve.append(_point(step, t_start, since_eval, held_loss, lr))
            _log_to_file(bar, progress, curve[-1], held_fam)
        kept_step = step
        if best is not None:
            best.offer(model, step, held_loss, held_fam)
            if best.restore(model):
                kept_step, held_loss, held_fam = best.step, best.loss, best.by_family
        all_dropped = dict(dropped + Counter({f"held-out {k}": v for k, v in held_dropped.items()}))
        params = count_parameters(model)
        lengths = {"mean_prompt_tokens": float(np.mean([len(r.prompt_ids) for r in rows])),
                   "mean_target_tokens": float(np.mean([len(r.target_ids) for r in rows]))}
        final_train = float(np.mean(recent)) if recent else None
        held_val = None if math.isnan(held_loss) else held_loss
        recipe = {
            "kind": "structgen-trained", "version": 1, "config": cfg.to_dict(),
            "data": {"seed": cfg.seed, "examples_per_family": cfg.examples_per_family, "n_train": len(rows),
                     "n_heldout": len(held_rows), "dropped": all_dropped, "digest": data_digest(data.train),
                     "families": dict(Counter(r.family for r in rows)), **lengths},
            "tokenizer": {"kind": "the base model's (init_from)" if cfg.init_from else "train_bpe(corpus_texts)"
                          if data.corpus is not None else "train_bpe(examples)", "vocab_size": len(tok)},
            **({"base": _base_record(cfg.init_from)} if cfg.init_from else {}),
            "provenance": {**_provenance(cfg, device), "autocast": "bfloat16" if bf16 else None},
            "training": {"steps": step, "epochs": rows_seen / len(rows), "stopped_by": stopped_by,
                         "prep_seconds": round(t_loop - t_start, 1), "train_seconds": round(train_seconds, 1),
                         "eval_seconds": round(eval_seconds, 1),
                         "tokens": tokens, "params": params,
                         "final_train_loss": final_train, "heldout_loss": held_val, "heldout_by_family": held_fam,
                         "kept": {"weights": cfg.keep, "step": kept_step}, "curve": curve},
        }

        def write(tmp: Path) -> None:
            model.eval()
            if cfg.save_dtype != "float32":  # the last use of the model: cast it in place, no second copy
                model.to(getattr(torch, cfg.save_dtype))
            with quiet_loading():
                model.save_pretrained(str(tmp))
            tok.save_pretrained(str(tmp))
            (tmp / RECIPE_FILE).write_text(json.dumps(recipe, indent=2, default=str, allow_nan=False))

        save_atomic(out, write)
    finally:
        torch.set_num_threads(old_threads)
    return TrainReport(
        out_dir=str(out), steps=step, epochs=rows_seen / len(rows), stopped_by=stopped_by,
        seconds=time.perf_counter() - t_start, prep_seconds=t_loop - t_start, train_seconds=train_seconds,
        eval_seconds=eval_seconds, tokens=tokens,
        steps_per_s=step / opt_seconds, tokens_per_s=tokens / opt_seconds,
        final_train_loss=final_train, heldout_loss=held_val, heldout_by_family=held_fam, params=params,
        dir_mb=sum(p.stat().st_size for p in out.iterdir() if p.is_file()) / 1e6,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, n_train=len(rows),
        n_heldout=len(held_rows), dropped=all_dropped, curve=curve, kept_step=kept_step, **lengths,
    )


def _base_record(base: str) -> dict[str, Any]:
    """What a fine-tuning run started from: the directory, a digest of its weights, and its own recipe's
    data and training summary (so a chain of runs can be traced back to the run from scratch)."""
    folder = Path(base)
    h = hashlib.sha256()
    for f in sorted(folder.glob("*.safetensors")):
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    try:
        recipe = json.loads((folder / RECIPE_FILE).read_text())
    except (OSError, ValueError):
        recipe = {}
    training = {k: v for k, v in (recipe.get("training") or {}).items() if k != "curve"}
    return {"dir": str(folder), "weights_sha256": h.hexdigest(), "data": recipe.get("data"), "training": training,
            **({"base": recipe["base"]} if "base" in recipe else {})}


def _log_to_file(bar, progress: bool, point: dict[str, Any], by_family: dict[str, float]) -> None:
    """When the progress bar's console is not a terminal (a log file), one plain line per evaluation."""
    if progress and not bar.console.is_terminal:
        bar.console.print(_log_line(point, by_family), highlight=False, soft_wrap=True)


def _log_line(point: dict[str, Any], by_family: dict[str, float]) -> str:
    fam = " ".join(f"{k} {v:.3f}" for k, v in sorted(by_family.items()))
    train_loss = "-" if point["train_loss"] is None else f"{point['train_loss']:.4f}"
    return (f"step {point['step']} at {point['seconds']:.0f}s: train loss {train_loss}, held-out "
            f"{point['heldout_loss'] if point['heldout_loss'] is not None else '-'} ({fam}), lr {point['lr']:.2e}")


def _point(step: int, t_start: float, losses: list[float], held: float, lr: float) -> dict[str, Any]:
    """One point of the loss curve (None where a value is missing, so the recipe stays strict JSON)."""
    return {"step": step, "seconds": round(time.perf_counter() - t_start, 1),
            "train_loss": round(float(np.mean(losses)), 5) if losses else None,
            "heldout_loss": None if math.isnan(held) else round(held, 5), "lr": lr}


def _provenance(cfg: TrainConfig, device: torch.device) -> dict[str, Any]:
    import tokenizers
    import transformers

    from .. import __version__

    return {"structgen": __version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "python": platform.python_version(),
            "platform": platform.platform(), "device": str(device), "threads": torch.get_num_threads(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}


__all__ = ["TrainConfig", "TrainData", "TrainReport", "train", "load_data", "save_atomic", "heldout_loss"]
