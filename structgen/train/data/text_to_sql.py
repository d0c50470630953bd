"""Training data, family "sql": plain-English questions over the shop database and their gold SELECT.

Owns the question templates (train and held-out) and :func:`examples`; the values they draw from the built
database (``examples/shop/build.py``: countries, cities, categories, products, customers, statuses, years)
are ``shop_values``'s. Every gold query is written in the canonical form of ``sg.Sql(shop)``
(``structgen/sql/grammar.py``: UPPERCASE keywords, single spaces, ``AS`` aliases, the canonical table
aliases c/p/o/oi, qualified names in joins), so the grammar constraint accepts it token by token, the SQL
validators pass it and it runs. Values are re-drawn (a few tries) until the query returns rows, so the
data teaches questions that have answers.

A template is ``(id, sql, questions, slots)``: ``questions`` are paraphrases with ``{slot}`` fields (one is
drawn per example and phrased by ``base.say``: ``[a|b]`` alternatives, casing and punctuation noise),
``slots`` name the value samplers below. Held-out templates are question *shapes*
never seen in training ("which country has the most customers" beside the train shape "count customers
per country"), not only new values. Beside the fixed templates, the training split has one composed
template per source and shape of ``sql_composed`` (queries assembled clause by clause), and with
``shapes=2`` those of ``sql_composed_more`` (HAVING, anti-joins, shares...); a composed query is re-drawn
when its :func:`skeleton` is a held-out template's, so the held-out queries stay unseen too.
"""

from __future__ import annotations

import functools
import random
import re
from typing import Any, NamedTuple

from structgen.errors import ConfigError, StructgenError

from . import sql_composed, sql_composed_more
from .base import Example, Template, check_split, generate, say
from .shop_values import draw_values, facts as shop_facts, has_rows, shop_database, sql_spec

__all__ = ["TRAIN_TEMPLATES", "HELDOUT_TEMPLATES", "examples", "shop_database", "sql_spec"]

FAMILY = "sql"
_C_O = "customers AS c JOIN orders AS o ON o.customer_id = c.id"
_P_OI = "products AS p JOIN order_items AS oi ON oi.product_id = p.id"
_C_O_OI_P = f"{_C_O} JOIN order_items AS oi ON oi.order_id = o.id JOIN products AS p ON p.id = oi.product_id"


class T(NamedTuple):
    id: str
    sql: str
    questions: tuple[str, ...]
    slots: tuple[str, ...] = ()


