"""What ``structgen serve`` loads from files: the tool implementations the server may execute.

``--execute FILE`` names a Python file (imported by path, like ``load_tools``) that defines either
``functions(sandbox=...)`` returning ``{tool name: callable}`` (as ``examples/tool_impls.py`` does) or a
``FUNCTIONS`` dict. The result becomes an ``Executor``; without ``--execute`` the server never runs a tool,
it only returns released calls for the client to run, as OpenAI does.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from pathlib import Path

from ..errors import ConfigError

__all__ = ["executor_from_file"]


def _import(path: Path):
    name = "structgen_impls_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path}; pass a .py file defining functions(sandbox=...) or FUNCTIONS")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def executor_from_file(path: str | Path, *, sandbox: str | Path, timeout_s: float = 10.0):
    """An ``Executor`` over the implementations in ``path`` (see the module docstring)."""
    from ..agent.executor import Executor

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"implementations file {p} not found; pass a .py file defining functions(sandbox=...) "
                          "or FUNCTIONS")
    mod = _import(p)
    if callable(getattr(mod, "functions", None)):
        fn = mod.functions
        params = inspect.signature(fn).parameters
        impls = fn(sandbox=sandbox) if "sandbox" in params else fn()
    elif isinstance(getattr(mod, "FUNCTIONS", None), dict):
        impls = mod.FUNCTIONS
    else:
        raise ConfigError(f"{p} defines neither functions(sandbox=...) nor a FUNCTIONS dict")
    return Executor(impls, timeout_s=timeout_s)
