"""The strict SQL grammar (``specialise(schema, strict=True)``, ``sg.Sql(db, strict=True)``) and the
generator's fallback to it when the repair rounds run out.

The strict grammar gives up what a context-free grammar cannot check (correlated subqueries, subqueries in
FROM, output aliases and bare integers as ORDER BY / GROUP BY terms, subqueries of several columns used as a
value) so that every query it derives runs on the database and passes every validator.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter

import pytest

import structgen as sg
from structgen.sql import DbSchema, connect_readonly, specialise
from structgen.validators import validators_for

from scripted_model import ScriptedLogits
from test_sql_grammar import VALID, _derivations, _issues

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def strict(shop_db):
    return sg.Sql(shop_db, strict=True)


@pytest.fixture(scope="module")
def spec_default(shop_db):
    return sg.Sql(shop_db)


@pytest.fixture(scope="module")
def strict_c(strict, tok4k):
    return sg.compile(strict, tok4k)


#: SQLite VM steps one derived query may run before it is stopped (a random derivation can be a DISTINCT over a
#: cross join of every table: one took 40 s, 800 million steps); stopped, it ran without an error that far
STEP_BUDGET = 50_000_000


def _runner(shop_db):
    """A read-only connection to the shop database, and ``run(query)``: None when the query runs (or is still
    running without an error after ``STEP_BUDGET`` steps: "stopped"), else SQLite's error message."""
    con = connect_readonly(shop_db)
    ticks = [0]

    def over_budget() -> int:
        ticks[0] += 1
        return int(ticks[0] * 10_000 > STEP_BUDGET)

    con.set_progress_handler(over_budget, 10_000)
    stopped = [0]

    def run(q: str) -> str | None:
        ticks[0] = 0
        try:
            con.execute(q).fetchmany(3)
        except sqlite3.OperationalError as e:
            if str(e) == "interrupted" and ticks[0] * 10_000 > STEP_BUDGET:
                stopped[0] += 1
                return None
            return str(e)
        except sqlite3.Error as e:
            return str(e)
        return None
    return run, stopped


def test_every_query_the_strict_grammar_derives_runs_and_validates(strict, shop_db):
    run, stopped = _runner(shop_db)
    checks = validators_for(strict)
    queries = _derivations(strict.text, 100, seed=11) + _derivations(strict.text, 100, seed=12, max_depth=10)
    failed = []
    for q in queries:
        error = run(q)
        if error is None:
            issues = _issues(checks, q)
            error = issues[0].message if issues else None
        if error:
            failed.append((q, error))
    assert not failed, failed[:3]
    assert stopped[0] <= len(queries) // 20, f"{stopped[0]} of {len(queries)} queries ran past the step budget"


def test_the_default_grammar_derives_queries_that_do_not_run(spec_default, shop_db):
    # the contrast that makes the strict grammar worth having: the same derivations from the default one
    run, _ = _runner(shop_db)
    errors = sum(run(q) is not None for q in _derivations(spec_default.text, 150, seed=11))
    assert errors > 30


def test_llguidance_accepts_what_lark_derives_from_the_strict_grammar(strict, strict_c, vocab):
    rejected = [q for q in _derivations(strict.text, 120, seed=5) if not strict_c.accepts(vocab.encode(q))]
    assert not rejected, rejected[:3]


