"""CodeSyntaxValidator (validators/code.py): tree-sitter syntax checks for SQL and Python, their spans,
the SQLite rewrites and reserved words (checked against the sqlite3 module), and the re-mask repair fixing
Python lines generated with random logits (checked against ``ast.parse``)."""

from __future__ import annotations

import ast
import re
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import structgen as sg
from structgen.errors import SpecError
from structgen.sampler.repair import positions_to_remask
from structgen.validators import Issue, code
from structgen.validators.code import (
    SQL_KNOWN_FALSE_POSITIVES,
    SQLITE_RESERVED,
    SQLITE_REWRITES,
    CodeSyntaxValidator,
    sqlite_rewrite,
)

for _wheel in ("tree_sitter", "tree_sitter_sql", "tree_sitter_python"):
    pytest.importorskip(_wheel)

SCHEMA = """
CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, city TEXT, country TEXT, signup_date TEXT);
CREATE TABLE products(id INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER, order_date TEXT, status TEXT);
CREATE TABLE order_items(order_id INTEGER, product_id INTEGER, quantity INTEGER);
CREATE TABLE ids(id INTEGER);
CREATE TABLE events(id INTEGER PRIMARY KEY, object_id INTEGER, interval INTEGER, array TEXT);
"""

# Valid SQLite SELECTs of the kinds structgen generates (kept to SQLite >= 3.31 syntax).
VALID_SQL = [
    "SELECT id, name FROM customers",
    "SELECT * FROM products WHERE price > 10",
    "SELECT c.name, o.order_date FROM customers c JOIN orders o ON o.customer_id = c.id",
    "SELECT c.name, o.id FROM customers AS c INNER JOIN orders AS o ON o.customer_id = c.id",
    "SELECT c.name, COUNT(o.id) AS n FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id",
    "SELECT c.name FROM customers c LEFT OUTER JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL",
    ("SELECT p.name, SUM(oi.quantity) FROM products p JOIN order_items oi ON oi.product_id = p.id "
     "GROUP BY p.name ORDER BY SUM(oi.quantity) DESC"),
    "SELECT name FROM products WHERE price = (SELECT MAX(price) FROM products)",
    "SELECT name FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE status = 'shipped')",
    "SELECT name FROM customers WHERE id NOT IN (SELECT customer_id FROM orders)",
    "SELECT name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)",
    "SELECT name FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)",
    "SELECT name FROM customers WHERE country IN ('France', 'Spain', 'Italy')",
    ("SELECT name, CASE WHEN price > 100 THEN 'expensive' WHEN price > 20 THEN 'mid' ELSE 'cheap' END AS band "
     "FROM products"),
    "SELECT CASE status WHEN 'shipped' THEN 1 ELSE 0 END FROM orders",
    "SELECT COUNT(DISTINCT customer_id) FROM orders",
    "SELECT category, COUNT(*) FROM products GROUP BY category HAVING COUNT(*) > 2",
    ("SELECT category, AVG(price) AS avg_price FROM products GROUP BY category HAVING AVG(price) > 50 "
     "ORDER BY avg_price DESC"),
    "SELECT name, price FROM products ORDER BY price DESC LIMIT 5",
    "SELECT name FROM products ORDER BY name ASC LIMIT 10 OFFSET 20",
    "SELECT name FROM customers WHERE name LIKE 'A%'",
    "SELECT name FROM customers WHERE name NOT LIKE '%son'",
    "SELECT name FROM products WHERE price BETWEEN 10 AND 20",
    "SELECT name FROM products WHERE price NOT BETWEEN 10 AND 20",
    "SELECT id FROM orders WHERE status IS NOT NULL",
    "SELECT name || ' (' || city || ')' FROM customers",
    "SELECT strftime('%Y', order_date) AS year, COUNT(*) FROM orders GROUP BY year",
    "SELECT strftime('%Y-%m', order_date), COUNT(*) FROM orders GROUP BY strftime('%Y-%m', order_date)",
    "SELECT CAST(quantity AS REAL) / 2 FROM order_items",
    "SELECT ROUND(AVG(price), 2) FROM products",
    "SELECT category, ROUND(AVG(price), 2) AS avg_price FROM products GROUP BY category",
    "SELECT id FROM customers WHERE name = 'O''Brien'",
    ("SELECT t.category, t.n FROM (SELECT category, COUNT(*) AS n FROM products GROUP BY category) AS t "
     "WHERE t.n > 1"),
    "SELECT t.category FROM (SELECT category, COUNT(*) AS n FROM products GROUP BY category) t",
    "SELECT c.name, (SELECT COUNT(*) FROM orders o WHERE o.customer_id = c.id) AS n_orders FROM customers c",
    ("SELECT o.id, SUM(oi.quantity * p.price) AS total FROM orders o JOIN order_items oi ON oi.order_id = o.id "
     "JOIN products p ON p.id = oi.product_id GROUP BY o.id ORDER BY total DESC LIMIT 3"),
    "SELECT DISTINCT country FROM customers",
    "SELECT DISTINCT city, country FROM customers ORDER BY country, city",
    "SELECT MIN(signup_date), MAX(signup_date) FROM customers",
    "SELECT name FROM customers WHERE signup_date >= '2023-01-01' AND signup_date < '2024-01-01'",
    "SELECT name FROM customers WHERE (city = 'Paris' OR city = 'Lyon') AND country = 'France'",
    "SELECT COUNT(*) FROM orders WHERE NOT status = 'cancelled'",
    "SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY n DESC, status",
    ("SELECT p.category, SUM(oi.quantity) AS units FROM order_items oi JOIN products p ON p.id = oi.product_id "
     "JOIN orders o ON o.id = oi.order_id WHERE o.status <> 'cancelled' GROUP BY p.category"),
    ("SELECT c.country, COUNT(DISTINCT o.id) FROM customers c JOIN orders o ON o.customer_id = c.id "
     "GROUP BY c.country HAVING COUNT(DISTINCT o.id) >= 2"),
    "SELECT UPPER(name), LENGTH(name), SUBSTR(name, 1, 3), COALESCE(city, 'unknown') FROM customers",
    "SELECT name FROM customers WHERE city IS NULL",
    "SELECT price * 1.2 AS gross, -price, price != 0 FROM products",
    "SELECT id FROM orders WHERE date(order_date) > date('now', '-30 days')",
    "SELECT julianday('now') - julianday(signup_date) FROM customers",
    "SELECT SUM(CASE WHEN status = 'shipped' THEN 1 ELSE 0 END) AS shipped FROM orders",
    "SELECT name FROM customers UNION SELECT name FROM products",
    "SELECT name FROM customers UNION ALL SELECT name FROM products ORDER BY 1",
    "SELECT id FROM customers EXCEPT SELECT customer_id FROM orders",
    "WITH big AS (SELECT id FROM products WHERE price > 100) SELECT COUNT(*) FROM big",
    "SELECT name FROM customers;",
    "SELECT o.id FROM orders o CROSS JOIN customers c WHERE c.id = o.customer_id",
    "SELECT name FROM customers NATURAL JOIN orders",
    "SELECT total(price), group_concat(name, ', ') FROM products",
    "SELECT AVG(cnt) FROM (SELECT COUNT(*) AS cnt FROM orders GROUP BY customer_id)",
    "SELECT name FROM customers WHERE name LIKE '%!_%' ESCAPE '!'",
    "SELECT a.name, b.name FROM customers a JOIN customers b ON a.city = b.city AND a.id < b.id",
    "SELECT name, price, RANK() OVER (ORDER BY price DESC) FROM products",
    "SELECT name, ROW_NUMBER() OVER (PARTITION BY category ORDER BY price DESC) AS rn FROM products",
    "SELECT CAST(strftime('%m', order_date) AS INTEGER) AS month FROM orders",
    "select name from customers where city = 'Oslo' order by name limit 1",
    "SELECT name\nFROM customers\nWHERE country = 'Perú'",
    "SELECT 'café' || name AS \"Customer Name\" FROM \"customers\"",
    "SELECT x.n FROM (SELECT COUNT(*) n FROM orders) x",
    "SELECT 0x1F, 1e3, .5, 1. FROM products",
    "SELECT name FROM customers -- a comment\nWHERE /* another */ id = 1",
    "SELECT key, value, date, year, desc FROM kw",
    "SELECT ROUND(CAST(SUM(quantity) AS REAL) / COUNT(*), 2) FROM order_items",
    "SELECT COUNT(*) FILTER (WHERE price > 10) FROM products",
    "SELECT name FROM products ORDER BY price DESC NULLS LAST",
    # several rewrites in one statement
    "SELECT name FROM customers WHERE country = 'US' COLLATE BINARY AND city NOTNULL",
    "SELECT name FROM products WHERE price == 10 AND name GLOB 'a*' ORDER BY name COLLATE NOCASE LIMIT ?, 5",
    "SELECT e.object_id, COUNT(*) FROM events e JOIN customers c WHERE c.id = e.object_id GROUP BY e.object_id",
] + [rw.example for rw in SQLITE_REWRITES]

