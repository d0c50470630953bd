"""``TrainConfig``: every setting of a training run (model size, data, canvas policy, optimiser, budget).

Three presets: ``small()`` is the embedded default model's recipe, sized for at most 60 minutes on two CPU
cores and a model directory under 25 MB (4 layers x 256, 4.5M fp32 parameters, 18.4 MB of safetensors); ``gpu()``
is the capacity recipe for a GPU (6 layers x 384, 11.5M parameters stored in bfloat16, 23 MB); ``tiny()`` is
for tests (seconds). ``structgen.train.model_init`` builds the model a config describes, with the same
choices as ``structgen.models.default.untrained_config`` (global attention in every layer, SDPA).

**Canvas policy** (``canvas_length``). At inference the canvas is ``max_tokens`` long and the output is
followed by EOS up to the end, so a model must write EOS tails of any length. Each training row's canvas
is, with probability ``canvas_family_prob``, the canvas its family is evaluated with (``family_canvas``,
equal to ``structgen.train.evaluate.CANVAS``); with probability ``canvas_fixed_prob``, one of the round
sizes callers pass as ``max_tokens`` (``canvas_sizes``); otherwise the target plus a random
0..``canvas_extra_max`` EOS, rounded up to a multiple of ``canvas_multiple``. A size that cannot hold the
target falls through to the last rule. Lengths are capped at ``max_canvas``; a target
that does not fit is dropped (and counted in the report). Canvases are drawn again every epoch.

**Length curriculum** (``competence``). For the first ``curriculum`` share of the run, batches are drawn
from the shortest ``competence(progress)`` share of the rows only, starting at ``curriculum_start``, and
their canvases keep only that share of the room past the target (short EOS tails); the share grows as a
square root to every row at full length. It lowers the held-out loss at every step (docs/training-log.md,
run 3); copying values from the request took the copy head (``copy_head``, structgen.models.copy_head).

**Schedule.** Linear warmup for ``warmup_steps``, then cosine from ``lr`` to ``lr * min_lr_ratio``. The
schedule follows ``progress = max(step / steps, elapsed / budget)``, so with a time budget (``minutes``)
the learning rate reaches its floor when the budget ends. A run bounded by ``steps`` alone is exactly
reproducible from its seed; with a time budget the number of steps and the
curriculum's pace (hence the weights) depend on speed.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import ConfigError
from .evaluate import CANVAS as EVAL_CANVAS


SAVE_DTYPES = ("float32", "bfloat16")  # what the trained weights may be stored as (TrainConfig.save_dtype)


@dataclass
class TrainConfig:
    """All settings of ``structgen.train.trainer.train``; see the module docstring for the policies."""

    seed: int = 0
    # model (ModernBERT, global attention in every layer)
    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4  # head dim 64: the CPU flash-attention kernels run ~30% faster than with 8 heads of 32
    intermediate_size: int = 768
    max_positions: int = 1024
    copy_head: bool = True  # a pointer head over the visible tokens (structgen.models.copy_head)
    copy_neighbours: bool = True  # the pointer's span-continuation bonuses (copy_head's docstring)
    copy_convert: bool = False  # the pointer's conversion path: "July" -> 07 read off the source (run 18)
    convert_maps: int = 1  # with copy_convert: conversion maps per source that the reading slot chooses among
    # ("January" is 01 in a date, 1 as an integer; structgen.models.copy_head, run 23)
    convert_topk: int = 0  # with copy_convert: each position converts through its k heaviest sources only, and
    # only those get a vocabulary projection (0 = every source; structgen.models.copy_head, run 25)
    lookup: bool = False  # the generator reads the visible tokens' own embeddings before its projection: a
    # conversion that leaves the pointer a pure copier (structgen.models.copy_head, run 33)
    lookup_keys: str = "visible"  # with the lookup: what it reads, "visible" (prompt and committed canvas
    # tokens) | "prompt" (the request alone: run 33's lookup read the canvas neighbour, not the month word)
    request_notes: int = 0  # prompts carry the ISO form of their dates, times, offsets and amounts beside them:
    # structgen.request_notes's version (0 none; True is this structgen's newest, stored as its number, so the
    # recipe retrains with the same notes; recorded in config.json, so prompts at inference carry them too)
    pointer_loss: float = 0.3  # with copy_convert: the weight of the pointer's own loss (without it the path
    # collapses to the generator's constant; benchmarks/conversion_task.py)
    pointer_loss_on: str = "content"  # where that loss trains: "content" (every non-EOS target) | "sources"
    # (only the value tokens read off the request; needs source_loss > 0; training log, run 24)
    source_loss: float = 0.0  # the weight of the pointer's source loss: put the pointer on the request words a
    # value was rendered from (structgen.train.sources; 0 = off; needs the copy head; run 20)
    source_loss_on: str = "both"  # with the lookup: what the source loss trains, "both" | "pointer" | "lookup"
    # (the pointer alone without the lookup; run 34)
    dropout: float = 0.0  # ModernBERT's embedding and MLP dropout while training (off when decoding); 0.1 lowered
    # the held-out loss in run 12
    attention_dropout: float | None = None  # the attention probabilities' dropout (None = ``dropout``): on CPU it
    # moves SDPA off its fused kernel, a training step ~40% slower (run 12 lost 30% of its steps; run 14 sets 0)
    # tokenizer: byte-level BPE trained on ``corpus_texts(tokenizer_corpus, seed)``
    vocab_size: int = 4096
    pretokenizer: str = "words"  # structgen.tokenizers.PRETOKENIZERS: "words" keeps a word one token everywhere;
    # "json-words" also keeps a value's edge punctuation apart from JSON's quotes (runs 12 and 13)
    tokenizer_corpus: int = 20_000
    # data
    examples_per_family: int = 40_000
    heldout_per_family: int = 32
    sql_shapes: int = 1  # the version of the composed SQL training templates: 1 (run 11's data) | 2 (adds HAVING,
    # anti-joins, shares, spreads, first and last dates, months, per-customer and per-product keys:
    # structgen.train.data.sql_composed_more)
    drill_examples: int = 0  # JSON drill records added to the training rows: values to convert, not copy
    # (months, spelled dates, zones, currencies and cabins in words; structgen.train.data.json_drills, run 16)
    # canvas policy
    canvas_multiple: int = 16
    canvas_extra_max: int = 32
    canvas_family_prob: float = 0.3
    family_canvas: dict[str, int] = field(default_factory=lambda: dict(EVAL_CANVAS))  # what eval decodes with
    canvas_fixed_prob: float = 0.1
    canvas_sizes: tuple[int, ...] = (32, 48, 64, 96, 128, 192, 256)
    max_canvas: int = 256
    # optimisation
    batch_size: int = 16  # rows per batch at most ...
    max_batch_tokens: int = 4096  # ... and at most this many positions (rows x longest row), bounding memory
    lr: float = 1.5e-3
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    warmup_steps: int = 200
    schedule: str = "cosine"  # "cosine" | "constant" (both after the warmup)
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0
    eps: float = 1e-3  # LLaDA's t ~ U(eps, 1): the smallest masking probability
    prefix_share: float = 0.0  # rows whose response is cut and its prefix made prompt (objective.py)
    mask_power: float = 0.5  # t = u ** mask_power: below 1 (1 = LLaDA's uniform t), more rows near an empty
    # canvas (objective.py); 0.5 won a 14-minute A/B on tool calls, unconfirmed at full length (run 10)
    frontier_share: float = 0.5  # rows noised into the states decoding visits: a frontier, a block (objective.py);
    # 0.5 is run 9's recipe (training log, run 11)
    frontier_block: int = 32  # the block of those rows: the Generator's default block_length
    # length curriculum (``competence``): the share of the run it lasts (0 = off) and the starting share
    curriculum: float = 0.35
    curriculum_start: float = 0.03
    steps: int = 100_000
    minutes: float | None = 55.0  # wall-clock budget from the start of the run (None = steps only)
    # runtime
    device: str = "cpu"
    precision: str = "auto"  # "auto" | "bf16" | "fp32": autocast matmuls to bfloat16 (weights stay fp32)
    threads: int | None = 2
    eval_every: int = 250
    keep: str = "last"  # the weights saved: "last" | "best" (the lowest held-out loss at an evaluation;
    # structgen.train.keep_best)
    save_dtype: str = "float32"  # the saved weights' dtype: "float32" | "bfloat16" (half the bytes; the loader
    # computes in float32 on the CPU either way: run 11's tool calls and JSON scored alike stored in bfloat16)
    bucket_batches: int = 50  # rows are sorted by length inside windows of this many batches
    init_from: str | None = None  # fine-tuning: a structgen-trained model directory whose weights and tokenizer
    # the run starts from (its recipe's architecture; ``fine_tune``), instead of a fresh model and BPE

    # -------------------------------------------------------------------------------------------- presets
    @classmethod
    def small(cls, **overrides: Any) -> "TrainConfig":
        """The embedded default's recipe: <= 60 min on 2 CPU cores, a model directory <= 25 MB."""
        return cls(**overrides).validated()

    @classmethod
    def gpu(cls, **overrides: Any) -> "TrainConfig":
        """The capacity recipe, for a GPU: 6 layers x 384 (11.5M parameters, 23 MB of bfloat16 weights), batches
        of 16k positions, dropout, the request notes and the best held-out weights, 8 minutes (training log,
        runs 41-44: its 6 x 384 probe scored three times run 11's tool calls after 3 minutes of an H200)."""
        base = dict(hidden_size=384, num_layers=6, num_heads=6, intermediate_size=896, batch_size=64,
                    max_batch_tokens=16384, lr=1e-3, dropout=0.1, attention_dropout=0.0, request_notes=True,
                    keep="best", save_dtype="bfloat16", device="cuda", minutes=8.0, threads=None)
        return cls(**{**base, **overrides}).validated()

    @classmethod
    def tiny(cls, **overrides: Any) -> "TrainConfig":
        """A few seconds on one core: for tests and dry runs of the pipeline."""
        base = dict(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128, max_positions=1024,
                    vocab_size=600, tokenizer_corpus=400, examples_per_family=24, heldout_per_family=4,
                    canvas_sizes=(32, 64, 128), max_canvas=128, batch_size=8, max_batch_tokens=8192, lr=3e-3,
                    warmup_steps=5, steps=30, minutes=None, threads=1, eval_every=10, bucket_batches=4,
                    curriculum=0.0, precision="fp32", copy_head=False, mask_power=1.0, frontier_share=0.0)
        return cls(**{**base, **overrides}).validated()

    PRESETS: ClassVar[tuple[str, ...]] = ("small", "gpu", "tiny")
    #: what a model's weights and tokenizer fix: a fine-tuning run keeps its base's values of these
    ARCHITECTURE: ClassVar[tuple[str, ...]] = (
        "hidden_size", "num_layers", "num_heads", "intermediate_size", "max_positions", "copy_head",
        "copy_neighbours", "copy_convert", "convert_maps", "convert_topk", "lookup", "lookup_keys", "request_notes",
        "vocab_size", "pretokenizer", "tokenizer_corpus", "dropout", "attention_dropout")
    #: a fine-tuning run's own defaults: a tenth of the from-scratch rate, a short warm-up, no length
    #: curriculum, 1,000 steps or 10 minutes
    FINE_TUNE: ClassVar[dict[str, Any]] = dict(lr=3e-4, warmup_steps=50, curriculum=0.0, steps=1000, minutes=10.0,
                                               keep="last")

    @classmethod
    def fine_tune(cls, base: str | Any, **overrides: Any) -> "TrainConfig":
        """The config of a run that continues training the structgen-trained model in ``base`` (a directory,
        or ``"default"``: the embedded model) on new data: the base recipe's settings (architecture, canvas
        policy, request notes) with ``FINE_TUNE``'s schedule, then ``overrides``; ``ConfigError`` when an
        override would change what the weights or tokenizer fix (``ARCHITECTURE``) or the base has no
        recipe."""
        import json
        from pathlib import Path

        from ..models.default import DEFAULT_MODEL_DIR, RECIPE_FILE

        path = DEFAULT_MODEL_DIR if str(base) == "default" else Path(base).expanduser().resolve()
        recipe_file = path / RECIPE_FILE
        if not recipe_file.is_file():
            what = "does not exist" if not path.exists() else f"has no {RECIPE_FILE}"
            raise ConfigError(f"--from {str(base)!r}: {str(path)!r} {what}; fine-tuning starts from a model that "
                              "`structgen train` wrote (or 'default', the embedded model)")
        try:
            recipe = json.loads(recipe_file.read_text())
            settings = dict(recipe["config"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"--from {str(base)!r}: {RECIPE_FILE} there cannot be read ({e}); pass a model "
                              "directory that `structgen train` wrote") from None
        given = {k: v for k, v in overrides.items() if v is not None}
        base_cfg = cls.from_dict({**settings, "init_from": None})
        changed = [k for k in cls.ARCHITECTURE if k in given and given[k] != getattr(base_cfg, k)]
        if changed:
            raise ConfigError(f"{', '.join(changed)} would change the model that --from {str(base)!r} holds "
                              f"({', '.join(f'{k}={getattr(base_cfg, k)!r}' for k in changed)}); a fine-tuning run "
                              "keeps its architecture and tokenizer. Drop those options, or train from scratch "
                              "without --from")
        return cls.from_dict({**settings, **cls.FINE_TUNE, **given, "init_from": str(path)})

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TrainConfig":
        if name not in cls.PRESETS:
            raise ConfigError(f"unknown preset {name!r}; use one of {', '.join(cls.PRESETS)}")
        return getattr(cls, name)(**{k: v for k, v in overrides.items() if v is not None})

    # ----------------------------------------------------------------------------------------- checking
    def validated(self) -> "TrainConfig":
        """``self`` after checking every setting; ``ConfigError`` naming the first bad one."""
        positive = ("hidden_size", "num_layers", "num_heads", "intermediate_size", "max_positions", "vocab_size",
                    "tokenizer_corpus", "examples_per_family", "canvas_multiple", "max_canvas", "batch_size",
                    "max_batch_tokens", "steps", "eval_every", "bucket_batches", "frontier_block")
        for name in positive:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"{name} must be a positive integer, got {v!r}")
        if self.hidden_size % self.num_heads:
            raise ConfigError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads})")
        if self.sql_shapes not in (1, 2) or isinstance(self.sql_shapes, bool):
            raise ConfigError(f"sql_shapes (--sql-shapes) must be 1 (the default data) or 2 (the composed SQL "
                              f"constructs of sql_composed_more), got {self.sql_shapes!r}")
        if not (isinstance(self.pointer_loss, (int, float)) and self.pointer_loss >= 0):
            raise ConfigError(f"pointer_loss must be a number >= 0, got {self.pointer_loss!r}")
        if not (isinstance(self.source_loss, (int, float)) and self.source_loss >= 0):
            raise ConfigError(f"source_loss must be a number >= 0, got {self.source_loss!r}")
        if self.source_loss and not self.copy_head:
            raise ConfigError("source_loss (--source-loss) trains the copy head's pointer: set copy_head=True (the "
                              "small preset has it, tiny does not)")
        if self.copy_convert and not self.copy_head:
            raise ConfigError("copy_convert (--convert-path) needs the copy head: set copy_head=True (the small "
                              "preset has it, tiny does not)")
        if self.lookup and not self.copy_head:
            raise ConfigError("lookup (--lookup) is part of the copy head: set copy_head=True (the small preset "
                              "has it, tiny does not)")
        if self.lookup_keys not in ("visible", "prompt"):
            raise ConfigError(f"lookup_keys must be 'visible' or 'prompt', got {self.lookup_keys!r}")
        if self.lookup_keys != "visible" and not self.lookup:
            raise ConfigError(f"lookup_keys={self.lookup_keys!r} (--lookup-keys) says what the lookup reads: set "
                              "lookup=True (--lookup)")
        if self.source_loss_on not in ("both", "pointer", "lookup"):
            raise ConfigError(f"source_loss_on must be 'both', 'pointer' or 'lookup', got {self.source_loss_on!r}")
        if self.source_loss_on != "both" and not (self.lookup and self.source_loss):
            raise ConfigError(f"source_loss_on={self.source_loss_on!r} (--source-loss-on) chooses between the "
                              "pointer and the lookup: set lookup=True (--lookup) and source_loss > 0 "
                              "(--source-loss 0.5)")
        if not isinstance(self.convert_maps, int) or isinstance(self.convert_maps, bool) or self.convert_maps < 1:
            raise ConfigError(f"convert_maps must be a positive integer, got {self.convert_maps!r}")
        if self.convert_maps > 1 and not (self.copy_head and self.copy_convert):
            raise ConfigError(f"convert_maps={self.convert_maps} (--convert-maps) gives the copy head's conversion "
                              "path several maps: set copy_convert=True too (--convert-path)")
        if not isinstance(self.convert_topk, int) or isinstance(self.convert_topk, bool) or self.convert_topk < 0:
            raise ConfigError(f"convert_topk must be an integer >= 0, got {self.convert_topk!r}")
        if self.convert_topk and not (self.copy_head and self.copy_convert):
            raise ConfigError(f"convert_topk={self.convert_topk} (--convert-topk) narrows the copy head's conversion "
                              "path: set copy_convert=True too (--convert-path)")
        if self.keep not in ("last", "best"):
            raise ConfigError(f"keep must be 'last' or 'best', got {self.keep!r}")
        if self.save_dtype not in SAVE_DTYPES:
            raise ConfigError(f"save_dtype must be one of {', '.join(SAVE_DTYPES)}, got {self.save_dtype!r}")
        if self.pointer_loss_on not in ("content", "sources"):
            raise ConfigError(f"pointer_loss_on must be 'content' or 'sources', got {self.pointer_loss_on!r}")
        if self.pointer_loss_on == "sources" and not (self.copy_convert and self.source_loss):
            raise ConfigError("pointer_loss_on='sources' (--pointer-loss-on sources) keeps the conversion path's "
                              "pointer loss to the value tokens that have sources: set copy_convert=True "
                              "(--convert-path) and source_loss > 0 (--source-loss 0.5), which marks them")
        if self.vocab_size < 300:
            raise ConfigError(f"vocab_size={self.vocab_size} is too small for a byte-level BPE (256 bytes + "
                              "special tokens); use at least 300, e.g. 4096")
        if self.max_canvas >= self.max_positions:
            raise ConfigError(f"max_canvas ({self.max_canvas}) must leave room for the prompt inside "
                              f"max_positions ({self.max_positions})")
        for name in ("heldout_per_family", "drill_examples", "canvas_extra_max", "warmup_steps"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ConfigError(f"{name} must be an integer >= 0, got {v!r}")
        if not (0.0 <= self.canvas_fixed_prob and 0.0 <= self.canvas_family_prob
                and self.canvas_fixed_prob + self.canvas_family_prob <= 1.0):
            raise ConfigError(f"canvas_family_prob ({self.canvas_family_prob}) and canvas_fixed_prob "
                              f"({self.canvas_fixed_prob}) must be >= 0 with a sum <= 1")
        if not (isinstance(self.lr, (int, float)) and self.lr > 0):
            raise ConfigError(f"lr (--lr) must be a number > 0, such as 1.5e-3; got {self.lr!r}")
        if not (0 <= self.min_lr_ratio <= 1 and self.grad_clip > 0 and 0 < self.eps < 1):
            raise ConfigError("need 0 <= min_lr_ratio <= 1, grad_clip > 0 and 0 < eps < 1")
        if not (0.0 <= self.curriculum <= 1.0 and 0.0 < self.curriculum_start <= 1.0):
            raise ConfigError(f"need 0 <= curriculum <= 1 and 0 < curriculum_start <= 1, got {self.curriculum} "
                              f"and {self.curriculum_start}")
        for name, v in (("dropout", self.dropout), ("attention_dropout", self.attention_dropout)):
            if v is None and name == "attention_dropout":
                continue  # the same as dropout
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {v!r}")
        for name in ("prefix_share", "frontier_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        from ..tokenizers import PRETOKENIZERS

        if self.pretokenizer not in PRETOKENIZERS:
            raise ConfigError(f"pretokenizer must be one of {', '.join(PRETOKENIZERS)}, got {self.pretokenizer!r}")
        if self.precision not in ("auto", "bf16", "fp32"):
            raise ConfigError(f"precision must be 'auto', 'bf16' or 'fp32', got {self.precision!r}")
        if self.schedule not in ("cosine", "constant"):
            raise ConfigError(f"schedule must be 'cosine' or 'constant', got {self.schedule!r}")
        if not 0.0 < self.mask_power <= 4.0:
            raise ConfigError(f"mask_power must be in (0, 4], got {self.mask_power} (1 = LLaDA's uniform t)")
        if self.minutes is not None and self.minutes <= 0:
            raise ConfigError(f"minutes must be > 0 (or None for a step budget only), got {self.minutes}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads must be >= 1, got {self.threads}")
        if not self.device.startswith(("cpu", "cuda", "mps")):
            raise ConfigError(f"device must be cpu, cuda (or cuda:N) or mps, got {self.device!r}")
        self.request_notes = self._notes_version_checked()
        self.canvas_sizes = tuple(sorted(int(s) for s in self.canvas_sizes))
        self.betas = tuple(self.betas)
        self.family_canvas = {str(k): int(v) for k, v in dict(self.family_canvas).items()}
        return self

    def _notes_version_checked(self) -> int:
        """``request_notes`` as a version number (true: the newest; false: none), as ``check_version`` knows."""
        from ..request_notes import VERSION, check_version

        v = self.request_notes
        if isinstance(v, bool) or v is None:
            return VERSION if v else 0
        try:
            return check_version(v)
        except ConfigError:
            raise ConfigError(f"request_notes must be a version from 0 (none) to {VERSION} or true (the newest, "
                              f"{VERSION}), got {v!r}") from None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ConfigError(f"unknown training setting(s) {sorted(unknown)}; known: {sorted(names)}")
        if d.get("request_notes") is True:  # a recipe written while version 1 was the only one (run 38)
            d = {**d, "request_notes": 1}
        return cls(**d).validated()

    # ------------------------------------------------------------------------------------------ policies
    @property
    def notes_version(self) -> int:
        """The version of ``structgen.request_notes`` the prompts carry (0: none)."""
        return self._notes_version_checked()

    def canvas_length(self, n_target: int, rng: random.Random, cap: int | None = None,
                      family: str | None = None) -> int | None:
        """The canvas for a target of ``n_target`` tokens of ``family`` (see the module docstring), at most
        ``cap`` (default ``max_canvas``) positions; None when the target does not fit."""
        cap = self.max_canvas if cap is None else min(cap, self.max_canvas)
        if n_target > cap or cap < 1:
            return None
        u = rng.random()
        if u < self.canvas_family_prob:
            size = self.family_canvas.get(family or "")
            if size is not None and n_target <= size <= cap:
                return size
        elif u < self.canvas_family_prob + self.canvas_fixed_prob:
            fits = [s for s in self.canvas_sizes if n_target <= s <= cap]
            if fits:
                return rng.choice(fits)
        extra = rng.randint(0, self.canvas_extra_max)
        m = self.canvas_multiple
        return min(cap, max(m, -(-(n_target + extra) // m) * m))

    def competence(self, progress: float) -> float:
        """The share of the rows (shortest first) a batch may draw from at ``progress`` in [0, 1]:
        ``sqrt(c0^2 + (1 - c0^2) progress / curriculum)`` capped at 1 (Platanios et al., 2019), 1 when the
        curriculum is off. See the module docstring."""
        if self.curriculum <= 0.0:
            return 1.0
        c0 = self.curriculum_start
        return min(1.0, math.sqrt(c0 * c0 + (1.0 - c0 * c0) * max(0.0, progress) / self.curriculum))

    def lr_at(self, step: int, progress: float, warm: float = 0.0) -> float:
        """Learning rate at ``step`` (0-based) given the run's ``progress`` in [0, 1] and the progress
        ``warm`` at which the warmup ended (the cosine runs from there to the end)."""
        if self.warmup_steps and step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        if self.schedule == "constant":
            return self.lr
        p = min(1.0, max(0.0, (progress - warm) / max(1e-9, 1.0 - warm)))
        floor = self.lr * self.min_lr_ratio
        return floor + (self.lr - floor) * 0.5 * (1.0 + math.cos(math.pi * p))


__all__ = ["TrainConfig", "SAVE_DTYPES"]
