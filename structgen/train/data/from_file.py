"""Training examples from a JSON Lines file: train a model on *your* schemas and tools.

``structgen train --data my.jsonl [--tools my_tools.py]`` reads one example per line::

    {"prompt": "Maria Lopez, 41", "schema": {...}, "target": {"name": "Maria Lopez", "age": 41}}
    {"prompt": "Weather in Oslo?", "tool": true, "target": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    {"prompt": "the code", "regex": "[A-Z]{3}-[0-9]{4}", "target": "QZX-7302", "split": "heldout"}

* ``prompt``: text, or chat messages (a list of ``{"role", "content"}``), exactly what you will pass to
  ``Generator.generate`` / ``json`` / ``tool_call``;
* exactly one of ``schema`` (a JSON Schema; family ``json``), ``tool`` (a call of the tools passed with
  ``--tools``, which the prompt lists as ``gen.tool_call(prompt, tools=...)`` does; family ``tool``) or
  ``regex`` (family ``regex``);
* ``target``: what the model must write — a JSON value for ``schema`` and ``tool`` (written in the
  canonical form, keys in schema order), a string for ``regex``;
* ``split`` (optional): ``"train"`` (the default) or ``"heldout"`` (measured during training, not trained on).

Every target is checked against its spec with the same validators decoding uses, so a file that would teach
the model invalid output is refused before training, naming the line.

For ``--source-loss``, each top-level string or number of an object target (a call's arguments) is its own
source: where the prompt spells it, the pointer learns to read it there (``copied_sources``); a call's tool
name is read from the prompt's tool list. A file has no way to say where a *converted* value comes from, so
those get no pointer target.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from structgen.errors import ConfigError, StructgenError

from .base import Example, ValueSource, canonical_json, ordered

KINDS = ("schema", "tool", "regex")


def load_file(path: str | Path, tools: Any = None, need_train: bool = True) -> tuple[list[Example], list[Example]]:
    """``(train, heldout)`` examples from the JSON Lines file ``path`` (see the module docstring);
    ``tools`` (a tools file path or anything ``as_tools`` takes) is needed for ``"tool"`` lines. A file with
    no training line is refused unless ``need_train`` is false (``structgen eval --data`` scores a file of
    held-out lines alone)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"training data file {str(p)!r} not found; pass a .jsonl file with one example per line")
    tool_spec = None
    if tools is not None:
        from structgen.agent.tools import as_tools, load_tools, tool_call_spec

        tool_spec = tool_call_spec(load_tools(tools) if isinstance(tools, (str, Path)) else as_tools(tools))
    specs: dict[str, Any] = {}  # one spec per distinct schema / regex: each constraint compiles once
    out: dict[str, list[Example]] = {"train": [], "heldout": []}
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{p}:{n}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{where}: not JSON ({e.msg}); write one JSON object per line") from None
            ex, split = _example(row, where, tool_spec, specs)
            out[split].append(ex)
    if need_train and not out["train"]:
        raise ConfigError(f"{p} has no training examples (every line is held out or the file is empty)")
    return out["train"], out["heldout"]


def _example(row: Any, where: str, tool_spec: Any, specs: dict[str, Any]) -> tuple[Example, str]:
    import structgen as sg

    if not isinstance(row, dict):
        raise ConfigError(f"{where}: each line must be a JSON object with prompt, target and one of {KINDS}")
    missing = [k for k in ("prompt", "target") if k not in row]
    kinds = [k for k in KINDS if k in row]
    if missing or len(kinds) != 1:
        raise ConfigError(f"{where}: need 'prompt', 'target' and exactly one of {', '.join(KINDS)}; got keys "
                          f"{sorted(row)}")
    unknown = set(row) - {"prompt", "target", "split", *KINDS}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: prompt, target, split, "
                          f"{', '.join(KINDS)}")
    split = row.get("split", "train")
    if split not in ("train", "heldout"):
        raise ConfigError(f"{where}: split must be 'train' or 'heldout', got {split!r}")
    prompt, target, kind = row["prompt"], row["target"], kinds[0]
    if not (isinstance(prompt, str) or (isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt))):
        raise ConfigError(f"{where}: prompt must be a string or a list of {{'role', 'content'}} messages")
    try:
        if kind == "schema":
            spec = _cached(specs, json.dumps(row["schema"], sort_keys=True), lambda: sg.JsonSchema(row["schema"]))
            text, family = canonical_json(ordered(target, row["schema"])), "json"
        elif kind == "tool":
            if tool_spec is None:
                raise ConfigError(f"{where}: a 'tool' example needs the tools: pass --tools FILE (e.g. "
                                  "examples/tools.py)")
            spec, family = tool_spec, "tool"
            if not isinstance(target, dict) or not isinstance(target.get("name"), str):
                raise ConfigError(f"{where}: a tool target is {{\"name\": ..., \"arguments\": {{...}}}}")
            from .tool_calls import call_target

            _, text = call_target(tool_spec, target["name"], target.get("arguments", {}))
        else:
            if not isinstance(target, str):
                raise ConfigError(f"{where}: a regex target is a string")
            spec = _cached(specs, "re:" + row["regex"], lambda: sg.Regex(row["regex"]))
            text, family = target, "regex"
    except ConfigError:
        raise
    except StructgenError as e:
        raise ConfigError(f"{where}: {e}") from None
    _check(spec, text, where)
    if kind == "tool":
        sources = (ValueSource.tool_name(target["name"]),) + copied_sources(target.get("arguments"))
    else:
        sources = copied_sources(target)
    return Example(family, f"file:{kind}", prompt, spec, text, target, sources), split


def copied_sources(values: Any) -> tuple[ValueSource, ...]:
    """Each top-level string or number of the object ``values`` as its own source (nothing for other
    targets); ``structgen.train.sources`` keeps those the prompt actually spells."""
    if not isinstance(values, dict):
        return ()
    return tuple(ValueSource.of(k, v, v) for k, v in values.items()
                 if isinstance(v, (str, int, float)) and not isinstance(v, bool))


def _cached(specs: dict[str, Any], key: str, make) -> Any:
    """``specs[key]``, made by ``make()`` the first time."""
    if key not in specs:
        specs[key] = make()
    return specs[key]


def _check(spec: Any, text: str, where: str) -> None:
    """Refuse a target its own spec would reject (it would train the model to write invalid output)."""
    from structgen.validators import run_validators, validators_for

    issues = run_validators(validators_for(spec), text)
    if issues:
        raise ConfigError(f"{where}: the target does not satisfy its spec: {issues[0].message}; fix the "
                          "target or the spec")


__all__ = ["load_file", "copied_sources", "KINDS"]
