"""JSON extraction, composed: records of random fields from a bank, written in random text layouts.

The domain templates (``json_templates.py``) teach 26 fixed domains. Held-out schemas have key names and
text shapes never seen, and a model trained on the domains alone fits them and then stops generalising:
its held-out loss rises while its training loss still falls (docs/training-log.md, run 5). These templates
teach the skill itself — find, in a text never seen, the value each schema key names: each example
draws 2-7 kinds of field from :data:`FIELDS` (key names, the words a text uses for them, a schema and a
value with its surface form), lists them in the schema in one order and in the text in another, names
them in the text by their key or by a synonym, leaves some optional fields unstated, and writes the text
in one of the :data:`LAYOUTS` (label lines, bullets, ``key=value`` pairs, a header row over a value row,
prose). The fields of the held-out domains (vehicles, appointments, matches, courses, pets, quakes) are
not in the bank, so held-out stays held out.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import vocab as V
from .json_extract import BOOL, DATE, EMAIL, ENUM, INT, NUM, STR, STRS, TIME, Fields, _template

Draw = Callable[[random.Random], tuple[Any, str]]  # -> (value, how a text states it)


@dataclass(frozen=True)
class FieldKind:
    """One kind of field: its key names (snake_case), the words a text may call it, its schema, a draw."""

    keys: tuple[str, ...]
    labels: tuple[str, ...]
    schema: dict
    draw: Draw


def _same(make: Callable[[random.Random], str]) -> Draw:
    """A draw whose text is the value itself."""
    def draw(rng: random.Random) -> tuple[Any, str]:
        v = make(rng)
        return v, v

    return draw


def _pick(values: tuple) -> Draw:
    return _same(lambda rng: rng.choice(values))


def _int(lo: int, hi: int, unit: tuple[str, ...] = ("",), commas: bool = False) -> Draw:
    def draw(rng: random.Random) -> tuple[Any, str]:
        n = rng.randint(lo, hi)
        text = f"{n:,}" if commas and rng.random() < 0.5 else V.count_text(rng, n)
        return n, text + rng.choice(unit)

    return draw


def _decimal(lo: float, hi: float, units: tuple[str, ...]) -> Draw:
    def draw(rng: random.Random) -> tuple[Any, str]:
        x = round(rng.uniform(lo, hi), rng.choice((0, 1, 1, 2)))
        x = int(x) if x == int(x) else x
        return x, f"{x}{rng.choice(units)}"

    return draw


def _money(rng: random.Random) -> tuple[Any, str]:
    amt = V.amount(rng, 2, 4000)
    return amt, V.money_text(rng, amt, rng.choice(("EUR", "USD", "GBP", "CHF", "SEK")))


def _bool(rng: random.Random) -> tuple[Any, str]:
    b = rng.random() < 0.5
    return b, rng.choice((("yes", "no"), ("true", "false"), ("Yes", "No"), ("y", "n")))[0 if b else 1]


def _date(rng: random.Random) -> tuple[Any, str]:
    d = V.date(rng, 2024, 2027)
    return d.isoformat(), V.date_text(rng, d)


def _ref(prefix: tuple[str, ...], digits: int) -> Draw:
    return _same(lambda rng: f"{rng.choice(prefix)}-{rng.randrange(10 ** (digits - 1), 10 ** digits)}")


def _tags(rng: random.Random) -> tuple[Any, str]:
    tags = rng.sample(("urgent", "vip", "new", "backend", "billing", "mobile", "beta", "eu", "internal", "travel",
                       "q3", "hardware", "legal", "design"), rng.randint(1, 3))
    return tags, V.join_list(rng, tags) if rng.random() < 0.5 else ", ".join(tags)


# values a text states as they are (wrapped by _same in FIELDS)
def _address(rng: random.Random) -> str:
    return f"{rng.randint(1, 240)} {rng.choice(V.STREETS)}"


def _username(rng: random.Random) -> str:
    return V.ascii_slug(V.person(rng)).replace(".", rng.choice(("_", ".", ""))) + str(rng.randint(1, 99))


def _website(rng: random.Random) -> str:
    return f"https://{V.ascii_slug(rng.choice(V.COMPANIES)).replace('.', '-')}.example.com"


def _phone(rng: random.Random) -> str:
    return f"+{rng.randint(1, 49)} {rng.randint(10, 999)} {rng.randint(100, 999)} {rng.randint(100, 9999)}"


def _product(rng: random.Random) -> str:
    brand, kind = rng.choice(V.PRODUCTS)
    return f"{brand} {kind}" if rng.random() < 0.5 else brand


def _clock(rng: random.Random) -> tuple[Any, str]:
    return V.time_of_day(rng, 5, 0, 23)


FIELDS: tuple[FieldKind, ...] = (
    FieldKind(("name", "full_name", "contact_name"), ("name", "full name", "contact"), STR,
              _same(V.person)),
    FieldKind(("first_name", "given_name"), ("first name", "given name"), STR, _pick(V.FIRST_NAMES)),
    FieldKind(("last_name", "surname", "family_name"), ("last name", "surname", "family name"), STR,
              _pick(V.LAST_NAMES)),
    FieldKind(("city", "town", "location"), ("city", "town", "location", "based in"), STR,
              _same(lambda rng: V.city(rng).name)),
    FieldKind(("country", "country_name"), ("country",), STR,
              _same(lambda rng: V.city(rng).country)),
    FieldKind(("company", "employer", "organization"), ("company", "employer", "organisation", "firm"), STR,
              _pick(V.COMPANIES)),
    FieldKind(("product", "item", "product_name"), ("product", "item", "article"), STR, _same(_product)),
    FieldKind(("color", "colour"), ("color", "colour"), STR, _pick(V.COLORS)),
    FieldKind(("role", "job_title", "position"), ("role", "job title", "position"), STR, _pick(V.JOB_TITLES)),
    FieldKind(("address", "street_address"), ("address", "street"), STR, _same(_address)),
    FieldKind(("skill", "main_skill"), ("skill", "main skill", "expertise"), STR, _pick(V.SKILLS)),
    FieldKind(("username", "handle", "login"), ("username", "handle", "login", "user"), STR, _same(_username)),
    FieldKind(("order_id", "reference", "order_ref"), ("order", "reference", "ref", "order number"), STR,
              _ref(("ORD", "PO", "REF"), 5)),
    FieldKind(("ticket", "ticket_id", "case_id"), ("ticket", "case", "issue"), STR, _ref(("TCK", "INC", "CASE"), 4)),
    FieldKind(("department", "team"), ("department", "team", "dept"), STR,
              _pick(("Finance", "Sales", "Engineering", "Support", "Marketing", "Legal", "Operations"))),
    FieldKind(("language", "preferred_language"), ("language", "speaks"), STR,
              _pick(("English", "Portuguese", "German", "Polish", "Japanese", "Swedish", "French", "Turkish"))),
    FieldKind(("website", "url", "homepage"), ("website", "url", "site", "web"), STR, _same(_website)),
    FieldKind(("phone", "phone_number", "mobile"), ("phone", "tel", "mobile", "phone number"), STR, _same(_phone)),
    FieldKind(("subject", "topic"), ("subject", "topic", "re"), STR, _pick(V.TOPICS)),
    FieldKind(("email", "email_address", "contact_email"), ("email", "e-mail", "mail"), EMAIL, _same(V.email)),
    FieldKind(("age", "age_years"), ("age", "aged"), INT(0, 130), _int(18, 90, ("", "", " years"))),
    FieldKind(("quantity", "qty", "units"), ("quantity", "qty", "units", "pieces"), INT(1, 10000), _int(1, 500)),
    FieldKind(("year", "established", "since"), ("year", "established", "since", "est."), INT(1800, 2030),
              _int(1950, 2026)),
    FieldKind(("rooms", "bedrooms"), ("rooms", "bedrooms", "beds"), INT(0, 50), _int(1, 8)),
    FieldKind(("floor", "level"), ("floor", "level", "storey"), INT(-5, 200), _int(0, 40)),
    FieldKind(("seats", "seat_count"), ("seats", "places"), INT(1, 100000), _int(2, 90000, commas=True)),
    FieldKind(("pages", "page_count"), ("pages", "page count", "length"), INT(1, 5000), _int(40, 1200, ("", " pages"))),
    FieldKind(("rating", "stars", "score"), ("rating", "stars", "score"), INT(1, 5), _int(1, 5, ("", "/5", " stars"))),
    FieldKind(("duration_minutes", "minutes", "length_min"), ("duration", "minutes", "length"), INT(1, 1440),
              _int(5, 240, (" min", " minutes", ""))),
    FieldKind(("price", "cost", "total"), ("price", "cost", "total", "amount"), NUM, _money),
    FieldKind(("weight_kg", "weight"), ("weight", "weighs"), NUM, _decimal(0.2, 140, (" kg", "kg", ""))),
    FieldKind(("distance_km", "distance"), ("distance", "km", "route length"), NUM, _decimal(0.5, 900, (" km", "km", ""))),
    FieldKind(("discount_percent", "discount"), ("discount", "off", "reduction"), NUM, _decimal(1, 70, ("%", " %", " percent"))),
    FieldKind(("active", "is_active", "enabled"), ("active", "enabled"), BOOL, _bool),
    FieldKind(("paid", "is_paid"), ("paid", "payment received"), BOOL, _bool),
    FieldKind(("remote", "is_remote"), ("remote", "works remotely"), BOOL, _bool),
    FieldKind(("in_stock", "available"), ("in stock", "available", "availability"), BOOL, _bool),
    FieldKind(("status", "state"), ("status", "state"), ENUM("open", "closed", "pending", "resolved"),
              _pick(("open", "closed", "pending", "resolved"))),
    FieldKind(("priority", "urgency"), ("priority", "urgency"), ENUM("low", "medium", "high", "urgent"),
              _pick(("low", "medium", "high", "urgent"))),
    FieldKind(("size",), ("size",), ENUM("XS", "S", "M", "L", "XL"), _pick(("XS", "S", "M", "L", "XL"))),
    FieldKind(("payment_method", "paid_with"), ("payment", "paid with", "payment method"),
              ENUM("card", "cash", "transfer", "invoice"), _pick(("card", "cash", "transfer", "invoice"))),
    FieldKind(("date", "due_date", "deadline", "delivery_date"), ("date", "due", "deadline", "delivery"), DATE,
              _date),
    FieldKind(("start_time", "time", "arrival_time"), ("time", "at", "arrival", "starts at"), TIME, _clock),
    FieldKind(("tags", "labels", "keywords"), ("tags", "labels", "keywords"), STRS, _tags),
)


def _words(key: str) -> str:
    """``"deliveryDate"`` / ``"delivery_date"`` -> ``"delivery date"``."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", key).replace("_", " ").lower()