# Clear syntax errors, and a fragment the reported span must cover.
INVALID_SQL = [
    ("SELECT FROM customers", "FROM"),
    ("SELECT DISTINCT FROM customers", "FROM"),
    ("SELECT name FROM customers WHERE", "WHERE"),
    ("SELECT name FROM customers WHERE (city = 'Paris'", "'"),
    ("SELECT name FROM customers WHERE city = 'Paris')", ")"),
    ("SELECT COUNT(* FROM orders", "M "),
    ("SELECT ROUND(AVG(price), 2 FROM products", "M "),
    ("SELECT strftime('%Y', order_date FROM orders", "("),
    ("SELECT name FROM customers WHERE id IN (1, 2", "2"),
    ("SELECT name FROM (SELECT name FROM customers", "customers"),
    ("SELECT name FROM customers WHERE id =", "="),
    ("SELECT name FROM customers WHERE id = 1 AND", "AND"),
    ("SELECT price * FROM products", "* FROM"),
    ("SELECT name || FROM customers", "|| FROM"),
    ("SELECT name, FROM customers", ", FROM"),
    ("SELECT 1 +", "+"),
    ("SELECT name FROM customers ORDER BY", "BY"),
    ("SELECT name FROM customers LIMIT", "LIMIT"),
    ("SELECT name FROM customers c JOIN orders o ON", "ON"),
    ("SELECT CASE WHEN price > 1 THEN 'a' FROM products", "'"),
    ("SELECT name FROM customers WHERE WHERE id = 1", "WHERE"),
    ("SELECT name name name FROM customers", "name"),
    ("SELECT name FROM customers WHERE id = = 1", "="),
    ("SELECT SELECT name FROM customers", "SELECT"),
    ("SELECT name FROM customers UNION", "UNION"),
    ("SELECT name FROM customers WHERE id = 1 GROUP BY name HAVING COUNT(*) >", ">"),
]


