"""The cases of ``benchmarks/conformance.py``: MaskBench files and JSON-Schema-Test-Suite cases as
:class:`Case` s, and the texts an instance is tried as (``serialisations``: default and compact separators,
non-ASCII kept or escaped, object keys also in the schema's ``properties`` order)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the repo root, for ``structgen``
    sys.path.insert(0, str(ROOT))


@dataclass
class Case:
    """One schema with its labelled instances."""

    id: str  # "maskbench/<file>" or "suite/<file>#<case index>"
    source: str  # group shown in the table
    schema: Any
    tests: list[dict]  # [{"description", "valid", "data"}]

    @property
    def n_valid(self) -> int:
        return sum(1 for t in self.tests if t["valid"])

    @property
    def n_invalid(self) -> int:
        return sum(1 for t in self.tests if not t["valid"])


def default_data_dir() -> Path:
    """``$STRUCTGEN_SHARED/data``, else ``<repo>/../shared/data``."""
    shared = os.environ.get("STRUCTGEN_SHARED")
    return Path(shared) / "data" if shared else ROOT.parent / "shared" / "data"


def maskbench_source(name: str) -> str:
    """The MaskBench subset of a file name: the part before ``---``, ``BFCL`` or ``JME``."""
    if "---" in name:
        return name.split("---", 1)[0]
    for prefix in ("BFCL", "JME"):
        if name.startswith(prefix):
            return prefix
    return Path(name).stem


def load_cases(data: Path, *, limit: int | None = None, maskbench_every: int = 1,
               suite_files: Sequence[str] | None = None, maskbench: bool = True, suite: bool = True,
               exclude: Iterable[str] = (),
               ) -> list[Case]:
    """MaskBench files (every ``maskbench_every``-th in name order) then test-suite cases, deterministic.

    ``suite_files`` restricts the JSON-Schema-Test-Suite to those file names; ``limit`` keeps the first
    ``limit`` cases of each of the two sets; ``exclude`` drops cases by id (after the selection).
    """
    skip = set(exclude)
    cases: list[Case] = []
    mb_dir, ts_dir = data / "maskbench", data / "json-schema-test-suite"
    if maskbench and mb_dir.is_dir():
        files = sorted(p for p in mb_dir.glob("*.json"))[::maskbench_every]
        mb = []
        for p in files:
            d = json.loads(p.read_text())
            mb.append(Case(f"maskbench/{p.name}", maskbench_source(p.name), d["schema"], d.get("tests", [])))
        cases += mb[:limit] if limit else mb
    if suite and ts_dir.is_dir():
        ts = []
        for p in sorted(ts_dir.glob("*.json")):
            if suite_files is not None and p.name not in suite_files:
                continue
            for i, c in enumerate(json.loads(p.read_text())):
                ts.append(Case(f"suite/{p.name}#{i}", "JSON-Schema-Test-Suite", c["schema"], c.get("tests", [])))
        cases += ts[:limit] if limit else ts
    return [c for c in cases if c.id not in skip]


# ------------------------------------------------------------------------------------------------------
# serialisations of an instance
# ------------------------------------------------------------------------------------------------------


def _resolve_local(ref: str, root: Any) -> Any:
    """The subschema a local ``$ref`` points at, or None."""
    from structgen.constraints.json_regex import AutomatonUnsupported, resolve_ref

    try:
        return resolve_ref(ref, root)
    except AutomatonUnsupported:
        return None


def _property_order(schema: Any, root: Any, depth: int = 0) -> tuple[list[str], dict]:
    """Property names in schema order and their subschemas, following local $refs and allOf."""
    order: list[str] = []
    subs: dict = {}
    if not isinstance(schema, dict) or depth > 8:
        return order, subs
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        o, s = _property_order(_resolve_local(ref, root), root, depth + 1)
        order += o
        subs.update(s)
    props = schema.get("properties")
    if isinstance(props, dict):
        for k, v in props.items():
            if k not in subs:
                order.append(k)
            subs[k] = v
    for part in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
        o, s = _property_order(part, root, depth + 1)
        for k in o:
            if k not in subs:
                order.append(k)
        subs.update(s)
    return order, subs


def _items_schema(schema: Any, root: Any, index: int, depth: int = 0) -> Any:
    if not isinstance(schema, dict) or depth > 8:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        return _items_schema(_resolve_local(ref, root), root, index, depth + 1)
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def reorder(value: Any, schema: Any, root: Any, depth: int = 0) -> Any:
    """``value`` with object keys in the schema's ``properties`` order (others after, as they were)."""
    if depth > 32:
        return value
    if isinstance(value, dict):
        order, subs = _property_order(schema, root)
        if not order:
            return {k: reorder(v, None, root, depth + 1) for k, v in value.items()}
        keys = [k for k in order if k in value] + [k for k in value if k not in subs]
        return {k: reorder(value[k], subs.get(k), root, depth + 1) for k in keys}
    if isinstance(value, list):
        return [reorder(v, _items_schema(schema, root, i), root, depth + 1) for i, v in enumerate(value)]
    return value


def serialisations(data: Any, schema: Any) -> list[str]:
    """The texts tried for one instance, most common first, without duplicates."""
    values = [data]
    if isinstance(schema, dict):
        r = reorder(data, schema, schema)
        if json.dumps(r) != json.dumps(data):
            values.append(r)
    out: list[str] = []
    for v in values:
        for seps in ((", ", ": "), (",", ":")):
            for ascii_ in (True, False):
                s = json.dumps(v, separators=seps, ensure_ascii=ascii_)
                if s not in out:
                    out.append(s)
    return out
