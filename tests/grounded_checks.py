"""Checks the grounding-rule tests share: an answer's verdict through the real compiled constraint and the
validators, and the task data's gold answers against the grounded spec."""

from __future__ import annotations

from typing import Callable

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


def gold_answers_pass(has_fields: Callable[[dict], bool], n: int = 600, seeds: tuple = (0,)) -> int:
    """Assert that every JSON gold answer of the task data (both splits) whose schema's ``properties``
    ``has_fields`` passes its grounded spec's validators; return how many were checked."""
    from structgen.train.data import examples

    seen = 0
    for split in ("train", "heldout"):
        for seed in seeds:
            for ex in examples("json", split, n, seed):
                if isinstance(ex.spec, sg.JsonSchema) and has_fields(ex.spec.schema.get("properties", {})):
                    seen += 1
                    assert run_validators(validators_for(Grounded(ex.spec, ex.prompt)), ex.target) == [], \
                        (ex.prompt, ex.target)
    return seen