TRAIN: tuple[T, ...] = (
    T("cust_country", "SELECT name FROM customers WHERE country = '{country}'",
      ("[List|Show|Give me] the customers from {country}.", "Which customers live in {country}?",
       "[Show me|List|What are] the names of all customers in {country}[?|.]",
       "Who are our customers based in {country}?"), ("country",)),
    T("count_cust_country", "SELECT COUNT(*) FROM customers WHERE country = '{country}'",
      ("How many customers [are from|come from|live in] {country}?", "Count the customers in {country}.",
       "What is the number of customers located in {country}?"), ("country",)),
    T("cust_city", "SELECT name FROM customers WHERE city = '{city}'",
      ("Which customers live in {city}?", "[List|Show] [the |]customers whose city is {city}.", "Customers in {city}?"),
      ("city",)),
    T("products_category", "SELECT name, price FROM products WHERE category = '{category}'",
      ("Show the names and prices of {cat} products.", ("List every product in the {category} category with "
       "its price."), "What {cat} products do we sell, and at what price?"), ("category",)),
    T("price_above", "SELECT name, price FROM products WHERE price > {price} ORDER BY price DESC",
      ("Which products cost more than {price}[| dollars]?", "List products priced above {price}, most expensive first.",
       "Show products with a price over {price} dollars, sorted by price from high to low."), ("price",)),
    T("price_between", "SELECT name FROM products WHERE price BETWEEN {lo} AND {hi}",
      ("Which products cost between {lo} and {hi}?", "List the products priced from {lo} to {hi}.",
       "Find products with a price in the range {lo}-{hi}."), ("price_range",)),
    T("count_status", "SELECT COUNT(*) FROM orders WHERE status = '{status}'",
      ("How many orders are [|currently ]{status}?", "Count the {status} orders.",
       "What is the number of orders with status {status}?"), ("status",)),
    T("orders_dates", "SELECT id, order_date FROM orders WHERE order_date BETWEEN '{d1}' AND '{d2}'",
      ("List the orders placed between {d1_text} and {d2_text}.", ("Which orders were made from {d1_text} "
       "to {d2_text}?"), "Show order ids and dates for orders between {d1_text} and {d2_text}."), ("date_range",)),
    T("count_orders_year", "SELECT COUNT(*) FROM orders WHERE strftime('%Y', order_date) = '{year}'",
      ("How many orders were placed in {year}?", "[Count|Tally] the orders from {year}.",
       "What was the number of orders in the year {year}?"), ("year",)),
    T("cust_per_country", "SELECT country, COUNT(*) AS n FROM customers GROUP BY country ORDER BY n DESC",
      ("Count customers per country.", "How many customers are there in each country, largest first?",
       "Give the number of customers for every country, sorted by count descending."), ()),
    T("avg_price_category", "SELECT category, AVG(price) AS avg_price FROM products GROUP BY category",
      ("What is the average price in each category?", "Show the average product price per category.",
       "Average price by product category."), ()),
    T("orders_per_status", "SELECT status, COUNT(*) AS n FROM orders GROUP BY status",
      ("How many orders are there per status?", "Count orders by status.",
       "Break down the number of orders by their status."), ()),
    T("orders_per_year", "SELECT strftime('%Y', order_date) AS yr, COUNT(*) AS n FROM orders "
      "GROUP BY strftime('%Y', order_date) ORDER BY yr",
      ("How many orders were placed each year?", "Count orders per year.", "Show the yearly number of orders."), ()),
    T("top_expensive", "SELECT name, price FROM products ORDER BY price DESC LIMIT {n}",
      ("What are the {n} most [expensive|costly] products?", "List the top {n} products by price.",
       "Show the {n} priciest items we sell."), ("n",)),
    T("cheapest_category", "SELECT name, price FROM products WHERE category = '{category}' ORDER BY price LIMIT {n}",
      ("What are the {n} cheapest {cat} products?", "List the {n} lowest-priced items in {category}.",
       "Show {n} {cat} products with the lowest prices."), ("category", "n")),
    T("name_prefix", "SELECT name FROM customers WHERE name LIKE '{letter}%'",
      ("Which customers have a name starting with {letter}?", ("List customers whose names begin with "
       "the letter {letter}."), "Find all customers with names that start with '{letter}'."), ("letter",)),
    T("product_word", "SELECT name FROM products WHERE name LIKE '%{word}%'",
      ("Which products have \"{word}\" in their name?", "Find products whose name contains {word}.",
       "List all products with the word {word} in the name."), ("word",)),
    T("cities_country", "SELECT DISTINCT city FROM customers WHERE country = '{country}'",
      ("Which cities in {country} do our customers live in?", "List the distinct customer cities in {country}.",
       "In what cities of {country} do we have customers?"), ("country",)),
    T("orders_of_customer", f"SELECT o.id, o.order_date FROM {_C_O} WHERE c.name = '{{customer}}'",
      ("Show the orders placed by {customer}.", "List the order ids and dates of {customer}.",
       "When did {customer} place orders?"), ("customer",)),
    T("orders_per_cust_country", f"SELECT c.country, COUNT(*) AS n FROM {_C_O} GROUP BY c.country",
      ("How many orders came from each [country|customer country]?", "Count orders by customer country.",
       "Number of orders per country of the customer."), ()),
    T("units_category", f"SELECT SUM(oi.quantity) FROM {_P_OI} WHERE p.category = '{{category}}'",
      ("How many units of {cat} products were sold?", ("What is the total quantity sold in the {category} "
       "category?"), "Total number of {cat} items ordered?"), ("category",)),
    T("revenue_category", f"SELECT p.category, SUM(oi.quantity * p.price) AS revenue FROM {_P_OI} "
      "GROUP BY p.category",
      ("What is the revenue per category?", "Show total sales value for each product category.",
       "How much money did each category bring in?"), ()),
    T("buyers_of_product", f"SELECT DISTINCT c.name FROM {_C_O_OI_P} WHERE p.name = '{{product}}'",
      ("Which customers [bought|purchased] the {product}?", "Who has ordered {product}?",
       "List the customers that purchased \"{product}\"."), ("product",)),
    T("revenue_country", f"SELECT SUM(oi.quantity * p.price) FROM {_C_O_OI_P} WHERE c.country = '{{country}}'",
      ("What is the total [revenue|sales amount] from customers in {country}?",
       "How much have customers from {country} spent in total?", "Total sales to {country}?"), ("country",)),
    T("never_ordered", "SELECT c.name FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id "
      "WHERE o.id IS NULL AND c.country = '{country}'",
      ("Which customers from {country} have never placed an order?", ("List {country} customers with no "
       "orders."), "Who in {country} has never ordered anything?"), ("country",)),
    T("cust_with_status", "SELECT name FROM customers WHERE id IN (SELECT customer_id FROM orders "
      "WHERE status = '{status}')",
      ("Which customers have a {status} order?", ("List customers who have at least one order that is "
       "{status}."), "Find the customers with {status} orders."), ("status",)),
    T("above_avg_price", "SELECT name, price FROM products WHERE category = '{category}' AND price > "
      "(SELECT AVG(price) FROM products)",
      ("Which {cat} products cost more than the average product?", ("List {category} items priced above "
       "the overall average price."), "Find {cat} products that are more expensive than average."),
      ("category",)),
    T("ordered_in_year", "SELECT c.name FROM customers AS c WHERE EXISTS (SELECT 1 FROM orders AS o "
      "WHERE o.customer_id = c.id AND strftime('%Y', o.order_date) = '{year}')",
      ("Which customers [placed an order|ordered] in {year}?", "List customers who ordered something during {year}.",
       "Who bought from us in {year}?"), ("year",)),
    T("countries_having", "SELECT country FROM customers GROUP BY country HAVING COUNT(*) > {k}",
      ("Which countries have more than {k} [customers|clients]?", "List countries with over {k} customers.",
       "In which countries do we have more than {k} customers?"), ("k_country",)),
    T("price_band", "SELECT name, CASE WHEN price > {price} THEN 'expensive' ELSE 'cheap' END AS band "
      "FROM products",
      ("Label every product as expensive if it costs more than {price}, otherwise cheap.", ("Show each "
       "product with a band: 'expensive' above {price}, 'cheap' otherwise.")), ("price",)),
    T("items_in_order", "SELECT SUM(quantity) FROM order_items WHERE order_id = {order}",
      ("How many [items|units] are in order {order}?", "What is the total quantity in order #{order}?",
       "Count the units in order number {order}."), ("order",)),
    T("signup_year", "SELECT name FROM customers WHERE strftime('%Y', signup_date) = '{signup_year}'",
      ("Which customers signed up in {signup_year}?", "List the customers who joined in {signup_year}.",
       "Who registered during {signup_year}?"), ("signup_year",)),
    T("min_max_category", "SELECT MIN(price), MAX(price) FROM products WHERE category = '{category}'",
      ("What are the lowest and highest prices in {category}?", ("Give the cheapest and the most "
       "expensive price among {cat} products."), "Price range of the {category} category?"), ("category",)),
    T("top_customers", f"SELECT c.name, COUNT(o.id) AS n FROM {_C_O} GROUP BY c.id ORDER BY n DESC LIMIT {{n}}",
      ("Who are the top {n} customers by [number of orders|order count]?", ("List the {n} customers with the most "
       "orders."), "Show the {n} most frequent buyers and their order counts."), ("n",)),
    T("cust_not_in", "SELECT name FROM customers WHERE country NOT IN ('{country}', '{country2}')",
      ("List customers who are not from {country} or {country2}.", ("Which customers live outside "
       "{country} and {country2}?")), ("country", "country2")),
    T("status_after", "SELECT id FROM orders WHERE status = '{status}' AND order_date > '{d1}'",
      ("Which {status} orders were placed after {d1_text}?", ("List ids of orders that are {status} and "
       "dated later than {d1_text}.")), ("status", "date_range")),
    T("distinct_buyers_status", "SELECT COUNT(DISTINCT customer_id) FROM orders WHERE status = '{status}'",
      ("How many different customers have {status} orders?", ("Count the distinct customers with an order "
       "that is {status}.")), ("status",)),
    T("avg_qty_product", f"SELECT AVG(oi.quantity) FROM {_P_OI} WHERE p.name = '{{product}}'",
      ("On average, how many units of {product} are bought per order?", ("What is the average quantity "
       "ordered of the {product}?")), ("product",)),
    T("categories_avg_having", "SELECT category FROM products GROUP BY category HAVING AVG(price) > {price}",
      ("Which categories have an average price above {price}?", ("List the product categories whose "
       "mean price exceeds {price}.")), ("price",)),
)

