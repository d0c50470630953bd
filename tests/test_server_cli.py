"""``structgen serve``: the command starts the server with its options, and refuses bad ones clearly."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

pytest.importorskip("fastapi")

from structgen.server.testing import ServerProcess  # noqa: E402


def _get(url: str, key: str | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_serve_with_keys_tools_policy_and_executor(tmp_path):
    args = ["--model", "random", "--api-key", "sk-cli-one", "--api-key", "sk-cli-two", "--tools", "examples/tools.py",
            "--policy", "examples/policy.toml", "--execute", "examples/tool_impls.py", "--sandbox",
            str(tmp_path / "sandbox"), "--audit", str(tmp_path / "audit.db"), "--workers", "1", "--log-level",
            "warning"]
    with ServerProcess(args, log_path=tmp_path / "serve.log") as srv:
        assert srv.health["executes_tools"] is True and srv.health["pool"]["workers"] == 1
        assert srv.health["audit"] == str(tmp_path / "audit.db")
        status, body = _get(srv.base_url + "/models")
        assert status == 401 and body["error"]["code"] == "invalid_api_key"
        for key in ("sk-cli-one", "sk-cli-two"):
            status, body = _get(srv.base_url + "/models", key)
            assert status == 200 and body["data"][0]["id"] == "structgen"
    assert (tmp_path / "sandbox" / "outbox").is_dir()  # the implementations were loaded with the sandbox


def test_serve_refuses_a_missing_policy_file(tmp_path):
    """The error names the whole path on one line, however long (a terminal-width wrap used to cut it)."""
    missing = tmp_path / ("a-folder-with-a-long-name-" * 4) / "nope.toml"
    proc = subprocess.run([sys.executable, "-m", "structgen.cli", "serve", "--model", "random", "--policy",
                           str(missing), "--port", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "error" in proc.stderr and str(missing) in proc.stderr