@pytest.fixture(scope="module")
def db():
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.execute('CREATE TABLE kw("key", "value", "date", "year", "desc")')
    yield conn
    conn.close()


def sqlite_accepts(conn, sql: str) -> bool:
    """Whether SQLite compiles the statement (a missing parameter binding is only noticed after that)."""
    try:
        conn.execute("EXPLAIN " + sql)
        return True
    except sqlite3.ProgrammingError as e:
        return "bindings" in str(e)
    except sqlite3.Error:
        return False


@pytest.fixture(scope="module")
def sql():
    return CodeSyntaxValidator("sql")


@pytest.fixture(scope="module")
def py():
    return CodeSyntaxValidator("python")


def check_spans(text: str, issues: list[Issue]) -> None:
    for i in issues:
        assert isinstance(i, Issue)
        assert i.span is None or 0 <= i.span[0] < i.span[1] <= len(text), (i, len(text))


# -- the registry ------------------------------------------------------------------------------------------
def test_names_and_registry():
    v = CodeSyntaxValidator("Python")
    assert v.name == "tree-sitter:python" and v.language == "python"
    assert CodeSyntaxValidator("sql").name == "tree-sitter:sql"
    assert {"sql", "python"} <= set(code.languages())


def test_unknown_language_is_a_spec_error():
    with pytest.raises(SpecError, match=r"'cobol'.*known: .*python.*sql.*register_language"):
        CodeSyntaxValidator("cobol")


