"""structgen.sql: read-only SQLite SELECT generation over one database.

``Sql`` (the spec, ``spec.py``), ``DbSchema``/``connect_readonly`` (the schema, read once read-only,
``schema.py``), ``specialise``/``generic_grammar`` (the canonical SELECT grammar, ``grammar.py``, from the
names, quoting and aliases of ``names.py``) and
``run_query``/``QueryResult`` (running a generated query safely, ``run.py``).
"""

from __future__ import annotations

from .grammar import generic_grammar, specialise
from .run import QueryResult, run_query
from .schema import DbSchema, connect_readonly
from .spec import Sql, sql_prompt

__all__ = ["Sql", "DbSchema", "connect_readonly", "specialise", "generic_grammar", "run_query", "QueryResult",
           "sql_prompt"]
