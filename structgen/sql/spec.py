"""``sg.Sql(database)``: the spec of one read-only SQLite SELECT over a given database, and its prompt.

``Sql`` is a ``Grammar`` whose text is ``specialise(schema)`` (``structgen.sql.grammar``: only the
database's tables, columns and canonical aliases can be written) and whose validators are the SQL ones
(``structgen.validators.sql``: sqlglot column resolution, SQLite ``EXPLAIN`` against the real file, a
tree-sitter second opinion) followed by the user's own. The database is read once, read-only, when the
spec is built.

The prompt format (:func:`sql_prompt`, also used to build training data, so change it only with them)::

    ### SQLite schema
    customers AS c (id INTEGER, name TEXT, ...)
    orders AS o (id INTEGER, customer_id INTEGER -> customers.id, status TEXT 'pending'|'shipped', ...)
    ### Question
    <the question>
    ### SQL

and the canvas continues on the next line. The schema is compact — one line per table with its canonical alias,
each column's declared type, foreign keys as ``-> table.column`` and the values a ``CHECK (col IN (...))``
allows — because every prompt token costs a model call's compute at every step (the full CREATE statements
of the shop database are 200 tokens, this form about half). Chat messages get the same schema block (without the question)
in their system message, after its content, or in a new system message put first.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ConfigError, SpecError
from ..spec import Grammar, _digest
from .grammar import generic_grammar, specialise, table_aliases
from .schema import DbSchema, check_in_list

__all__ = ["Sql", "sql_prompt", "schema_block", "SQL_SYSTEM"]

#: The instruction that opens the system message of a chat prompt.
SQL_SYSTEM = "Answer the user's question with one SQLite SELECT statement over this database."


def _column_notes(create_sql: str, column: str) -> str:
    """`` -> table.column`` for a foreign key and `` 'a'|'b'`` for a ``CHECK (column IN (...))``."""
    col = re.escape(column)
    notes = ""
    fk = re.search(rf'[(,]\s*"?{col}"?\s[^,]*?\bREFERENCES\s+"?(\w+)"?\s*\(\s*"?(\w+)', create_sql, re.I)
    if fk:
        notes += f" -> {fk.group(1)}.{fk.group(2)}"
    check = check_in_list(create_sql, column)
    if check is not None:
        values = [v.strip() for v in check.split(",") if v.strip()]
        notes += " " + "|".join(values)
    return notes


#: schema digest -> its block, for the few databases a process prompts over (each prompt renders its schema)
_BLOCKS: dict[str, str] = {}
_BLOCKS_MAX = 64


def schema_block(schema: DbSchema) -> str:
    """The schema as the model sees it: one line per table (see the module docstring)."""
    block = _BLOCKS.get(schema.digest) if schema.digest else None
    if block is None:
        aliases = table_aliases(schema)
        lines = []
        for t in schema.tables:
            cols = ", ".join(f"{c.name} {c.type or 'ANY'}{_column_notes(t.create_sql, c.name)}" for c in t.columns)
            lines.append(f"{t.name} AS {aliases[t.name][0]} ({cols})")
        block = "### SQLite schema\n" + "\n".join(lines)
        if schema.digest:
            if len(_BLOCKS) >= _BLOCKS_MAX:
                _BLOCKS.clear()
            _BLOCKS[schema.digest] = block
    return block


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

    ``Sql(database, *, validators=(), explain=True, second_opinion=True, strict=False)``: ``explain`` checks
    each result with SQLite ``EXPLAIN`` on the real file, ``second_opinion`` adds a tree-sitter parse;
    ``validators`` are extra callables ``text -> list[Issue]`` run after those. ``strict=True`` uses the
    strict grammar (``specialise(schema, strict=True)``): subqueries of one table and one column that name
    only their own table, no subquery in FROM, ORDER BY and GROUP BY terms that are columns, aggregates or
    function calls; every query it allows runs. Attributes: ``database`` (resolved path), ``schema``
    (``DbSchema``), ``text`` (the specialised Lark grammar), ``validators``, ``strict``, and ``fallback``
    (the strict variant, which the generator turns to when the repair rounds run out; None when strict),
    ``grounded_in`` (the question a grounded spec's values come from, ``grounded(question)`` and
    ``generate(..., ground=True)``; None when not grounded).
    ``salvage``: every query the grammars allow is one read-only SELECT, so after the fallback the generator
    may release the longest complete prefix of the last output that passes every validator, or else the
    longest prefix it can finish inside the canvas, finished (``Generator``).
    """

    database: Path
    schema: DbSchema
    salvage = True

    def __init__(self, database: str | Path, *, validators: Sequence[Callable] = (), explain: bool = True,
                 second_opinion: bool = True, strict: bool = False):
        if not isinstance(database, (str, Path)) or not str(database):
            raise SpecError(f"Sql needs the path of a SQLite database file, got {database!r}")
        if callable(validators):
            validators = (validators,)
        schema = DbSchema.read(database)  # SpecError when missing or not a database
        self._build(schema, tuple(validators), bool(explain), bool(second_opinion), bool(strict))

    def _build(self, schema: DbSchema, extra: tuple, explain: bool, second_opinion: bool, strict: bool,
               grounded_in: str | None = None) -> None:
        terminal, stated = None, ()
        if grounded_in is not None:
            from .grounded import StatedLiteralsValidator, stated_literals, string_terminal
            from .literal_fit import LiteralFitValidator

            literals = stated_literals(grounded_in, schema)
            terminal = string_terminal(literals)
            stated = (StatedLiteralsValidator(literals), LiteralFitValidator(schema))
        # joins along the foreign keys when grounded, if the database declares any (many SQLite files do not)
        fk_joins = grounded_in is not None and bool(schema.foreign_keys)
        text = specialise(schema, strict=strict, string_terminal=terminal, fk_joins=fk_joins)
        from structgen.validators.sql import sql_validators

        checks = (*sql_validators(schema, explain=explain, second_opinion=second_opinion), *stated, *extra)
        set_ = object.__setattr__
        set_(self, "strict", strict)
        set_(self, "grounded_in", grounded_in)
        set_(self, "extra_validators", extra)
        set_(self, "_fallback", None)
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

    @property
    def fallback(self) -> "Sql | None":
        """The strict variant of this spec (same database and validators), built on first use; None when
        this one is strict already. The generator's last resort: see ``Generator.generate``."""
        if self.strict:
            return None
        if self._fallback is None:
            twin = object.__new__(Sql)
            twin._build(self.schema, self.extra_validators, self.explain, self.second_opinion, True,
                        self.grounded_in)
            object.__setattr__(self, "_fallback", twin)
        return self._fallback

    def grounded(self, source: str) -> "Sql":
        """This spec grounded in ``source`` (the question), what ``generate(..., ground=True)`` decodes a
        ``Sql`` with: each string literal a part of it, a value of its request notes, a database value it
        names or of a low-cardinality column, or a date format (``structgen.sql.grounded``); no comparison
        that can match no row (``structgen.sql.literal_fit``, repaired); the outermost joins along the
        foreign keys, when the database declares any (``structgen.sql.fk_joins``)."""
        if not isinstance(source, str):
            raise ConfigError(f"the grounding source must be text, got {type(source).__name__}")
        twin = object.__new__(Sql)
        twin._build(self.schema, self.extra_validators, self.explain, self.second_opinion, self.strict, source)
        return twin

    def render_prompt(self, prompt):
        return sql_prompt(self.schema, prompt)

    @property
    def key(self) -> str:
        return "sql:" + _digest(self.text, self.schema.digest)

    def __repr__(self) -> str:
        grounded = ", grounded" if self.grounded_in is not None else ""
        return f"Sql({str(self.database)!r}{', strict=True' if self.strict else ''}{grounded})"