def test_missing_wheel_names_the_package(monkeypatch):
    monkeypatch.setattr(code, "_REGISTRY", dict(code._REGISTRY))
    code.register_language("klingon", "tree_sitter_klingon_not_installed", "tree-sitter-klingon")
    with pytest.raises(SpecError, match="pip install tree-sitter-klingon"):
        CodeSyntaxValidator("klingon")
    code.register_language("jsonmod", "json", "not-a-grammar")
    with pytest.raises(SpecError, match=r"no language\(\).*not-a-grammar"):
        CodeSyntaxValidator("jsonmod")
    with pytest.raises(SpecError, match="already registered"):
        code.register_language("sql", "tree_sitter_sql", "tree-sitter-sql")
    with pytest.raises(SpecError, match="non-empty word"):
        code.register_language("", "m", "p")


def test_parsers_are_reused_per_thread():
    entry = code._entry("python")
    lang = code._language(entry)
    assert code._language(entry) is lang
    here = code._parser(entry, lang)
    assert code._parser(entry, lang) is here
    other = []
    t = threading.Thread(target=lambda: other.append(code._parser(entry, lang)))
    t.start()
    t.join()
    assert other[0] is not here


def test_concurrent_calls_give_the_serial_results(sql, py):
    texts = [(sql, s) for s in VALID_SQL[:15]] + [(sql, s) for s, _ in INVALID_SQL[:15]]
    texts += [(py, s) for s in VALID_PY[:6]] + [(py, s) for s, _, _ in BROKEN_PY]
    expected = [v(s) for v, s in texts]
    with ThreadPoolExecutor(max_workers=4) as ex:
        for _ in range(5):
            assert list(ex.map(lambda vs: vs[0](vs[1]), texts)) == expected


# -- SQL ---------------------------------------------------------------------------------------------------
def test_sql_corpus_is_large_enough():
    assert len(VALID_SQL) >= 60 and len(INVALID_SQL) >= 20


@pytest.mark.parametrize("stmt", VALID_SQL)
def test_valid_sqlite_is_accepted(sql, db, stmt):
    assert sqlite_accepts(db, stmt), f"the test statement itself is not valid SQLite: {stmt}"
    assert sql(stmt) == []


@pytest.mark.parametrize("stmt,fragment", INVALID_SQL)
def test_sql_syntax_errors_are_found_with_spans(sql, db, stmt, fragment):
    assert not sqlite_accepts(db, stmt)
    issues = sql(stmt)
    assert issues, stmt
    check_spans(stmt, issues)
    covered = [stmt[i.span[0]:i.span[1]] for i in issues if i.span]
    assert any(fragment in c for c in covered), (covered, [i.message for i in issues])
    for i in issues:
        assert re.match(r"line \d+ column \d+: ", i.message) and i.validator == "tree-sitter:sql"
        assert i.path


