"""The training-data framework: examples, templates, phrasing, canonical JSON and seeded generation.

* :class:`Example` is one training or evaluation item (the contract every family produces).
* :class:`Template` renders one example from a ``random.Random``; a :class:`Registry` per family holds the
  train and held-out templates (held-out = never seen in training, so evaluation measures generalisation
  to new phrasings and domains, not to new values).
* :func:`say` is the paraphrase machinery: ``[a|b|]`` picks an alternative (the empty one makes a part
  optional), ``<slot:...>`` keeps a part only when the slot has a value, ``{slot}`` inserts a value;
  :func:`noise` varies casing and punctuation of the template words (never of the inserted values).
* :func:`canonical_json` is the one serialisation of every JSON target: ``", "`` and ``": "`` separators
  (the one layout both engines write, docs/design-notes.md "Whitespace"), non-ASCII
  kept as is, keys in schema property order (:func:`ordered`).
* :func:`example_file` finds a file of ``examples/`` (the tools, the shop database's builder, the alert
  catalog) in a source checkout or, installed from a wheel, inside the package (``structgen/examples``).
* :func:`generate` draws ``n`` examples deterministically: example ``i`` depends only on (family, split,
  seed, i), so a shorter run is a prefix of a longer one; templates are used round-robin in a seeded order.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structgen.errors import ConfigError, SpecError

SPLITS = ("train", "heldout")

#: where examples/ is: beside the package in a source checkout (or an editable install), inside it in a wheel
#: (setup.py installs examples/*.py and pyproject's package data as ``structgen.examples``)
EXAMPLES_DIRS = (Path(__file__).resolve().parents[3] / "examples", Path(__file__).resolve().parents[2] / "examples")


def example_file(relative: str, needed_for: str) -> Path:
    """The path of ``examples/<relative>`` (``EXAMPLES_DIRS``, the checkout's first); a ``SpecError`` that
    says where it looked and what to do when neither has it."""
    for folder in EXAMPLES_DIRS:
        if (folder / relative).is_file():
            return folder / relative
    raise SpecError(f"{needed_for} needs examples/{relative}, which is neither in a source checkout "
                    f"({EXAMPLES_DIRS[0] / relative}) nor installed with the package ({EXAMPLES_DIRS[1] / relative}); "
                    "reinstall structgen (pip install -e . from the repository) or leave that family out")


@dataclass(frozen=True)
class Example:
    """One item: what the user passes (``prompt``, ``spec``) and what the model must write (``target``).

    ``spec.render_prompt(prompt)`` is what the model sees; ``gold`` is the family's reference value (the
    object for json/tool, the SQL text for sql, the canonical rule for alert)."""

    family: str
    template: str
    prompt: Any
    spec: Any
    target: str
    gold: Any
    sources: tuple["ValueSource", ...] = ()  # where the request states the target's values (may be empty)


@dataclass(frozen=True)
class ValueSource:
    """Where a value of the target comes from: the target's ``"key": value`` pair (``value`` its canonical
    JSON text) was rendered from ``texts`` of the request ("July 14, 2026" for ``"due": "2026-07-14"``). The
    trainer turns these into pointer targets (``structgen.train.sources``): the copy head learns *which*
    words a slot reads, converted values included, instead of finding them by matching alone."""

    key: str
    value: str
    texts: tuple[str, ...]

    @classmethod
    def of(cls, key: str, value: Any, *texts: Any) -> "ValueSource":
        return cls(key, canonical_json(value), tuple(str(t) for t in texts if t is not None and str(t).strip()))

    @classmethod
    def tool_name(cls, name: str) -> "ValueSource":
        """A tool call's ``"name"``, read from the tool's own line of the prompt's tool list: the name is
        copied, not generated, and without this source the source loss taught the pointer to read the
        request at every value token and nothing to read the list (training log, runs 25-30)."""
        return cls.of("name", name, name)


#: ``render(rng) -> (prompt, target, gold, spec)`` or ``(prompt, target, gold, spec, sources)``
Render = Callable[[random.Random], tuple]


@dataclass(frozen=True)
class Template:
    """``render(rng) -> (prompt, target, gold, spec[, sources])`` (``sources``: :class:`ValueSource` s)."""

    id: str
    family: str
    split: str
    render: Render


class Registry:
    """The templates of one family, by split. ``@reg.template("id", split)`` registers a render function."""

    def __init__(self, family: str):
        self.family = family
        self._by_id: dict[str, Template] = {}

    def template(self, id: str, split: str = "train") -> Callable[[Render], Render]:
        if split not in SPLITS:
            raise SpecError(f"template {id!r}: split must be one of {SPLITS}, got {split!r}")

        def deco(fn: Render) -> Render:
            self.add(Template(id, self.family, split, fn))
            return fn

        return deco

    def add(self, t: Template) -> None:
        if t.id in self._by_id:
            raise SpecError(f"template id {t.id!r} is registered twice in family {self.family!r}")
        self._by_id[t.id] = t

    def split(self, split: str) -> tuple[Template, ...]:
        return tuple(t for t in self._by_id.values() if t.split == split)

    @property
    def train(self) -> tuple[Template, ...]:
        return self.split("train")

    @property
    def heldout(self) -> tuple[Template, ...]:
        return self.split("heldout")


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ConfigError(f"split must be 'train' or 'heldout', got {split!r}")


def generate(family: str, split: str, templates: Sequence[Template], n: int, seed: int,
             stream: str = "") -> list[Example]:
    """``n`` examples from ``templates``, round-robin in a seeded order, each from its own seeded rng;
    ``stream`` names another sequence of seeds for the same family (the JSON drills beside its templates)."""
    check_split(split)
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    if not templates:
        raise ConfigError(f"family {family!r} has no {split} templates")
    family_seed = f"{family}{stream}"
    order_rng = random.Random(f"{family_seed}/{split}/{seed}/order")
    out: list[Example] = []
    perm: list[Template] = []
    for i in range(n):
        if i % len(templates) == 0:
            perm = list(templates)
            order_rng.shuffle(perm)
        t = perm[i % len(templates)]
        prompt, target, gold, spec, *sources = t.render(random.Random(f"{family_seed}/{split}/{seed}/{i}"))
        out.append(Example(family, t.id, prompt, spec, target, gold, tuple(sources[0]) if sources else ()))
    return out


# ---------------------------------------------------------------------------------------------- JSON form
def canonical_json(obj: Any) -> str:
    """The canonical text of a JSON target (what the model must write)."""
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)


def ordered(value: Any, schema: dict) -> Any:
    """``value`` with object keys in ``schema``'s property order (recursively; unknown keys last)."""
    if isinstance(value, dict) and isinstance(schema, dict):
        props = schema.get("properties") or {}
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: ordered(value[k], props.get(k, {})) for k in keys}
    if isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        return [ordered(v, schema["items"]) for v in value]
    return value


