"""Checks the grounding-rule tests share: an answer's verdict through the real compiled constraint and the
validators, and the task data's gold answers against the grounded spec."""

from __future__ import annotations

from typing import Callable, Iterable

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.grounding import Grounded
from structgen.validators import run_validators, validators_for


def verdicts(tok, vocab, spec: sg.Spec, request: str) -> Callable[[str], tuple[bool, bool]]:
    """``answer -> (the compiled grounded constraint accepts it, the grounded validators pass it)``."""
    g = Grounded(spec, request)
    c = compile_spec(g, vocab)

    def verdict(answer: str) -> tuple[bool, bool]:
        return c.accepts(tok(answer, add_special_tokens=False)["input_ids"]), not run_validators(validators_for(g),
                                                                                               answer)
    return verdict


def gold_answers_pass(fields_of: Callable[[dict], Iterable[str] | None], n: int = 600,
                      seeds: tuple = (0,)) -> int:
    """Assert that no JSON gold answer of the task data (both splits) has an issue, under its grounded spec's
    validators, at a field a rule touches (``fields_of(properties)``: its keys, or none); return how many
    answers had such fields. Issues elsewhere in an answer are other rules' (a few gold answers of the
    training templates state values no rule reads: ``benchmarks/grounding_coverage.py``)."""
    from structgen.train.data import examples

    seen = 0
    for split in ("train", "heldout"):
        for seed in seeds:
            for ex in examples("json", split, n, seed):
                keys = list(fields_of(ex.spec.schema.get("properties", {})) or ()) \
                    if isinstance(ex.spec, sg.JsonSchema) else []
                if not keys:
                    continue
                seen += 1
                issues = run_validators(validators_for(Grounded(ex.spec, ex.prompt)), ex.target)
                mine = [i.message for i in issues if any(i.path == f"/{k}" or i.path.startswith(f"/{k}/") for k in keys)]
                assert mine == [], (ex.prompt, ex.target, mine)
    return seen
