"""Keeps ``import jsonschema`` fast by deferring the IRI parsers of its format checker.

jsonschema checks the ``iri`` and ``iri-reference`` formats with ``rfc3987_syntax`` (from the
``format-nongpl`` extra structgen installs), and that package builds 38 Lark Earley parsers when it is
imported: about 3 s of the 3.2 s that ``import jsonschema`` takes on a 2-core machine, paid by every
process that checks a schema (the CLI's first command, each server and test worker) whether or not a
schema ever asks for an IRI. ``defer_iri_parsers`` puts a stand-in for ``rfc3987_syntax`` in
``sys.modules`` before jsonschema is imported; the real parsers are built the first time one of its names
is used (the first ``iri`` value checked). Validation is the same: the stand-in's ``is_valid_syntax``,
the one name jsonschema takes at import, calls the real function; every other name is looked up on the
real module. ``python benchmarks/startup.py`` prints the difference.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

_PACKAGE = "rfc3987_syntax"
_HELPERS = f"{_PACKAGE}.syntax_helpers"  # where the package's names live (its __init__ star-imports them)


def defer_iri_parsers() -> bool:
    """Put the stand-in in place; True when it was put there. Nothing is done when jsonschema or the
    package is imported already, or when the package is not installed (or not laid out as expected)."""
    if _PACKAGE in sys.modules or "jsonschema" in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return False
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    helpers = [Path(loc) / f"{_HELPERS.rpartition('.')[2]}.py" for loc in locations]
    if not any(f.is_file() and "def is_valid_syntax(" in f.read_text(encoding="utf-8", errors="replace")
               for f in helpers):
        return False  # another layout than the one the stand-in knows: leave the package to import itself
    sys.modules[_PACKAGE] = _stand_in(spec)
    return True


def _stand_in(spec) -> types.ModuleType:
    stand_in = types.ModuleType(_PACKAGE, f"structgen's deferred stand-in for {_PACKAGE} (structgen.deferred_iri)")
    stand_in.__path__ = list(spec.submodule_search_locations)  # its submodules import as usual
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin

    def helpers() -> types.ModuleType:
        return importlib.import_module(_HELPERS)

    def is_valid_syntax(term: str, value: str) -> bool:
        return helpers().is_valid_syntax(term, value)

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(helpers(), name)

    stand_in.is_valid_syntax = is_valid_syntax
    stand_in.__getattr__ = __getattr__
    return stand_in
