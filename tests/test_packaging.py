"""What an installed structgen carries: the wheel built from this tree holds the embedded model, the grammars,
the validators and the example files the training data reads (``examples/*.py``, the shop database's builder,
the alert catalog), and structgen imported from that wheel alone finds them there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from structgen.errors import SpecError
from structgen.train.data import base

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this tree (``pip wheel --no-deps --no-build-isolation``: setuptools from the dev extra)."""
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                        str(out), str(ROOT)], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("structgen-*.whl")
    return whl


def test_the_wheel_holds_the_model_grammars_validators_and_example_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("structgen/models/default_model/model.safetensors", "structgen/models/default_model/config.json",
                 "structgen/models/default_model/tokenizer.json", "structgen/grammars/alerts.lark",
                 "structgen/validators/alerts/__init__.py", "structgen/server/static/playground.html",
                 "structgen/examples/tools.py", "structgen/examples/tool_impls.py",
                 "structgen/examples/shop/build.py", "structgen/examples/alerts/catalog.json"):
        assert name in names, name
    assert not [n for n in names if n.endswith(".sqlite")]  # the database is built where it is used


def test_structgen_from_the_wheel_alone_finds_its_example_files(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = """
import json, structgen
from structgen.train.data import alert_rules, text_to_sql, tool_calls
from structgen.train.data.base import example_file
print(json.dumps({"package": structgen.__file__, "tools": example_file("tools.py", "x").as_posix(),
                  "n_tools": len(tool_calls.tools()), "metrics": len(alert_rules.catalog().metrics),
                  "db": text_to_sql.shop_database().as_posix()}))
"""
    env = {**os.environ, "PYTHONPATH": str(site)}
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    inside = (site / "structgen").as_posix()
    assert got["package"].startswith(inside)
    assert got["tools"] == f"{inside}/examples/tools.py" and got["n_tools"] == 7 and got["metrics"] > 0
    assert got["db"] == f"{inside}/examples/shop/shop.sqlite" and Path(got["db"]).stat().st_size > 0


def test_example_file_prefers_the_checkout_and_says_where_it_looked(tmp_path, monkeypatch):
    checkout, installed = tmp_path / "checkout", tmp_path / "installed"
    (installed / "alerts").mkdir(parents=True)
    (installed / "alerts" / "catalog.json").write_text("{}")
    monkeypatch.setattr(base, "EXAMPLES_DIRS", (checkout, installed))
    assert base.example_file("alerts/catalog.json", "the alert-rule data") == installed / "alerts" / "catalog.json"
    (checkout / "alerts").mkdir(parents=True)
    (checkout / "alerts" / "catalog.json").write_text("{}")
    assert base.example_file("alerts/catalog.json", "the alert-rule data") == checkout / "alerts" / "catalog.json"
    with pytest.raises(SpecError) as e:
        base.example_file("tools.py", "the tool-call data")
    msg = str(e.value)
    assert "the tool-call data needs examples/tools.py" in msg
    assert str(checkout / "tools.py") in msg and str(installed / "tools.py") in msg and "reinstall" in msg
