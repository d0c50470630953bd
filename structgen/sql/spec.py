"""``sg.Sql(database)``: the spec of one read-only SQLite SELECT over a given database, and its prompt.

``Sql`` is a ``Grammar`` whose text is ``specialise(schema)`` (``structgen.sql.grammar``: only the
database's tables, columns and canonical aliases can be written) and whose validators are the SQL ones
(``structgen.validators.sql``: sqlglot column resolution, SQLite ``EXPLAIN`` against the real file, a
tree-sitter second opinion) followed by the user's own. The database is read once, read-only, when the
spec is built.

The prompt format (:func:`sql_prompt`, also used to build training data, so change it only with them)::

    ### SQLite schema
    CREATE TABLE customers (...);
    CREATE TABLE orders (...);
    -- aliases: customers AS c, orders AS o
    ### Question
    <the question>
    ### SQL

and the canvas continues on the next line. Chat messages get the same schema block (without the question)
in their system message, after its content, or in a new system message put first.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import SpecError
from ..spec import Grammar, _digest
from .grammar import generic_grammar, specialise, table_aliases
from .schema import DbSchema

__all__ = ["Sql", "sql_prompt", "schema_block", "SQL_SYSTEM"]

#: The instruction that opens the system message of a chat prompt.
SQL_SYSTEM = "Answer the user's question with one SQLite SELECT statement over this database."


def schema_block(schema: DbSchema) -> str:
    """The schema as the model sees it: the CREATE statements, then the canonical table aliases."""
    aliases = table_aliases(schema)
    names = ", ".join(f"{t} AS {aliases[t][0]}" for t in schema.table_names)
    return f"### SQLite schema\n{schema.create_statements()}\n-- aliases: {names}"


def sql_prompt(schema: DbSchema, prompt: Any) -> Any:
    """``prompt`` (a question, or chat messages) with the schema added; see the module docstring."""
    if isinstance(prompt, str):
        return f"{schema_block(schema)}\n### Question\n{prompt.strip()}\n### SQL\n"
    if isinstance(prompt, (list, tuple)) and all(isinstance(m, dict) for m in prompt):
        messages = [dict(m) for m in prompt]
        block = f"{SQL_SYSTEM}\n\n{schema_block(schema)}"
        if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
            messages[0]["content"] = f"{messages[0]['content'].rstrip()}\n\n{block}"
        else:
            messages.insert(0, {"role": "system", "content": block})
        return messages
    raise SpecError(f"a prompt is a string or a list of {{'role', 'content'}} messages, got {type(prompt).__name__}")


class Sql(Grammar):
    """One read-only SQLite SELECT over ``database``, valid by construction against its schema.

    ``Sql(database, *, validators=(), explain=True, second_opinion=True)``: ``explain`` checks each result
    with SQLite ``EXPLAIN`` on the real file, ``second_opinion`` adds a tree-sitter parse; ``validators``
    are extra callables ``text -> list[Issue]`` run after those. Attributes: ``database`` (resolved path),
    ``schema`` (``DbSchema``), ``text`` (the specialised Lark grammar), ``validators``.
    """

    database: Path
    schema: DbSchema

    def __init__(self, database: str | Path, *, validators: Sequence[Callable] = (), explain: bool = True,
                 second_opinion: bool = True):
        if not isinstance(database, (str, Path)) or not str(database):
            raise SpecError(f"Sql needs the path of a SQLite database file, got {database!r}")
        if callable(validators):
            validators = (validators,)
        schema = DbSchema.read(database)  # SpecError when missing or not a database
        text = specialise(schema)
        from structgen.validators.sql import sql_validators

        checks = (*sql_validators(schema, explain=explain, second_opinion=second_opinion), *validators)
        set_ = object.__setattr__
        set_(self, "source", text)
        set_(self, "validators", tuple(checks))
        set_(self, "start", "start")
        set_(self, "choices", None)
        set_(self, "text", text)
        set_(self, "path", None)
        set_(self, "database", schema.path)
        set_(self, "schema", schema)
        set_(self, "explain", bool(explain))
        set_(self, "second_opinion", bool(second_opinion))
        # the Lark check of the syntax uses the generic grammar (same canonical syntax, any identifier):
        # names are checked by sqlglot and EXPLAIN, and Earley parses it several times faster
        set_(self, "syntax_grammar", generic_grammar())
        # the generated grammar is not re-checked with Lark here (Grammar does that for user text): it is
        # built by specialise() and tested; the LarkValidator builds (and caches) its parser on first use.

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}: specs are immutable")

    def render_prompt(self, prompt):
        return sql_prompt(self.schema, prompt)

    @property
    def key(self) -> str:
        return "sql:" + _digest(self.text, self.schema.digest)

    def __repr__(self) -> str:
        return f"Sql({str(self.database)!r})"