def _label(rng: random.Random, key: str, kind: FieldKind) -> str:
    label = _words(key) if rng.random() < 0.5 else rng.choice(kind.labels)
    return label.capitalize() if rng.random() < 0.5 else label


def _lines(rng, items):
    sep = rng.choice((": ", ": ", " - ", " = "))
    bullet = rng.choice(("", "", "- ", "* ", "• "))
    return "\n".join(f"{bullet}{label}{sep}{slot}" for label, slot, _ in items)


def _pairs(rng, items):
    sep, join = rng.choice((("=", "; "), ("=", ", "), (": ", " | "), (": ", "; "), (" ", ", ")))
    return join.join(f"{label}{sep}{slot}" for label, slot, _ in items)


def _table(rng, items):
    join = rng.choice((" | ", "\t", " ; "))  # not commas: phrasing noise may drop them
    return join.join(label for label, _, _ in items) + "\n" + join.join(slot for _, slot, _ in items)


_FRAMES = ("The {l} is {v}.", "{L}: {v}.", "{L} is {v}.", "It has {l} {v}.", "{v} ({l}).",
           "With {l} {v}.", "{L} - {v}.", "And the {l}: {v}.")


def _prose(rng, items):
    return " ".join(rng.choice(_FRAMES).format(l=label.lower(), L=label[:1].upper() + label[1:], v=slot)
                    for label, slot, _ in items)


