"""structgen: valid-by-construction output from masked diffusion language models.

    import structgen as sg
    model = sg.load_model()
    gen = sg.Generator(model)
    r = gen.generate("Maria Lopez, 41, lives in Porto", sg.JsonSchema(schema), max_tokens=64)
"""

from __future__ import annotations

import importlib.util as _ilu
import sys as _sys
from pathlib import Path as _Path

from .deferred_iri import defer_iri_parsers as _defer_iri_parsers

_defer_iri_parsers()  # before anything imports jsonschema: 3 s less for every process that checks a schema


def _mount(folder: str) -> None:
    """``validators/`` and ``grammars/`` sit at the top of the source tree and install as
    ``structgen.validators`` and ``structgen.grammars``. Installed, they are found normally; in a plain
    source checkout (tests run from the repo root) we mount the top-level folder under that name.
    """
    name = f"{__name__}.{folder}"
    if name in _sys.modules or _ilu.find_spec(name) is not None:
        return
    src = _Path(__file__).resolve().parent.parent / folder / "__init__.py"
    if src.exists():
        spec = _ilu.spec_from_file_location(name, src, submodule_search_locations=[str(src.parent)])
        mod = _ilu.module_from_spec(spec)
        _sys.modules[name] = mod
        spec.loader.exec_module(mod)


_mount("grammars")
_mount("validators")

from . import models  # noqa: E402
from .constraints import compile  # noqa: E402
from .errors import (  # noqa: E402
    ApprovalError, ApprovalExpiredError, ApprovalNotFoundError, BoundaryError, CanvasTooSmallError, CompileError,
    ConfigError, ConstraintViolation, DeadEnd, GenerationError, GrammarSyntaxError, ModelLoadError, PolicyError,
    QueryError, QueryTimeoutError, SpecError, StructgenError, TurnCancelled, UnsupportedSchemaError,
)
from .models import load_model  # noqa: E402
from .sampler import Generator, Result, StepEvent  # noqa: E402
from .spec import Choice, Grammar, JsonSchema, Regex  # noqa: E402
from .sql import Sql  # noqa: E402
from .agent import Tool, ToolCall, ToolCallSpec  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "load_model", "Generator", "Result", "StepEvent", "compile", "models",
    "JsonSchema", "Regex", "Grammar", "Sql", "Choice", "Tool", "ToolCall", "ToolCallSpec",
    "StructgenError", "SpecError", "UnsupportedSchemaError", "GrammarSyntaxError", "CompileError",
    "CanvasTooSmallError", "ConstraintViolation", "GenerationError", "DeadEnd", "ModelLoadError", "ConfigError",
    "QueryError", "QueryTimeoutError", "BoundaryError", "PolicyError", "ApprovalError", "ApprovalNotFoundError",
    "ApprovalExpiredError", "TurnCancelled",
]
