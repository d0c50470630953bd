"""Running the server for tests, examples and benchmarks: a real uvicorn on a free loopback port.

    with LiveServer(create_app("random")) as srv:          # in a thread of this process
        client = openai.OpenAI(base_url=srv.base_url, api_key="x")

    with ServerProcess(["--model", "random"]) as srv:     # ``structgen serve`` in a child process
        ...

Both bind 127.0.0.1 only, wait (bounded) until ``/health`` answers, and stop the server on exit.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from ..errors import ConfigError

__all__ = ["LiveServer", "ServerProcess", "free_port", "wait_healthy"]


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout_s: float = 120.0, proc: subprocess.Popen | None = None) -> dict:
    """Poll ``url + "/health"`` until it answers 200 (``ConfigError`` after ``timeout_s`` or if ``proc`` dies)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ConfigError(f"the server process exited with code {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                return json.loads(r.read())
        except OSError:
            time.sleep(0.1)
    raise ConfigError(f"the server at {url} did not become healthy within {timeout_s:g} s")


class LiveServer:
    """``app`` served by uvicorn in a daemon thread on ``127.0.0.1:<free port>``."""

    def __init__(self, app, *, port: int | None = None, log_level: str = "warning"):
        import uvicorn

        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = self.url + "/v1"
        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level=log_level,
                                                    lifespan="on"))
        self._thread = threading.Thread(target=self.server.run, name="structgen-live-server", daemon=True)

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"uvicorn did not start on {self.url}")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)


class ServerProcess:
    """``structgen serve ARGS --host 127.0.0.1 --port <free>`` in a child process (logs in ``log_path``)."""

    def __init__(self, args: list[str], *, log_path: str | Path | None = None, ready_timeout_s: float = 180.0,
                 env: dict | None = None):
        if any(a in ("--host", "--port") for a in args):
            raise ConfigError("ServerProcess picks the host (127.0.0.1) and a free port itself")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = self.url + "/v1"
        self.args = [sys.executable, "-m", "structgen.cli", "serve", *args, "--host", "127.0.0.1",
                     "--port", str(self.port)]
        self.log_path = Path(log_path) if log_path else None
        self.ready_timeout_s = ready_timeout_s
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None
        self.health: dict = {}

    def __enter__(self) -> ServerProcess:
        out = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        if self.log_path:
            out.close()
        try:
            self.health = wait_healthy(self.url, self.ready_timeout_s, self.proc)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
