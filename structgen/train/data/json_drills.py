"""JSON extraction drills: short records whose values a text states in another form than the schema wants.

The shipped model copies values well (its copy head) and never learnt to *convert* one: with every other
token of a gold tool call visible, its month slot is a flat guess over the twelve months whatever the
request says (1 right in 60 training-template calls; docs/training-log.md, run 16), and the same holds for a
currency named in words, a time zone, a 12-hour time, a count in words, ``coach`` for ``economy``. The
domain and composed templates state such values once among many copied ones, so the lookup gets little of
the loss. These templates drill it: each record has 1-4 fields from :data:`DRILLS`, every one a conversion
(a month name to its number, a spelled date to ISO 8601, a time with its zone to an ISO date-time, a
currency or a cabin in words to its code, a city to its airport), written in json_composed's layouts with
the field's key or a synonym as its label. The role drills (:data:`PAIRS`) state two values of one kind
in one sentence, in either order (origin and destination, the two currencies, check-in and check-out), so
that only the words around a value say which key it fills.

The drills are not templates of the JSON family's splits (``json_extract.REG``): ``structgen train`` adds
``TrainConfig.drill_examples`` of them to the training rows (:func:`examples`, family ``json``, a seed
stream of their own), so the family's own rows and every held-out figure stay what they were. No held-out
domain's key names are used.
"""

from __future__ import annotations

import datetime
import random
from typing import Any

from . import vocab as V
from .json_composed import LAYOUTS, FieldKind, compose
from .base import Example, Registry, generate
from .json_extract import DATE, ENUM, FAMILY, INT, TIME, _template

REG = Registry(FAMILY)
CODE = {"type": "string", "pattern": "^[A-Z]{3}$"}
DATETIME = {"type": "string", "format": "date-time"}


def _month(rng: random.Random) -> tuple[Any, str]:
    m = rng.randint(1, 12)
    name = V.MONTHS[m - 1]
    return m, rng.choice((name, name, name[:3], name.lower()))


def _date(rng: random.Random) -> tuple[Any, str]:
    d = V.date(rng, 2024, 2028)
    return d.isoformat(), V.date_text(rng, d)


def _clock(rng: random.Random) -> tuple[Any, str]:
    return V.time_of_day(rng, 5, 0, 23)


def _moment(rng: random.Random) -> tuple[Any, str]:
    d = V.date(rng, 2024, 2028)
    t, tt = V.time_of_day(rng, 5, 0, 23)
    off, names = rng.choice(V.ZONES)
    day, zone = V.date_text(rng, d), rng.choice(names)
    text = rng.choice((f"{day} {tt} {zone}", f"{day}, {tt} ({zone})", f"{tt} {zone} on {day}", f"{day} at {tt} {zone}",
                       f"{day} / {tt} {zone}"))
    return f"{d.isoformat()}T{t}:00{off}", text


def _currency(rng: random.Random) -> tuple[Any, str]:
    code, names, symbol = rng.choice(V.CURRENCIES)
    return code, rng.choice(names + ((symbol,) if symbol else ()))


def _airport_text(rng: random.Random, c: V.City) -> str:
    return rng.choice((f"{c.name} ({c.iata})", f"{c.name} ({c.iata})", c.iata, f"{c.name} {c.iata}", c.name))


def _airport(rng: random.Random) -> tuple[Any, str]:
    c = V.city(rng)
    return c.iata, _airport_text(rng, c)


def _count(rng: random.Random) -> tuple[Any, str]:
    n = rng.randint(1, 10)
    return n, V.NUMBER_WORDS[n] if rng.random() < 0.8 else str(n)


def _table(table: dict) -> Any:
    def draw(rng: random.Random) -> tuple[Any, str]:
        value = rng.choice(tuple(table))
        return value, rng.choice(table[value])

    return draw


DRILLS: tuple[FieldKind, ...] = (
    FieldKind(("month", "birth_month", "month_number"), ("month", "in the month of", "month of"), INT(1, 12), _month),
    FieldKind(("check_in", "arrival_date"), ("check-in", "arriving", "arrival"), DATE, _date),
    FieldKind(("check_out", "departure_date"), ("check-out", "leaving", "departure"), DATE, _date),
    FieldKind(("due_date", "deadline"), ("due", "deadline", "due by"), DATE, _date),
    FieldKind(("birthday", "date_of_birth"), ("born", "birthday", "date of birth"), DATE, _date),
    FieldKind(("issued_on", "valid_from"), ("issued", "valid from"), DATE, _date),
    FieldKind(("expires_on", "valid_until"), ("expires", "valid until", "expiry"), DATE, _date),
    FieldKind(("start_time", "opens_at"), ("starts", "opens", "from"), TIME, _clock),
    FieldKind(("end_time", "closes_at"), ("ends", "closes", "until"), TIME, _clock),
    FieldKind(("pickup_time", "arrival_time"), ("pickup", "pick-up at", "arrives"), TIME, _clock),
    FieldKind(("remind_at", "scheduled_for", "timestamp"), ("remind me", "scheduled for", "when", "at"), DATETIME,
              _moment),
    FieldKind(("currency", "currency_code"), ("currency", "paid in", "in"), CODE, _currency),
    FieldKind(("from_currency", "source_currency"), ("from", "convert from", "source currency"), CODE, _currency),
    FieldKind(("to_currency", "target_currency"), ("to", "into", "target currency"), CODE, _currency),
    FieldKind(("origin", "from_airport"), ("from", "origin", "departing", "leaving from", "out of"), CODE, _airport),
    FieldKind(("destination", "to_airport"), ("to", "destination", "arriving in", "going to", "flying into"), CODE,
              _airport),
    FieldKind(("guests", "tickets", "nights"), ("guests", "tickets", "nights", "party of"), INT(1, 20), _count),
    FieldKind(("cabin", "travel_class"), ("cabin", "class", "flying"), ENUM(*V.CABINS), _table(V.CABINS)),
    FieldKind(("unit", "temperature_unit"), ("unit", "in", "temperatures in"), ENUM(*V.UNITS), _table(V.UNITS)),
    FieldKind(("duration_minutes", "length_minutes"), ("duration", "for", "lasting"), INT(5, 480),
              _table(V.DURATIONS)),
)


