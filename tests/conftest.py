"""Shared fixtures: locally built tokenizers (no download) and the path to ../shared/data; each xdist worker's
share of the CPU threads; the alert DSL's catalog, grammars and parser (test_alerts*.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Under pytest-xdist (pyproject's addopts) each worker gets its share of the cores, so that torch's thread
# pool in one worker does not fight the others' (set before anything imports torch).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ.setdefault("OMP_NUM_THREADS", str(_share))
    os.environ.setdefault("MKL_NUM_THREADS", str(_share))

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("STRUCTGEN_SHARED", ROOT.parent / "shared"))
DATA = SHARED / "data"


@pytest.fixture(scope="session")
def tok4k():
    """A byte-level BPE with a 4k vocabulary trained on the generated default corpus."""
    from structgen.tokenizers import default_corpus, train_bpe

    return train_bpe(default_corpus(), 4096)


@pytest.fixture(scope="session")
def vocab(tok4k):
    """``tok4k`` as the constraint engines see it (``TokenVocab``)."""
    from structgen.constraints.vocab import TokenVocab

    return TokenVocab.of(tok4k)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.exists():
        pytest.skip(f"shared test data not found at {DATA} (set STRUCTGEN_SHARED)")
    return DATA


@pytest.fixture(scope="session")
def shop_db() -> Path:
    """The example shop database, built by ``examples/shop/build.py`` when it is missing."""
    import importlib.util

    src = ROOT / "examples" / "shop" / "build.py"
    spec = importlib.util.spec_from_file_location("shop_build", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ensure()


@pytest.fixture(scope="module")
def one_torch_thread():
    """One intra-op torch thread for a module: its tensors are tiny and the test machine's cores are shared
    (use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``)."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def bench_script():
    """``bench_script("tool_name_probe")``: a script of ``benchmarks/`` imported as a module (with its
    ``_common`` helpers found beside it), for tests of the probes' pure parts."""
    import importlib
    import sys

    def load(name: str):
        sys.path.insert(0, str(ROOT / "benchmarks"))
        try:
            return importlib.import_module(name)
        finally:
            sys.path.remove(str(ROOT / "benchmarks"))

    return load


@pytest.fixture(scope="module")
def alerts_catalog():
    """examples/alerts/catalog.json, loaded."""
    from structgen.validators.alerts import AlertCatalog

    return AlertCatalog.load(ROOT / "examples" / "alerts" / "catalog.json")


@pytest.fixture(scope="module")
def alerts_constraint(tok4k):
    """The shipped ``grammars/alerts.lark``, compiled (no catalog)."""
    import structgen as sg

    return sg.compile(sg.Grammar("alerts.lark"), tok4k)


@pytest.fixture(scope="module")
def alerts_narrow(alerts_catalog, tok4k):
    """``(spec, constraint)`` of ``alerts_spec`` narrowed to the example catalog."""
    import structgen as sg
    from structgen.validators.alerts import alerts_spec

    spec = alerts_spec(alerts_catalog)
    return spec, sg.compile(spec, tok4k)


@pytest.fixture(scope="module")
def alerts_parser():
    """Lark's Earley parser over the shipped alert grammar, ambiguities kept (a test fails on any)."""
    import lark

    from structgen.validators.alerts import GRAMMAR_PATH

    return lark.Lark(GRAMMAR_PATH.read_text(), parser="earley", ambiguity="explicit")


@pytest.fixture(scope="session")
def release_grounded(tok4k):
    """``(prompt, spec, max_tokens, seed, **settings) -> Result | None``: a grounded generation
    (``ground=True, strict=True``) with random logits seeded by ``seed``; None when nothing was released
    (``GenerationError``, ``CanvasTooSmallError``)."""
    import structgen as sg

    def run(prompt, spec, max_tokens: int, seed: int, **settings):
        gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed))
        try:
            return gen.generate(prompt, spec, max_tokens, strict=True, ground=True, seed=seed, **settings)
        except (sg.GenerationError, sg.CanvasTooSmallError):
            return None

    return run