def test_sql_messages_say_what_is_wrong(sql):
    [i] = sql("SELECT name FROM customers WHERE (city = 'Paris'")
    assert i.message == 'line 1 column 49: missing ")"' and i.path == "parenthesized_expression"
    [i] = sql("SELECT name FROM customers WHERE id =")
    assert "missing an identifier" in i.message and i.path == "binary_expression"
    [i] = sql("SELECT FROM customers")
    assert '"FROM" is a reserved word' in i.message and "double quotes" in i.message
    [i] = sql("SELECT a FROM t WHERE a = 1)")
    assert i.message == 'line 1 column 28: ")" closes no open bracket'
    [i] = sql("SELECT name name name FROM customers")
    assert i.message == 'line 1 column 18: unexpected "name"' and i.span == (17, 21)
    [i] = sql("SELECT a\nFROM t\nWHERE")
    assert i.message.startswith('line 3 column 1: unexpected "WHERE"') and "ends before" in i.message


def test_sql_spans_are_characters_not_bytes(sql):
    text = "SELECT 'é€𝔘' AS x FROM customers WHERE (city = 'Zürich'"
    [i] = sql(text)
    assert len(text.encode()) > len(text)
    assert i.span == (text.index("'Zürich'"), len(text))  # missing at the very end: the last word
    text = "SELECT 'é€𝔘' AS x FROM customers WHERE (city = 'Zürich' AND id = 1"
    [i] = sql(text)
    assert i.message == 'line 1 column 67: missing ")"' and i.span == (65, 66)  # in bytes: column 74
    [i] = sql("SELECT 'ü' || FROM t")
    assert "|| FROM" == "SELECT 'ü' || FROM t"[i.span[0]:i.span[1]]


@pytest.mark.parametrize("word", sorted(SQLITE_RESERVED))
def test_reserved_words_are_rejected_by_sqlite_as_names(word):
    if word == "RETURNING" and sqlite3.sqlite_version_info < (3, 35):
        pytest.skip("RETURNING is a keyword since SQLite 3.35")
    conn = sqlite3.connect(":memory:")
    conn.execute(f'CREATE TABLE t("{word.lower()}", a)')
    conn.execute(f'CREATE TABLE "{word.lower()}"(a)')
    for q in (f"SELECT {word} FROM t", f"SELECT a AS {word} FROM t", f"SELECT a FROM {word}",
              f"SELECT x.{word} FROM t x", f"SELECT {word}.a FROM t AS {word}"):
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("EXPLAIN " + q)
    conn.execute(f'EXPLAIN SELECT "{word.lower()}" FROM t')  # quoted, it is a name
    assert CodeSyntaxValidator("sql")(f'SELECT "{word.lower()}" FROM t') == []


def test_null_is_not_treated_as_reserved(sql):
    assert "NULL" not in SQLITE_RESERVED
    assert sql("SELECT NULL, name FROM customers WHERE city IS NULL") == []


@pytest.mark.parametrize("rw", SQLITE_REWRITES, ids=lambda rw: rw.name)
def test_each_sqlite_rewrite_hides_a_real_false_positive(rw, db, sql):
    assert sqlite_accepts(db, rw.example)
    raw = code._parser(code._entry("sql"), sql._lang).parse(rw.example.encode())
    assert raw.root_node.has_error, f"tree-sitter-sql parses {rw.example!r} now: the {rw.name} rewrite can go"
    out = sqlite_rewrite(rw.example, only={rw.name})
    assert out != rw.example and len(out) == len(rw.example)
    assert sqlite_rewrite(rw.example, only=set()) == rw.example
    assert sql(rw.example) == []


BROKEN_AFTER_REWRITE = {
    "double_equals": "SELECT name FROM products WHERE price ==",
    "glob_regexp_match": "SELECT name FROM customers WHERE name GLOB",
    "null_tests": "SELECT name FROM customers WHERE city NOTNULL AND",
    "collate": "SELECT name FROM customers ORDER BY name COLLATE NOCASE,",
    "exponent_case": "SELECT 1.5E-2 +",
    "parameters": "SELECT name FROM customers WHERE id = :id AND",
    "limit_expressions": "SELECT name FROM products LIMIT (5, 10",
    "join_without_constraint": "SELECT c.name FROM customers c JOIN WHERE c.id = 1",
    "bracket_identifiers": "SELECT [name] FROM customers WHERE",
    "keyword_names": "SELECT object_id, interval FROM events WHERE array IS",
}