def test_the_strict_grammar_excludes_what_a_cfg_cannot_check(strict_c, vocab, strict):
    enc = vocab.encode
    for q in ("SELECT country, COUNT(*) FROM customers GROUP BY country ORDER BY COUNT(*) DESC",
              "SELECT c.name FROM customers AS c JOIN orders AS o ON o.customer_id = c.id ORDER BY c.name",
              "SELECT name FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE status = 'shipped')",
              "SELECT name FROM products WHERE price > (SELECT AVG(price) FROM products)",
              "SELECT c.name FROM customers AS c JOIN customers AS c2 ON c2.city = c.city",
              "SELECT name, UPPER(city) FROM customers ORDER BY LOWER(name) DESC LIMIT 3"):
        assert strict_c.accepts(enc(q)), q
    for q in ("SELECT name AS n FROM customers ORDER BY n",  # an output alias as a term
              "SELECT name FROM customers ORDER BY 3", "SELECT name FROM customers GROUP BY 2",  # an index
              "SELECT name FROM customers ORDER BY COUNT(*)",  # an aggregate orders an ungrouped query
              "SELECT name FROM customers WHERE id IN (SELECT id, name FROM customers)",  # two columns
              "SELECT name FROM customers AS c WHERE EXISTS (SELECT 1 FROM orders WHERE customer_id = c.id)",
              "SELECT sub.n FROM (SELECT COUNT(*) AS n FROM orders) AS sub",  # a subquery in FROM
              "SELECT name FROM customers WHERE id IN (SELECT o.customer_id FROM orders AS o)"):  # an alias inside
        assert not strict_c.accepts(enc(q)), q
    # most of the hand-written corpus is still a strict query
    kept = sum(strict_c.accepts(enc(q)) for q in VALID)
    assert kept >= 0.6 * len(VALID), kept


def test_the_strict_grammar_refuses_a_left_join_on_naming_a_later_table(strict_c, vocab, shop_db):
    # SQLite refuses a LEFT JOIN whose ON names a table declared after it, and accepts that in an inner join
    con = connect_readonly(shop_db)
    q = "SELECT p.name FROM products AS p LEFT JOIN orders AS o ON c.id = 1 JOIN customers AS c ON 1 = 1 LIMIT 1"
    with pytest.raises(sqlite3.OperationalError, match="ON clause references tables to its right"):
        con.execute(q)
    assert not strict_c.accepts(vocab.encode(q))
    assert not strict_c.accepts(vocab.encode(q.replace("c.id = 1", "(SELECT c.id) = 1")))
    for ok in (q.replace("LEFT JOIN", "JOIN"), q.replace("c.id = 1", "p.id = o.id"),
               q.replace("LEFT JOIN orders", "JOIN orders").replace(" JOIN customers", " LEFT JOIN customers"),
               "SELECT c.name FROM customers AS c JOIN orders AS o ON o.customer_id = c.id LEFT JOIN products AS p "
               "ON p.id = o.id AND c.id = 2 LIMIT 1"):
        con.execute(ok).fetchall()
        assert strict_c.accepts(vocab.encode(ok)), ok


@pytest.mark.parametrize("grammar", ["strict", "default"])
def test_the_grammars_accept_exactly_the_top_level_joins_sqlite_runs(grammar, strict_c, spec_default, tok4k, vocab,
                                                                     shop_db):
    # three tables in eight of their 24 orders, inner and left joins, each ON naming one of the three: the
    # grammar accepts a query iff no LEFT JOIN's ON names a table declared after it, and all it accepts run
    # (SQLite accepts a few that break the rule, when a later inner join's ON names the LEFT JOIN's table)
    c = strict_c if grammar == "strict" else sg.compile(spec_default, tok4k)
    con = connect_readonly(shop_db)
    tables = [("customers", "c", "id"), ("products", "p", "id"), ("orders", "o", "id"),
              ("order_items", "oi", "order_id")]
    wrong = []
    for order in list(itertools.permutations(tables, 3))[::3]:
        for kinds in itertools.product(("JOIN", "LEFT JOIN"), repeat=2):
            for refs in itertools.product(range(3), repeat=2):
                joins = "".join(f" {kinds[j]} {order[j + 1][0]} AS {order[j + 1][1]} ON "
                                f"{order[refs[j]][1]}.{order[refs[j]][2]} = 1" for j in range(2))
                q = f"SELECT 1 FROM {order[0][0]} AS {order[0][1]}{joins}"
                lawful = not any(kinds[j] == "LEFT JOIN" and refs[j] > j + 1 for j in range(2))
                accepted = c.accepts(vocab.encode(q))
                if accepted:
                    con.execute(q).fetchall()
                if accepted != lawful:
                    wrong.append(q)
    assert not wrong, wrong[:3]


