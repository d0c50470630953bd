"""``structgen.deferred_iri``: after ``import structgen``, jsonschema imports without building the IRI
parsers of its format checker, builds them on the first IRI it checks, and gives the real parser's verdicts."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None,
                                reason="rfc3987-syntax (jsonschema's format-nongpl extra) is not installed")

VALUES = ["http://例え.テスト/パス", "https://example.com/a?b=c#d", "mailto:ana@example.com", "/relative/path",
          "//host/p", "not an iri", "ht tp://x", "", "http://[::1]:80/", "http://exa mple.com"]

CHECK = """
import json, sys
import structgen, jsonschema
from jsonschema import Draft202012Validator as V
built_at_import = "rfc3987_syntax.syntax_helpers" in sys.modules
values = json.loads(sys.argv[1])
checked = {f: [V({"format": f}, format_checker=V.FORMAT_CHECKER).is_valid(v) for v in values]
           for f in ("iri", "iri-reference")}
built_when_used = "rfc3987_syntax.syntax_helpers" in sys.modules
from rfc3987_syntax.syntax_helpers import is_valid_syntax
real = {f: [is_valid_syntax(f.replace("-", "_"), v) for v in values] for f in ("iri", "iri-reference")}
import rfc3987_syntax
print(json.dumps({"built_at_import": built_at_import, "built_when_used": built_when_used, "checked": checked,
                  "real": real, "other_name": rfc3987_syntax.is_valid_syntax_iri("http://x.y/"),
                  "again": structgen.deferred_iri.defer_iri_parsers()}))
"""


def test_jsonschema_imports_without_the_iri_parsers_and_checks_iris_as_before():
    out = subprocess.run([sys.executable, "-c", CHECK, json.dumps(VALUES)], capture_output=True, text=True,
                         check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert not r["built_at_import"] and r["built_when_used"]
    assert r["checked"] == r["real"]
    assert r["checked"]["iri"][:3] == [True, True, True] and not any(r["checked"]["iri"][5:8])
    assert r["checked"]["iri-reference"][3] and r["other_name"] is True
    assert r["again"] is False  # jsonschema is imported by then: nothing to defer