HELDOUT: tuple[T, ...] = (
    T("most_customers_country", "SELECT country FROM customers GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1",
      ("Which country has the most customers?", "In which country do we have the largest customer base?"), ()),
    T("highest_avg_category", "SELECT category FROM products GROUP BY category ORDER BY AVG(price) DESC LIMIT 1",
      ("Which category has the highest average price?", "What is the most expensive category on average?"), ()),
    T("latest_order_country", f"SELECT c.name FROM {_C_O} WHERE c.country = '{{country}}' "
      "ORDER BY o.order_date DESC LIMIT 1",
      ("Who placed the most recent order from {country}?", ("Name the customer in {country} who ordered "
       "last.")), ("country",)),
    T("not_sold_in_country", "SELECT name FROM products WHERE id NOT IN (SELECT oi.product_id FROM order_items "
      "AS oi JOIN orders AS o ON o.id = oi.order_id JOIN customers AS c ON c.id = o.customer_id "
      "WHERE c.country = '{country}')",
      ("Which products has nobody in {country} ever bought?", ("What products were never ordered by "
       "customers from {country}?")), ("country",)),
    T("cancel_share_year", "SELECT AVG(CASE WHEN status = 'cancelled' THEN 1.0 ELSE 0 END) FROM orders "
      "WHERE strftime('%Y', order_date) = '{year}'",
      ("What fraction of the orders in {year} were cancelled?", ("What share of {year}'s orders ended up "
       "cancelled?")), ("year",)),
    T("cheap_per_category", "SELECT category, COUNT(*) AS n FROM products WHERE price < {price} GROUP BY category",
      ("For each category, how many products cost less than {price}?", ("Per category, count the items "
       "under {price}.")), ("price",)),
    T("months_of_year", "SELECT strftime('%m', order_date) AS mon, COUNT(*) AS n FROM orders WHERE "
      "strftime('%Y', order_date) = '{year}' GROUP BY strftime('%m', order_date)",
      ("Give me the month-by-month order counts for {year}.", ("How did orders in {year} spread over the "
       "months?")), ("year",)),
    T("first_order_of", f"SELECT MIN(o.order_date) FROM {_C_O} WHERE c.name = '{{customer}}'",
      ("When did {customer} place their first order?", ("What was the date of {customer}'s earliest "
       "order?")), ("customer",)),
    T("price_gap_category", "SELECT MAX(price) - MIN(price) FROM products WHERE category = '{category}'",
      ("How big is the gap between the cheapest and the dearest {cat} product?", ("By how much does the "
       "priciest {cat} item exceed the cheapest one?")), ("category",)),
    T("frequent_customers", f"SELECT c.name FROM {_C_O} GROUP BY c.id HAVING COUNT(*) > {{k}}",
      ("Which customers have placed more than {k} orders?", "Who has ordered from us over {k} times?"), ("k",)),
    T("best_seller_category", f"SELECT p.name FROM {_P_OI} WHERE p.category = '{{category}}' GROUP BY p.id "
      "ORDER BY SUM(oi.quantity) DESC LIMIT 1",
      ("What is the best-selling {cat} product by units?", "Which {cat} item sold the most units?"),
      ("category",)),
    T("big_orders", "SELECT order_id FROM order_items GROUP BY order_id HAVING COUNT(*) > {k}",
      ("Which orders contain more than {k} different products?", ("Find orders with over {k} distinct "
       "items in them.")), ("k",)),
)