def test_an_overflow_only_the_data_decide_passes_the_strict_grammar_and_not_the_validators(strict, strict_c, vocab):
    from structgen.validators import run_validators

    # SQLite prepares it and fails while summing (70 customers x 1e18 > 2^63): no grammar sees that
    q = "SELECT SUM(999999999999 * 999999) FROM customers"
    assert strict_c.accepts(vocab.encode(q))
    issues = run_validators(validators_for(strict), q)
    assert [i.validator for i in issues] == ["sqlite-run"] and "integer overflow" in issues[0].message, issues


def test_strict_spec_attributes(strict, spec_default, shop_db):
    assert strict.strict and strict.fallback is None and strict.text == specialise(strict.schema, strict=True)
    assert repr(strict).endswith("strict=True)") and strict.key != spec_default.key
    fb = spec_default.fallback
    assert fb is spec_default.fallback and fb.strict and fb.key == strict.key
    assert not spec_default.strict and isinstance(spec_default.schema, DbSchema)

    def mine(text):
        return []

    names = [type(v).__name__ for v in sg.Sql(shop_db, validators=[mine], explain=False).fallback.validators]
    assert names[-1] == "function" and "SqliteExplainValidator" not in names


# -- the fallback ------------------------------------------------------------------------------------------

# a model that insists on a query the validators reject and the default grammar allows: the repair rounds
# cannot talk it out of it (its push outweighs their penalties), the strict grammar can
STUBBORN = {
    "SELECT name AS n FROM customers ORDER BY m": "SELECT name AS n FROM customers ORDER BY ",
    "SELECT name FROM customers ORDER BY 3": "SELECT name FROM customers ORDER BY ",
}


@pytest.mark.parametrize("target", sorted(STUBBORN))
def test_the_strict_fallback_releases_a_query_that_runs(target, spec_default, tok4k, shop_db):
    gen = sg.Generator(ScriptedLogits(tok4k, target))
    r = gen.generate("Customers by name?", spec_default, max_tokens=40)
    assert r.valid and r.fallback and r.repair_rounds == 4, (r.text, r.errors)
    assert r.text.startswith(STUBBORN[target]) and r.text != target
    con = connect_readonly(shop_db)
    con.execute(r.text).fetchall()
    # without repair rounds there is no fallback either: the invalid query is returned as it is
    r0 = gen.generate("Customers by name?", spec_default, max_tokens=40, max_repair_rounds=0, strict=False)
    assert not r0.valid and not r0.fallback and r0.text == target


def test_no_fallback_when_the_first_answer_is_valid(spec_default, tok4k):
    q = "SELECT name FROM customers ORDER BY name"
    r = sg.Generator(ScriptedLogits(tok4k, q)).generate("Customers by name?", spec_default, max_tokens=40)
    assert r.valid and not r.fallback and r.repair_rounds == 0 and r.text == q


def test_the_fallback_is_shown_as_a_remask_event(spec_default, tok4k):
    gen = sg.Generator(ScriptedLogits(tok4k, "SELECT name FROM customers ORDER BY 3"))
    r = gen.generate("Customers by name?", spec_default, max_tokens=40, trace=True)
    notes = [e.note for e in r.trace if e.kind == "remask"]
    assert len(notes) == 4 and notes[-1].startswith("strict fallback after: ") and "ORDER BY" in notes[-1]



# ------------------------------------------------------------------------------------ the cut (last resort)
def test_complete_prefix_is_the_longest_one_that_validates(strict, strict_c, tok4k):
    """A query that ran away inside a string literal is cut where it last was a whole query that runs."""
    from structgen.sampler.repair import complete_prefix
    from structgen.validators import run_validators

    whole = "SELECT name FROM customers WHERE country = 'Germany'"
    ids = tok4k.encode(whole + " AND country = 'Fra", add_special_tokens=False)
    checks = validators_for(strict)

    def passes(k):
        return not run_validators(checks, tok4k.decode(ids[:k]))

    k = complete_prefix(strict_c, ids, len(ids), passes)
    assert tok4k.decode(ids[:k]) == whole + " AND country"  # a column is a condition too; "= 'Fra" is not
    # validators decide among complete prefixes: one that rejects WHERE leaves the query before it
    k2 = complete_prefix(strict_c, ids, len(ids), lambda k: passes(k) and "WHERE" not in tok4k.decode(ids[:k]))
    assert tok4k.decode(ids[:k2]) == "SELECT name FROM customers"
    assert complete_prefix(strict_c, ids, len(ids), lambda k: False) is None
    # nothing after a MASK (-1) or an EOS counts, and ``end`` bounds the search
    k0 = next(k for k in range(len(ids)) if tok4k.decode(ids[:k]) == "SELECT name FROM customers")
    assert complete_prefix(strict_c, ids[:k0 + 2] + [-1] + ids[k0 + 3:], len(ids), passes) == k0
    assert complete_prefix(strict_c, ids[:k0] + [tok4k.eos_token_id] + ids[k0 + 1:], len(ids), passes) == k0
    assert complete_prefix(strict_c, ids, k0 - 1, passes) is None


