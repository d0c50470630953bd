"""The playground's presets: the catalogue of bundled schemas, grammars and tool sets that
``GET /playground/api/presets`` offers, and the loading of a preset into what a run needs.

    from structgen.server.playground_presets import presets
    presets()["schema:contact"].info()   # what the page shows: id, kind, label, prompt, max_tokens, source

It owns what is offered and how each choice is built: the schemas that ship with the playground
(``BUILTIN_SCHEMAS``), the bundled Lark grammars with suggested prompts (``GRAMMAR_PROMPTS``) and, in a
source checkout only, what ``examples/`` holds (``*.json`` schemas, the alerts catalog, the shop database,
``tools.py``). The catalogue is read once (``presets()`` is cached); a preset's spec or tools are built once,
on first use (``_preset_target``). The routes, the request model and the runs are
:mod:`structgen.server.playground`'s, which re-exports these names.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

#: ``examples/`` of a source checkout (not installed with the package): its presets appear only there
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# -- the catalogue -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Preset:
    """One bundled choice: what it builds (a spec, or tools for a tool set), the text shown in the editor
    (``source``; ``editable`` when that text is itself a valid custom input of the same kind), a
    suggested prompt and canvas length, and ``groundable`` (its spec can take values from the prompt:
    every schema and tool set, and the SQL and alert-rule grammars, which ground themselves)."""

    id: str
    kind: str
    label: str
    prompt: str
    max_tokens: int
    build: Callable[[], Any]
    source: str
    editable: bool = True
    groundable: bool = True

    def info(self) -> dict:
        return {"id": self.id, "kind": self.kind, "label": self.label, "prompt": self.prompt,
                "max_tokens": self.max_tokens, "source": self.source, "editable": self.editable,
                "groundable": self.groundable}


#: schemas that ship with the playground (examples/*.json joins them in a checkout)
BUILTIN_SCHEMAS = {
    "contact": ("Contact card", "Call Ana Silva at +351 912 345 678, ana@example.org", 64, {
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 40},
                       "phone": {"type": "string", "pattern": r"^\+[0-9 ]{7,17}$"},
                       "email": {"type": "string", "pattern": r"^[a-z0-9.]+@[a-z0-9]+\.[a-z]{2,4}$"}},
        "required": ["name", "phone", "email"], "additionalProperties": False}),
    "review": ("Product review", "The kettle boils fast but the lid broke after a week. 2 stars.", 48, {
        "type": "object",
        "properties": {"sentiment": {"enum": ["positive", "neutral", "negative"]},
                       "stars": {"type": "integer", "minimum": 1, "maximum": 5},
                       "topics": {"type": "array", "items": {"enum": ["price", "quality", "speed", "design"]},
                                  "maxItems": 3}},
        "required": ["sentiment", "stars", "topics"], "additionalProperties": False}),
}

GRAMMAR_PROMPTS = {
    "alerts": ("page ops when cpu is above 90% for 5 minutes", 64),
    "arith": ("two plus three, times four", 24),
    "python_line": ("call print with the sum of a and b", 24),
    "sqlite_select": ("names of the customers in Porto", 48),
}


def _schema_presets() -> list[Preset]:
    from ..spec import JsonSchema

    out = []
    for path in sorted(EXAMPLES.glob("*.json")):
        text = path.read_text()
        title = json.loads(text).get("title") or path.stem
        prompt = "Maria Lopez, 41, lives in Porto" if path.stem == "person" else f"An example {title.lower()}"
        out.append(Preset(f"schema:{path.stem}", "schema", f"{title} (examples/{path.name})", prompt, 48,
                          lambda text=text: JsonSchema(text), text))
    for key, (label, prompt, n, schema) in BUILTIN_SCHEMAS.items():
        out.append(Preset(f"schema:{key}", "schema", label, prompt, n, lambda s=schema: JsonSchema(s),
                          json.dumps(schema, indent=2)))
    return out


def _grammar_presets() -> list[Preset]:
    from ..grammars import available, grammar_path
    from ..spec import Grammar

    out = []
    catalog = EXAMPLES / "alerts" / "catalog.json"
    if catalog.is_file():
        from ..validators.alerts import alerts_spec

        alerts = alerts_spec(catalog)  # its text (the grammar narrowed to the catalog) is what the editor shows
        out.append(Preset("grammar:alerts-catalog", "grammar", "Alert rules, narrowed to examples/alerts/catalog.json",
                          GRAMMAR_PROMPTS["alerts"][0], 64, lambda: alerts, alerts.text, editable=False))
    shop = EXAMPLES / "shop" / "shop.sqlite"
    if shop.is_file():
        def sql():
            from ..sql import Sql
            return Sql(shop)

        from ..sql.schema import DbSchema
        from ..sql.spec import schema_block
        out.append(Preset("grammar:sql-shop", "grammar", "SQL over the shop database (examples/shop)",
                          "How many customers are there in each country?", 64, sql,
                          "-- The SELECT grammar is specialised to this database:\n" + schema_block(DbSchema.read(shop)),
                          editable=False))
    for name in available():
        prompt, n = GRAMMAR_PROMPTS.get(name, ("", 48))
        path = grammar_path(name)
        out.append(Preset(f"grammar:{name}", "grammar", f"{name}.lark", prompt, n,
                          lambda p=path: Grammar(p), path.read_text(), groundable=False))
    return out


def _tool_presets() -> list[Preset]:
    from ..agent import as_tools, load_tools

    path = EXAMPLES / "tools.py"
    if not path.is_file():
        return []
    tools = load_tools(path)
    source = json.dumps(_openai_tools(tools), indent=2)
    return [Preset("tools:examples", "tools", f"Example tools (examples/tools.py, {len(tools)} tools)",
                   "What's the weather in Oslo for the next 3 days?", 96, lambda: as_tools(tools), source)]


def _openai_tools(tools) -> list[dict]:
    """Tools as OpenAI entries, their side-effect flags kept as ``x-side-effects`` / ``x-destructive`` (which
    ``as_tools`` reads back), so an edited copy keeps its policy defaults."""
    out = []
    for t in tools:
        entry = t.openai()
        if t.side_effects:
            entry["function"]["x-side-effects"] = True
        if t.destructive:
            entry["function"]["x-destructive"] = True
        out.append(entry)
    return out


@lru_cache(maxsize=1)
def presets() -> dict[str, Preset]:
    """Every preset by id: schemas, grammars, tool sets (examples/ ones only in a source checkout)."""
    return {p.id: p for p in (*_schema_presets(), *_grammar_presets(), *_tool_presets())}


# -- building a preset's target ----------------------------------------------------------------------------

_TARGETS: dict[str, Any] = {}
_TARGETS_LOCK = threading.Lock()


def _preset_target(p: Preset) -> Any:
    """A preset's spec or tools, built once (an SQL spec reads its database, the alerts grammar is narrowed
    to its catalog and checked)."""
    with _TARGETS_LOCK:
        if p.id not in _TARGETS:
            _TARGETS[p.id] = p.build()
        return _TARGETS[p.id]