def _render(t: T, rng: random.Random, facts: dict, tries: int = 8) -> tuple[str, str]:
    """(question, gold SQL) of template ``t``; values re-drawn up to ``tries`` times until rows come back."""
    for _ in range(tries):
        vals = draw_values(rng, facts, t.slots)
        sql = sql_composed.filled(t.sql, vals)
        if has_rows(sql):
            break
    return say(rng, t.questions, vals), sql


def skeleton(sql: str) -> str:
    """``sql`` with its string and number literals blanked: the query *template* it was filled from."""
    return re.sub(r"\b\d+(?:\.\d+)?\b", "0", re.sub(r"'(?:[^']|'')*'", "'?'", sql))


class _AnyValue(dict):
    def __missing__(self, key: str) -> str:
        return "0"


@functools.lru_cache(maxsize=1)
def _heldout_skeletons() -> frozenset[str]:
    """The skeletons of the held-out templates' queries (every slot filled with ``0``)."""
    return frozenset(skeleton(t.sql.format_map(_AnyValue())) for t in HELDOUT)


def _composed(source: Any, shape: str, module: Any = sql_composed, prefix: str = "composed") -> Template:
    """A training template whose queries ``module`` (``sql_composed``, or ``sql_composed_more``: version 2)
    assembles per example; never one whose query has the skeleton of a held-out template (so the held-out
    *queries*, not only their sentences, stay unseen), and always one that returns rows."""
    def render(rng: random.Random) -> tuple[str, str, str, Any]:
        facts = shop_facts()
        for _ in range(50):
            sql, pattern, slots = module.compose(rng, source, shape)
            vals = draw_values(rng, facts, slots)
            query = sql_composed.filled(sql, vals)
            if skeleton(query) not in _heldout_skeletons() and has_rows(query):
                return say(rng, pattern, vals), query, query, sql_spec()
        raise StructgenError(f"composed SQL template {prefix}.{source.name}.{shape} found no query with rows in 50 "
                             "tries")

    return Template(f"{prefix}.{source.name}.{shape}", FAMILY, "train", render)