def no_where(text):
    from structgen.validators import Issue

    return [Issue("no WHERE here", (text.index("WHERE"), len(text)))] if "WHERE" in text else []


def test_the_cut_releases_the_longest_complete_prefix_after_the_fallback(shop_db, tok4k):
    """A model that insists on a filter every validator stage rejects: the repair rounds and the strict
    fallback cannot talk it out of it, and the answer is the query it wrote up to the filter."""
    spec = sg.Sql(shop_db, validators=[no_where])
    target = "SELECT name FROM customers WHERE country = 'Germany'"
    r = sg.Generator(ScriptedLogits(tok4k, target)).generate("Customers?", spec, max_tokens=40, trace=True)
    assert r.valid and r.fallback and r.text == "SELECT name FROM customers", (r.text, r.errors)
    assert set(r.tokens[r.n_output_tokens:]) == {tok4k.eos_token_id}
    notes = [e.note for e in r.trace if e.kind == "remask"]
    assert notes[-1].startswith("cut to its longest complete prefix") and any("strict fallback" in n for n in notes)
    # a spec whose prefixes are not safe answers is never cut: the same refusal ends in GenerationError
    g = sg.Grammar('start: "SELECT name FROM customers" (" WHERE country = \'Germany\'")?\n', validators=[no_where])
    with pytest.raises(sg.GenerationError, match="no WHERE here"):
        sg.Generator(ScriptedLogits(tok4k, target)).generate("Customers?", g, max_tokens=40)
    # no last resort without repair rounds
    r0 = sg.Generator(ScriptedLogits(tok4k, target)).generate("Customers?", spec, max_tokens=40,
                                                              max_repair_rounds=0, strict=False)
    assert not r0.valid and not r0.fallback and r0.text == target


# ------------------------------------------------------------------------------ the finisher (last resort)
RUNAWAY = "SELECT name, " + ", ".join(["price"] * 30)  # a SELECT list that never reaches FROM


def test_a_grammar_session_finishes_any_prefix_it_allows(strict_c, tok4k):
    ids = tok4k.encode("SELECT name, price", add_special_tokens=False)
    s = strict_c.session(len(ids) + 8)
    tail = s.completion(ids)
    assert tail and strict_c.accepts(ids + tail) and len(tail) <= 8
    assert tok4k.decode(ids + tail).startswith("SELECT name, price FROM ")
    assert strict_c.session(len(ids)).completion(ids) is None  # no room left
    assert s.completion(ids + tail) == []  # complete already
    bad = tok4k.encode("SELECT FROM", add_special_tokens=False)
    assert s.completion(bad) is None  # the grammar does not allow the prefix
    assert s.completion(ids) == tail  # the session is not left stuck on the refused prefix


