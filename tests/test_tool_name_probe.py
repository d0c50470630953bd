"""benchmarks/tool_name_probe.py: one model call per example, a listed tool's name chosen."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_probe_chooses_one_of_the_listed_tools_for_each_split(bench_script):
    import structgen as sg
    from structgen.train.data import examples

    probe = bench_script("tool_name_probe")
    model = sg.load_model()
    for split in ("heldout", "train"):
        for ex in examples("tool", split, 3, 7):
            gold, chosen = probe.choose(model, ex)
            assert gold == json.loads(ex.target)["name"]
            assert chosen in {t.name for t in ex.spec.tools}