@pytest.mark.parametrize("rw", SQLITE_REWRITES, ids=lambda rw: rw.name)
def test_rewrites_do_not_hide_real_errors(rw, db, sql):
    broken = BROKEN_AFTER_REWRITE[rw.name]
    assert not sqlite_accepts(db, broken)
    issues = sql(broken)
    assert issues
    check_spans(broken, issues)


def test_rewrites_leave_strings_quoted_names_and_comments_alone():
    text = "SELECT 'a == b GLOB c', \"x NOTNULL\", `LIMIT ?` -- JOIN t == 1E5\nFROM t /* :id COLLATE x */"
    assert sqlite_rewrite(text) == text
    assert sqlite_rewrite("SELECT a FROM t WHERE a == 1 AND b ISNULL") == \
        "SELECT a FROM t WHERE a =  1 AND b       "


def test_keyword_names_keep_function_names_and_cast_types():
    text = "SELECT json(a), CAST(b AS REAL), interval, t.array, any.* FROM events AS any"
    assert sqlite_rewrite(text, only={"keyword_names"}) == \
        "SELECT json(a), CAST(b AS REAL), x_______, t.x____, x__.* FROM events AS x__"
    assert {"ANY", "ARRAY", "INTERVAL", "ONLY", "SOME", "OBJECT_ID"} <= code._ts_only_keywords()
    assert not code._ts_only_keywords() & code.SQLITE_KEYWORDS
    assert SQLITE_RESERVED <= code.SQLITE_KEYWORDS


def test_offset_as_a_name_is_not_a_limit_clause():
    text = "SELECT offset.* FROM customers AS offset LIMIT 1 + 1 OFFSET (SELECT 2)"
    assert sqlite_rewrite(text, only={"limit_expressions"}) == \
        "SELECT offset.* FROM customers AS offset LIMIT 1     OFFSET 1         "


@pytest.mark.parametrize("what,stmt", SQL_KNOWN_FALSE_POSITIVES)
def test_known_false_positives_are_still_what_the_docs_say(what, stmt, db, sql):
    stmt = stmt.replace("IN orders", "IN ids")  # IN <table> needs a one-column table
    assert sqlite_accepts(db, stmt)
    assert sql(stmt), f"{what} parses now: drop it from SQL_KNOWN_FALSE_POSITIVES"


# -- Python ------------------------------------------------------------------------------------------------
VALID_PY = [
    ("def area(w, h):\n    \"\"\"Area of a rectangle.\"\"\"\n    if w < 0 or h < 0:\n        raise ValueError('neg')\n"
     "    return w * h\n"),
    ("class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, x):\n"
     "        self.items.append(x)\n\n    @property\n    def top(self):\n        return self.items[-1]\n"),
    ("squares = [x * x for x in range(10) if x % 2]\npairs = {k: v for k, v in zip('ab', (1, 2))}\n"
     "gen = (i for i in squares)\n"),
    "name = 'Zoë'\nprint(f\"{name!r:>10} has {len(name)} letters, {3.14159:.2f}\")\n",
    "s = 'héllo wörld ✓ 𝔘𝔫𝔦'\nt = \"日本語\" + s\n",
    "async def main():\n    async with lock:\n        await asyncio.sleep(1)\n",
    "try:\n    x = 1 / 0\nexcept (ZeroDivisionError, ValueError) as e:\n    x = None\nfinally:\n    pass\n",
    "if (n := len(data)) > 10:\n    print(n)\n",
    "match command:\n    case [\"go\", direction]:\n        move(direction)\n    case _:\n        pass\n",
    "f = lambda a, *args, b=2, **kw: (a, args, b, kw)\n",
    "x = [\n    1,\n    2,  # two\n]\n",
    "",
]