def test_the_endgame_search_asks_the_matcher_once_per_node(strict_c, tok4k):
    """``_finish_path`` keeps what the matcher said at each node of its search, by the path of tokens to it:
    the same search again with the same memo finds the same completion without asking for a grammar mask or
    forced bytes, and a fresh memo finds it too (the memo saves matcher calls and changes no result)."""
    ids = tok4k.encode("SELECT name, price", add_special_tokens=False)
    s = strict_c.session(len(ids) + 8)
    assert s.completion(ids)  # the matcher now follows ids
    memo: dict = {}
    first = s._finish_path(8, [256], memo)
    assert first and strict_c.accepts(ids + first) and memo
    real, calls = s._m, Counter()

    class Counting:
        def __getattr__(self, name):
            attr = getattr(real, name)
            if name not in ("compute_bitmask", "compute_ff_bytes", "compute_ff_tokens"):
                return attr

            def counted(*a):
                calls[name] += 1
                return attr(*a)
            return counted

    s._m = Counting()
    try:
        again = s._finish_path(8, [256], memo)
    finally:
        s._m = real
    assert again == first and not calls
    assert s._finish_path(8, [256]) == first
    assert s.completion(ids) == first  # the searches left the matcher where it was


def test_the_endgame_benchmark_counts_the_matcher_calls_and_puts_the_class_back(strict_c, tok4k, bench_script):
    """``benchmarks/endgame_search.py`` counts llguidance's calls by wrapping the matcher class: a search
    makes calls of each kind it counts, and afterwards the class is as it was. Its 16 jobs are every block
    length with every commit policy once, as the SQL validity property's sweep."""
    import llguidance

    eg = bench_script("endgame_search")
    before = {name: getattr(llguidance.LLMatcher, name) for name in eg.COUNTED}
    ids = tok4k.encode("SELECT name, price", add_special_tokens=False)
    with eg.CountingMatcher() as counting:
        assert strict_c.session(len(ids) + 8).completion(ids)
    assert all(counting.calls[name] > 0 for name in eg.COUNTED), counting.calls
    assert {name: getattr(llguidance.LLMatcher, name) for name in eg.COUNTED} == before
    sweep = eg.jobs(16)
    assert len({(j["block_length"], j["threshold"], j["tokens_per_step"]) for j in sweep}) == 16


def test_finish_prefix_closes_a_runaway_select_list(strict, strict_c, tok4k, shop_db):
    """No prefix of a SELECT list that ran away is a query (the cut has nothing to cut); the finisher
    keeps all but the last few tokens and lets the grammar close it."""
    from structgen.sampler.repair import complete_prefix, finish_prefix
    from structgen.validators import run_validators

    ids = tok4k.encode(RUNAWAY, add_special_tokens=False)
    checks = validators_for(strict)
    seen: list[str] = []

    def passes(tokens):
        seen.append(tok4k.decode(tokens))
        return not run_validators(checks, seen[-1])

    assert complete_prefix(strict_c, ids, len(ids), lambda k: passes(ids[:k])) is None and not seen
    k, tail = finish_prefix(strict_c.session(len(ids)), ids, len(ids), passes)
    text = tok4k.decode(ids[:k] + tail)
    assert len(ids) - 8 <= k < len(ids) and k + len(tail) <= len(ids) and " FROM " in text, text
    assert text.startswith(tok4k.decode(ids[:k])) and strict_c.accepts(ids[:k] + tail)
    con = connect_readonly(shop_db)
    con.execute(text).fetchall()
    # validators decide: one that refuses every finished query leaves nothing, after one try per room and
    # one for the grammar's shortest output
    from structgen.sampler.repair import FINISH_ROOM

    seen.clear()
    assert finish_prefix(strict_c.session(len(ids)), ids, len(ids), lambda t: passes(t) and False) is None
    assert 2 <= len(seen) <= len(FINISH_ROOM) + 1
    assert seen[-1] == tok4k.decode(list(strict_c.shortest_output()))
    # nothing after a MASK or an EOS is kept
    k0 = 6
    k, tail = finish_prefix(strict_c.session(len(ids)), ids[:k0] + [-1] + ids[k0 + 1:], len(ids), passes)
    assert k == k0 and tok4k.decode(ids[:k] + tail).startswith(tok4k.decode(ids[:k0]))
    eos = tok4k.eos_token_id
    assert finish_prefix(strict_c.session(len(ids)), ids[:k0] + [eos] + ids[k0 + 1:], len(ids), passes)[0] == k0
    assert finish_prefix(strict_c.session(len(ids)), ids, k0, passes)[0] == k0  # ``end`` bounds it too