def prompt_text(prompt: Any) -> str:
    """The text of a prompt given as a string or as chat messages (contents joined by newlines)."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(str(m.get("content", "")) for m in prompt)


# ------------------------------------------------------------------------------------------ paraphrasing
_COND = re.compile(r"<(\w+):([^<>]*)>")
_ALT = re.compile(r"\[([^\[\]]*)\]")
_SLOT = re.compile(r"\{(\w+)\}")


def expand(rng: random.Random, pattern: str, slots: dict[str, Any] | None = None) -> str:
    """Resolve ``<slot:...>`` (kept when ``slots[slot]`` is not None) and ``[a|b|]`` alternatives
    (innermost first); ``{slot}`` placeholders are left in place."""
    slots = slots or {}
    text = _COND.sub(lambda m: m.group(2) if slots.get(m.group(1)) is not None else "", pattern)
    while True:
        new = _ALT.sub(lambda m: rng.choice(m.group(1).split("|")), text)
        if new == text:
            return new
        text = new


def fill(text: str, slots: dict[str, Any]) -> str:
    def sub(m: re.Match) -> str:
        v = slots.get(m.group(1))
        if v is None:
            raise SpecError(f"phrasing uses slot {{{m.group(1)}}} but it has no value; guard it with "
                            f"<{m.group(1)}:...>")
        return str(v)

    return _SLOT.sub(sub, text)


def noise(rng: random.Random, text: str, p: float = 1.0) -> str:
    """Casing and punctuation noise on template words: lower-case, a dropped or changed final stop,
    dropped commas, tidied spaces. Placeholders (lower-case ``{slot}``) pass through unchanged."""
    text = re.sub(r" {2,}", " ", text).replace(" ,", ",").replace(" .", ".").strip()
    r = rng.random() / p
    if r < 0.12:
        text = text.lower()
    elif r < 0.2 and text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    r = rng.random() / p
    if r < 0.15 and text.endswith("."):
        text = text[:-1]
    elif r < 0.2 and text.endswith("."):
        text = text[:-1] + "!"
    if rng.random() / p < 0.08:
        text = re.sub(r",(?= )", "", text)
    return text


def say(rng: random.Random, patterns: str | Sequence[str], slots: dict[str, Any], *, p_noise: float = 1.0) -> str:
    """One phrasing: pick a pattern, resolve its alternatives and conditions, add noise, insert values."""
    pattern = patterns if isinstance(patterns, str) else rng.choice(list(patterns))
    text = expand(rng, pattern, slots)
    if p_noise > 0:
        text = noise(rng, text, p_noise)
    else:
        text = re.sub(r" {2,}", " ", text).replace(" ,", ",").replace(" .", ".").strip()
    return fill(text, slots)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)