def _inline(rng, items):
    head = rng.choice(("Record", "Entry", "Details", "Note", "Info", "Data"))
    return f"{head}: " + ", ".join(f"{label} {slot}" for label, slot, _ in items)


LAYOUTS: dict[str, Callable[[random.Random, list[tuple[str, str, str]]], str]] = {
    "lines": _lines, "pairs": _pairs, "table": _table, "prose": _prose, "inline": _inline,
}


def compose(rng: random.Random, f: Fields, layout: str, lo: int, hi: int,
            bank: tuple[FieldKind, ...] = FIELDS) -> str:
    """Fill ``f`` with ``lo..hi`` random fields of ``bank`` and return the pattern (``base.say``'s language,
    values as ``{slot}`` placeholders, so phrasing noise never touches a value) stating them in ``layout``."""
    kinds = rng.sample(bank, rng.randint(lo, hi))
    stated: list[tuple[str, str, str]] = []  # (label, {slot} placeholder, the value's text)
    for i, kind in enumerate(kinds):
        value, text = kind.draw(rng)
        p = None if rng.random() < 0.7 else 0.5  # 30% optional, half of those left unstated
        before = set(f.props)
        if f.add(f"f{i}", kind.keys, kind.schema, value, text, p=p) is not None:
            key = next(k for k in f.props if k not in before)
            stated.append((_label(rng, key, kind), f"{{f{i}}}", text))
    if not stated:  # every field optional and unstated: the text still says something
        return rng.choice(("Nothing else to add.", "No details given.", "n/a"))
    if rng.random() < 0.6:
        rng.shuffle(stated)  # the text's order is not the schema's
    return LAYOUTS[layout](rng, stated)


def _register(layout: str, size: str, lo: int, hi: int) -> None:
    @_template(f"composed_{layout}_{size}")
    def _(rng, f):
        return [compose(rng, f, layout, lo, hi)]


for _layout in LAYOUTS:
    _register(_layout, "few", 2, 4)
    _register(_layout, "many", 4, 7)