#: a runaway whose aliases no short completion defines (run 38 of the training log wrote two of these)
ALIASED = "SELECT SUM(oi.quantity * c.country" + " * c.country" * 30  # longer than the widest room


def test_finish_prefix_ends_valid_when_no_completion_of_the_runaway_is_found(strict, strict_c, tok4k, shop_db):
    """Closing ``SUM(oi.quantity * c.country * ...`` takes a FROM with two joins, longer than the search
    finds in any of its rooms: the finisher's answer is then the grammar's shortest output, a query that
    runs, so a salvaged spec always ends valid."""
    from structgen.sampler.repair import FINISH_ROOM, finish_prefix
    from structgen.validators import run_validators

    ids = tok4k.encode(ALIASED, add_special_tokens=False)
    assert len(ids) > 2 * max(FINISH_ROOM)  # every room keeps some of the runaway
    checks = validators_for(strict)
    length = len(ids) + 1  # one position left after the runaway, as in run 38's answers

    def passes(tokens):
        return not run_validators(checks, tok4k.decode(tokens))

    shortest = strict_c.shortest_output()
    assert shortest is not None and strict_c.accepts(list(shortest)) and len(shortest) <= 16
    assert len(shortest) == strict_c.shortest_known() >= strict_c.min_tokens()
    k, tail = finish_prefix(strict_c.session(length), ids, len(ids), passes)
    assert (k, tuple(tail)) == (0, shortest)
    connect_readonly(shop_db).execute(tok4k.decode(tail)).fetchall()
    # no room for it, or validators that refuse it: nothing
    assert finish_prefix(strict_c.session(len(shortest) - 1), ids, len(ids), passes) is None
    assert finish_prefix(strict_c.session(length), ids, len(ids), lambda t: passes(t) and t != list(shortest)) is None


def test_the_generator_finishes_a_runaway_the_endgame_could_not_steer(shop_db, tok4k, monkeypatch):
    """With the endgame's steering off (a stand-in for a search that found nothing, as it did for run 12
    of the training log), a model that writes SELECT list items until the canvas ends hits a dead end in
    every round of both stages; the answer is its SELECT list, closed by the grammar."""
    from structgen.constraints.grammar_session import GrammarSession

    init = GrammarSession.__init__
    monkeypatch.setattr(GrammarSession, "__init__",
                        lambda self, *a, **kw: init(self, *a, **{**kw, "endgame": 0, "search_budget": 0}))
    spec = sg.Sql(shop_db)
    # the script's ``price, price, ...`` is the runaway under test, not a stutter for the sampler to break up
    r = sg.Generator(ScriptedLogits(tok4k, RUNAWAY), stutter_gap=0).generate("Prices?", spec, max_tokens=40,
                                                                            trace=True)
    assert r.valid and r.fallback and r.text.startswith("SELECT name, price, price") and " FROM " in r.text
    notes = [e.note for e in r.trace if e.kind == "remask"]
    assert notes[-1].startswith("finished: its first ") and any("strict fallback" in n for n in notes)
    connect_readonly(shop_db).execute(r.text).fetchall()
    # a runaway no room closes (run 38's): the answer is the grammar's shortest query
    r = sg.Generator(ScriptedLogits(tok4k, ALIASED), stutter_gap=0).generate("Sales?", spec, max_tokens=40,
                                                                            trace=True)
    strict_c = sg.Generator(ScriptedLogits(tok4k, ALIASED)).compile(spec.fallback, "grammar")
    assert r.valid and r.fallback and not r.text.startswith("SELECT SUM(oi"), r.text
    assert strict_c.accepts(r.tokens[:r.n_output_tokens]) and r.n_output_tokens <= 16
    assert [e.note for e in r.trace if e.kind == "remask"][-1].startswith("replaced by a short output of the")
    connect_readonly(shop_db).execute(r.text).fetchall()
    # a spec that is not salvaged ends in GenerationError, whatever its grammar
    g = sg.Grammar('start: "SELECT name" (", price")* " FROM products"\n')
    with pytest.raises(sg.GenerationError):
        sg.Generator(ScriptedLogits(tok4k, RUNAWAY), stutter_gap=0).generate("Prices?", g, max_tokens=40)