def _template(t: T, split: str) -> Template:
    def render(rng: random.Random) -> tuple[str, str, str, Any]:
        question, sql = _render(t, rng, shop_facts())
        return question, sql, sql, sql_spec()

    return Template(t.id, FAMILY, split, render)


_TEMPLATES = {"train": tuple(_template(t, "train") for t in TRAIN)
             + tuple(_composed(src, shape) for src in sql_composed.SOURCES for shape in sql_composed.SHAPES),
              "heldout": tuple(_template(t, "heldout") for t in HELDOUT)}
#: the templates ``shapes=2`` adds to the training split (``sql_composed_more``)
_MORE = tuple(_composed(src, shape, sql_composed_more, "composed2") for src in sql_composed_more.SOURCES
              for shape in sql_composed_more.shapes_of(src))
#: the versions of the composed training data (``TrainConfig.sql_shapes``)
SHAPE_VERSIONS = (1, 2)


TRAIN_TEMPLATES: list[str] = [t.id for t in _TEMPLATES["train"]]
HELDOUT_TEMPLATES: list[str] = [t.id for t in _TEMPLATES["heldout"]]


def examples(split: str, n: int, seed: int = 0, shapes: int = 1) -> list[Example]:
    """``n`` examples of ``split`` ("train" or "heldout"), the same for the same seed (example ``i`` depends
    only on the split, seed and ``i``); templates are used round-robin in a seeded order, so every template
    appears once ``n`` reaches their number. Prompt: the question; target and gold: the SQL. ``shapes=2``
    adds version 2's composed templates (``sql_composed_more``) to the training split; the held-out split is
    the same for every version."""
    check_split(split)
    if shapes not in SHAPE_VERSIONS:
        raise ConfigError(f"sql shapes version {shapes!r} does not exist; use one of {SHAPE_VERSIONS}")
    templates = _TEMPLATES[split] + (_MORE if shapes == 2 and split == "train" else ())
    return generate(FAMILY, split, templates, n, seed)