# (broken snippet, text an issue's span must start with, words of its message)
BROKEN_PY = [
    ("x = (1, 2\ny = 3\n", "(", '"(" is never closed'),
    ("values = [1, 2, 3\ntotal = sum(values)\n", "[", '"[" is never closed'),
    ("def f(:\n    pass\n", "(:", 'missing ")"'),
    ("result = compute(a, b))\ny = 2\n", ")", "closes no open bracket"),
    ("x = 1 2\n", "1", "unexpected"),
    ("x = 1\n    y = 2\n", "    y = 2", "unexpected indent"),
    ("def f():\nreturn 1\n", "return 1", "expected an indented block"),
    ("def f():\n    return 1\n  x = 2\n", "  x = 2", "unindent does not match"),
    ("print 'hello'\n", "print 'hello'", "Missing parentheses"),
    ("total = a +* b\n", "*", "invalid syntax"),
]


@pytest.mark.parametrize("snippet", VALID_PY)
def test_valid_python_is_accepted(py, snippet):
    ast.parse(snippet)
    assert py(snippet) == []


@pytest.mark.parametrize("snippet,covered,words", BROKEN_PY)
def test_python_errors_are_found_with_spans(py, snippet, covered, words):
    with pytest.raises(SyntaxError):
        ast.parse(snippet)
    issues = py(snippet)
    check_spans(snippet, issues)
    assert any(snippet[i.span[0]:i.span[1]].startswith(covered) and words in i.message for i in issues), \
        [(str(i), snippet[i.span[0]:i.span[1]]) for i in issues]


def test_python_error_details(py):
    [i] = py("def f(:\n    pass\n")
    assert i.message == 'line 1 column 7: missing ")"' and i.path == "parameters" and i.span == (5, 7)
    [i] = py("def area(w, h):\n    return w * (h + 1\n\nprint(area(2, 3))\n")
    assert i.message.startswith('line 2 column 16: "(" is never closed') and i.path == "function_definition"
    [i] = py("x = 1\n    y = 2\n")
    assert i.path == "IndentationError" and i.message == "line 2 column 5: unexpected indent"


def test_python_spans_are_characters_not_bytes(py):
    text = "s = 'héllo wörld ✓ 𝔘' + (1\n"
    [i] = py(text)
    assert i.span[0] == text.index("(") and text[i.span[0]:i.span[1]] == "(1"
    text = "ééé = 1; y = ééé +* b\n"  # tree-sitter accepts this; Python's error gives the span
    [i] = py(text)
    assert i.message == "line 1 column 19: invalid syntax" and text[i.span[0]:i.span[1]] == "*"


def test_compile_is_the_referee_for_python():
    fake = [Issue("tree-sitter saw something", (4, 6), "module", "tree-sitter:python")]
    assert code._python_extra("x = 1\n", fake, "tree-sitter:python") == []  # it compiles: valid
    assert code._python_extra("x = (\n", fake, "tree-sitter:python") == fake  # same place: not repeated
    [own] = code._python_extra("x = (\n", [], "tree-sitter:python")
    assert own.span == (4, 5) and "never closed" in own.message and own.path == "SyntaxError"


def test_many_errors_are_capped(py):
    text = "x = 1 2\n" * 40
    issues = py(text)
    assert len(issues) == code.MAX_ISSUES
    assert "syntax errors from line" in issues[-1].message and issues[-1].span[1] == len(text)


