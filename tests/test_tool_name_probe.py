"""benchmarks/tool_name_probe.py: one model call per example, a listed tool's name chosen."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def test_the_probe_chooses_one_of_the_listed_tools_for_each_split():
    import structgen as sg
    from structgen.train.data import examples

    sys.path.insert(0, str(BENCH))
    try:
        import tool_name_probe as probe
    finally:
        sys.path.remove(str(BENCH))
    model = sg.load_model()
    for split in ("heldout", "train"):
        for ex in examples("tool", split, 3, 7):
            gold, chosen = probe.choose(model, ex)
            assert gold == json.loads(ex.target)["name"]
            assert chosen in {t.name for t in ex.spec.tools}