def _register(layout: str) -> None:
    @_template(f"drill_{layout}", registry=REG)
    def _(rng, f):
        return [compose(rng, f, layout, 1, 4, DRILLS)]


for _layout in LAYOUTS:
    _register(_layout)


# ------------------------------------------------------------------------------------------------ pairs
# Two values of one kind in one sentence, told apart by their role and never by their place: the shipped
# model writes from_currency == to_currency in 5 of 7 currency calls and origin == destination in 2 of 7
# flights (docs/training-log.md, run 16). Each pattern states the pair in one order or the other, and the
# schema lists the keys in either order, so only the words around a value say which key it fills.
# ``{a}`` is the first key's value (origin, source, check-in), ``{b}`` the second's.
PAIRS: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {  # kind -> (key pairs, patterns)
    "airports": (
        (("origin", "destination"), ("from_airport", "to_airport"), ("departure_airport", "arrival_airport")),
        ("to {b} from {a}", "from {a} to {b}", "{b}, departing {a}", "{b} (leaving from {a})", "{a} -> {b}",
         "going to {b}, starting at {a}", "destination {b}; origin {a}", "arrive {b}, depart {a}",
         "I live near {a} and want to visit {b}", "{b} is where I need to be. I start in {a}",
         "the trip starts in {a} and ends in {b}", "into {b} out of {a}")),
    "currencies": (
        (("from_currency", "to_currency"), ("source_currency", "target_currency"), ("have_currency", "want_currency")),
        ("{amount} into {b}", "{b} for {amount}", "how many {b} is {amount}", "I want {b}; I hold {amount}",
         "{amount} -> {b}", "swap {amount} for {b}", "{b} please, paying {amount}", "from {a} to {b}: {number}",
         "to {b} from {a}, {number} of them", "turn {number} {a} into {b}")),
    "dates": (
        (("check_in", "check_out"), ("arrival_date", "departure_date"), ("stay_start", "stay_end")),
        ("from {a} until {b}", "until {b}, starting {a}", "out on {b}, in on {a}", "{a} to {b}",
         "leaving {b} (arriving {a})", "staying {a} - {b}", "the last day is {b} and the first {a}")),
}


def _pair_values(rng: random.Random, kind: str) -> tuple[Any, Any, dict[str, str], dict]:
    """The pair's two values, the texts of the pattern's slots, and the schema of one value."""
    if kind == "airports":
        a, b = V.two_cities(rng)
        return a.iata, b.iata, {"a": _airport_text(rng, a), "b": _airport_text(rng, b)}, CODE
    if kind == "currencies":
        (a, a_names, _), (b, b_names, _) = rng.sample(V.CURRENCIES, 2)
        amount = V.amount(rng, 1, 5000)
        return a, b, {"a": rng.choice(a_names), "b": rng.choice(b_names), "amount": V.money_text(rng, amount, a),
                      "number": f"{amount:g}"}, CODE
    first = V.date(rng, 2024, 2028)
    last = first + datetime.timedelta(days=rng.randint(1, 21))
    return (first.isoformat(), last.isoformat(),
            {"a": V.date_text(rng, first), "b": V.date_text(rng, last)}, DATE)


@_template("drill_roles", registry=REG)
def _(rng, f):
    kind = rng.choice(tuple(PAIRS))
    key_pairs, patterns = PAIRS[kind]
    ka, kb = rng.choice(key_pairs)
    a, b, texts, schema = _pair_values(rng, kind)
    fields = [("a", ka, a), ("b", kb, b)]
    if rng.random() < 0.5:
        fields.reverse()  # the schema's order is not the pair's
    for slot, key, value in fields:
        f.add(slot, (key,), schema, value, texts[slot])
    f.slots.update((slot, text) for slot, text in texts.items() if slot not in ("a", "b"))  # a currency's amount
    pattern = rng.choice(patterns)
    if "{a}" not in pattern and "amount" in texts:  # the amount's symbol or code states the source currency
        f.slots["a"] = texts["amount"]  # (read only as the value's source: the pattern has no {a})
    return [pattern]


def examples(n: int, seed: int = 0) -> list[Example]:
    """``n`` drill records (family ``json``, training only), deterministic in ``seed``."""
    return generate(FAMILY, "train", REG.train, n, seed, stream="-drill")