def test_remask_positions_cover_the_error_node(py):
    text = "def f(a, b):\n    return g(a, b))\n\ny = f(1, 2)\n"
    [issue] = py(text)
    assert issue.message == 'line 2 column 19: ")" closes no open bracket'
    # canvas tokens: words, runs of blanks and single punctuation, then the EOS tail
    offsets = [m.span() for m in re.finditer(r"\w+|[ \t]+|\n|[^\w\s]", text)]
    offsets += [(len(text), len(text))] * 4
    pos = positions_to_remask([issue], offsets, len(text), round_no=1, prefix_only=False)
    s, e = issue.span
    assert pos == [k for k, (a, b) in enumerate(offsets) if b > a and a < e and b > s]
    assert [text[offsets[k][0]:offsets[k][1]] for k in pos] == [")"]
    # dropping the re-masked token is one repair that makes the snippet valid
    fixed = "".join(text[a:b] for k, (a, b) in enumerate(offsets) if k not in pos)
    assert py(fixed) == [] and ast.parse(fixed)

    text = "def f(:\n    pass\n"
    [issue] = py(text)
    offsets = [m.span() for m in re.finditer(r"\w+|[ \t]+|\n|[^\w\s]", text)] + [(len(text), len(text))] * 2
    pos = positions_to_remask([issue], offsets, len(text), round_no=1, prefix_only=False)
    assert [text[offsets[k][0]:offsets[k][1]] for k in pos] == ["(", ":"]


# -- never raises ------------------------------------------------------------------------------------------
NASTY = ["", " ", "\n", "\x00", "a\x00b", "\ud800", "x = '\ud800'", "(" * 5000, ")" * 3000,
         "-" * 50000 + "1", "[" * 300 + "]" * 300, "é" * 500 + "(", "\r\n\r", "\t\t x", "𝔘 = (1"]


@pytest.mark.parametrize("lang", ["sql", "python"])
def test_nasty_inputs_never_raise(lang):
    v = CodeSyntaxValidator(lang)
    for text in NASTY:
        check_spans(text, v(text))
    [i] = v(b"SELECT 1")
    assert "expected the decoded text (str)" in i.message and i.span is None


SQL_WORDS = st.sampled_from(["SELECT", "FROM", "WHERE", "JOIN", "LEFT", "ON", "USING", "LIMIT", "OFFSET", ",",
                             "(", ")", "NOT", "NULL", "ISNULL", "GLOB", "COLLATE", "==", "=", "+", "1E5", ":id",
                             "?1", "[x]", "'s''t'", "a", "t.b", "é", ";", "AND", "IS", "*", "--c\n"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=80), st.lists(SQL_WORDS, max_size=25).map(" ".join)))
def test_any_text_gives_issues_with_valid_spans(text):
    for v in (CodeSyntaxValidator("sql"), CodeSyntaxValidator("python")):
        check_spans(text, v(text))
    out = sqlite_rewrite(text)
    assert len(out) == len(text)


# -- repair end to end -------------------------------------------------------------------------------------
def test_repair_fixes_python_lines_generated_with_random_logits(tok4k):
    """Random logits under a grammar whose brackets need not balance: every result called valid is Python
    (ast.parse), every one called invalid is not, and some outputs were fixed by re-masking the span the
    validator named while keeping the text before it."""
    grammar = sg.Grammar("python_line.lark", validators=[CodeSyntaxValidator("python")])
    fixed_keeping_prefix = needed_repair = 0
    for seed in range(12):
        gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed))
        r = gen.generate("one line of python", grammar, max_tokens=16, strict=False, trace=True,
                         max_repair_rounds=2)
        try:
            ast.parse(r.text)
            parses = True
        except SyntaxError:
            parses = False
        assert parses == r.valid, (seed, r.text, r.errors)
        if r.repair_rounds:
            needed_repair += 1
            remasks = [ev for ev in r.trace if ev.kind == "remask"]
            assert len(remasks) == r.repair_rounds
            if r.valid and min(remasks[0].positions) > 0:
                fixed_keeping_prefix += 1
    assert needed_repair >= 3
    assert fixed_keeping_prefix >= 1
