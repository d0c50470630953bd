"""Lark grammars shipped with structgen: this folder installs as ``structgen.grammars`` (``*.lark`` as data).

``grammar_path("sqlite_select")`` is the path of ``sqlite_select.lark``; ``available()`` lists the names.
Works the same from a source checkout, an editable install and a normal install.
"""

from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).resolve().parent


def available() -> list[str]:
    """Names of the shipped grammars (file names without ``.lark``)."""
    return sorted(p.stem for p in DIR.glob("*.lark"))


def grammar_path(name: str) -> Path:
    """The path of a shipped grammar, by name (with or without ``.lark``)."""
    from structgen.errors import SpecError

    p = DIR / (name if name.endswith(".lark") else f"{name}.lark")
    if not p.is_file():
        raise SpecError(f"no shipped grammar named {name!r}; available: {', '.join(available()) or 'none'}")
    return p
