"""Training and evaluation data for the embedded model: four families of generated examples.

    from structgen.train.data import examples, mixture, corpus_texts
    exs = examples("json", "train", 1000, seed=0)     # list[Example]
    mix = mixture("train", 5000, seed=0)              # every family, shuffled
    rows = mixed_in(my_rows, 100, seed=0)             # your examples and 100 of each family, shuffled
    texts = corpus_texts(20000, seed=0)               # rendered prompts and targets, for the tokenizer

Families (one module each, imported by name only when used, so a family's dependencies load only when
it is asked for): ``json`` (``json_extract``), ``tool`` (``tool_calls``), ``sql`` (``text_to_sql``),
``alert`` (``alert_rules``). Each module exposes ``TRAIN_TEMPLATES``, ``HELDOUT_TEMPLATES`` (disjoint
template ids; held-out templates never appear in training) and ``examples(split, n, seed)``. Everything is
deterministic in ``seed``.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterable, Sequence
from types import ModuleType

from structgen.errors import ConfigError

from .base import SPLITS, Example, Template, canonical_json, check_split, prompt_text

__all__ = ["FAMILIES", "MODULES", "SPLITS", "Example", "Template", "canonical_json", "corpus_texts", "examples",
           "family_module", "mixed_in", "mixture", "template_ids"]

FAMILIES = ("json", "tool", "sql", "alert")
MODULES = {"json": "json_extract", "tool": "tool_calls", "sql": "text_to_sql", "alert": "alert_rules"}


def family_module(family: str) -> ModuleType:
    """The module of ``family`` (imported on first use)."""
    if family not in MODULES:
        raise ConfigError(f"unknown data family {family!r}; choose from {', '.join(FAMILIES)}")
    return importlib.import_module(f"{__name__}.{MODULES[family]}")


def template_ids(family: str, split: str) -> tuple[str, ...]:
    """The template ids of ``family`` in ``split`` ("train" or "heldout")."""
    check_split(split)
    mod = family_module(family)
    items = mod.TRAIN_TEMPLATES if split == "train" else mod.HELDOUT_TEMPLATES
    return tuple(t if isinstance(t, str) else t.id for t in items)


def examples(family: str, split: str, n: int, seed: int = 0, sql_shapes: int = 1) -> list[Example]:
    """``n`` examples of ``family`` from the templates of ``split`` (``sql_shapes``: the version of the composed
    SQL training templates, ``text_to_sql.SHAPE_VERSIONS``)."""
    check_split(split)
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    if family == "sql":
        return family_module(family).examples(split, n, seed, shapes=sql_shapes)
    return family_module(family).examples(split, n, seed)


def _families(families: Iterable[str]) -> tuple[str, ...]:
    fams = (families,) if isinstance(families, str) else tuple(families)
    bad = [f for f in fams if f not in MODULES]
    if bad or not fams:
        raise ConfigError(f"families must be a non-empty subset of {', '.join(FAMILIES)}; got {list(fams)}")
    return fams


def mixture(split: str, n_per_family: int, seed: int = 0, families: Sequence[str] = FAMILIES,
            sql_shapes: int = 1) -> list[Example]:
    """``n_per_family`` examples of each family in ``split``, shuffled together (seeded)."""
    out: list[Example] = []
    for fam in _families(families):
        out += examples(fam, split, n_per_family, seed, sql_shapes)
    random.Random(f"mixture/{split}/{seed}").shuffle(out)
    return out


def mixed_in(rows: Sequence[Example], n_per_family: int, seed: int = 0, sql_shapes: int = 1) -> list[Example]:
    """``rows`` (a user's own examples) with ``n_per_family`` generated training examples of each built-in
    family added and everything shuffled (seeded): a fine-tuning run on them keeps the built-in tasks."""
    out = list(rows) + (mixture("train", n_per_family, seed, sql_shapes=sql_shapes) if n_per_family else [])
    random.Random(f"mixed_in/{seed}").shuffle(out)
    return out


def corpus_texts(n: int, seed: int = 0, families: Sequence[str] = FAMILIES, sql_shapes: int = 1) -> list[str]:
    """Texts to train the tokenizer on: for ``n`` train examples (split evenly over ``families``), the prompt
    as the model sees it (``spec.render_prompt``, chat messages joined by newlines) and the target."""
    fams = _families(families)
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    texts: list[str] = []
    for i, fam in enumerate(fams):
        k = n // len(fams) + (1 if i < n % len(fams) else 0)
        for ex in examples(fam, "train", k, seed, sql_shapes):
            texts.append(prompt_text(ex.spec.render_prompt(ex.prompt)))
            texts.append(ex.target)
    return texts

