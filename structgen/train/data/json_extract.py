"""JSON extraction: a sentence or short paragraph plus a schema with varied key names -> the object.

Each template is a domain (person, product, order, booking, job posting ...) with several phrasings.
Key names vary per example (``name``/``full_name``/``customer``, snake_case or camelCase), types cover
strings, bounded integers, numbers, booleans, enums, dates, times, arrays and nested objects, and optional
fields the text does not state are left out of the target. Held-out templates are other domains and other
text shapes (a dialogue, a signature block, a classified ad, a news brief) never seen in training.
The training split also has records composed at random from a bank of fields (``json_composed.py``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from structgen.spec import JsonSchema, _check_schema

from . import vocab as V
from .base import Registry, Template, ValueSource, camel, canonical_json, generate, say

FAMILY = "json"
REG = Registry(FAMILY)

STR = {"type": "string"}
NUM = {"type": "number", "minimum": 0}
BOOL = {"type": "boolean"}
DATE = {"type": "string", "format": "date"}
EMAIL = {"type": "string", "format": "email"}
TIME = {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"}
STRS = {"type": "array", "items": STR}


def INT(lo: int | None = None, hi: int | None = None) -> dict:
    s: dict[str, Any] = {"type": "integer"}
    if lo is not None:
        s["minimum"] = lo
    if hi is not None:
        s["maximum"] = hi
    return s


def ENUM(*values: str) -> dict:
    return {"type": "string", "enum": list(values)}


class Fields:
    """Builds one object: its schema (property order = insertion order), its value and the text slots."""

    def __init__(self, rng: random.Random, style: str | None = None):
        self.rng = rng
        self.style = style or rng.choice(("snake", "snake", "camel"))
        self.props: dict[str, dict] = {}
        self.required: list[str] = []
        self.value: dict[str, Any] = {}
        self.slots: dict[str, Any] = {}
        self.keyed: list[tuple[str, str]] = []  # (slot, key) of each stated field

    def key(self, names: tuple[str, ...]) -> str:
        options = [camel(n) if self.style == "camel" else n for n in names]
        free = [k for k in options if k not in self.props] or [options[0] + "_2"]
        return self.rng.choice(free)

    def add(self, slot: str, names: tuple[str, ...], schema: dict | Fields, value: Any = None,
            text: Any = None, p: float | None = None) -> Any:
        """A field. ``p=None``: required and stated; otherwise optional, stated with probability ``p``
        (left out of the value and its slot set to None when not stated). Returns the value or None."""
        k = self.key(names)
        if isinstance(schema, Fields):
            schema, value = schema.schema(), schema.value
        self.props[k] = schema
        if p is None:
            self.required.append(k)
        if p is not None and self.rng.random() >= p:
            self.slots[slot] = None
            return None
        self.value[k] = value
        self.slots[slot] = value if text is None else text
        self.keyed.append((slot, k))
        return value

    def sources(self) -> tuple[ValueSource, ...]:
        """Where the text states each scalar value: its slot's final text (a template may restate a slot after
        ``add``, as a boolean's phrase); objects and arrays are left out."""
        return tuple(ValueSource.of(k, self.value[k], self.slots[slot]) for slot, k in self.keyed
                     if self.slots.get(slot) is not None and not isinstance(self.value[k], (dict, list)))

    def schema(self) -> dict:
        s: dict[str, Any] = {"type": "object", "properties": self.props}
        if self.required:
            s["required"] = list(self.required)
        if self.rng.random() < 0.3:
            s["additionalProperties"] = False
        return s


def _pieces(schema: Any) -> list[tuple[str, Any]]:
    """What the meta-schema check of an object schema comes down to, as ``(shape, piece)`` pairs: the
    object's own keywords with its properties blanked and ``required`` reduced to its length, and each
    property's subschema (recursively). Key names and which keys are required never affect validity."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return [(canonical_json(schema), schema)]
    props = schema["properties"]
    own = {k: v for k, v in schema.items() if k not in ("properties", "required")}
    own["properties"] = {f"p{i}": {} for i in range(len(props))}
    if "required" in schema:
        own["required"] = [f"r{i}" for i in range(len(schema["required"]))]
    return [(canonical_json(own), own)] + [p for sub in props.values() for p in _pieces(sub)]


_CHECKED_SHAPES: set[str] = set()


class GeneratedSchema(JsonSchema):
    """A :class:`JsonSchema` built by these generators. Checking a schema against the 2020-12 meta-schema
    costs milliseconds and nearly every example has its own key names and fields (the composed records draw
    them at random), so the check runs once per *piece* (:func:`_pieces`), not once per example."""

    def __post_init__(self):
        for shape, piece in _pieces(self.source):
            if shape not in _CHECKED_SHAPES:
                _check_schema(piece)
                _CHECKED_SHAPES.add(shape)
        object.__setattr__(self, "schema", self.source)
        object.__setattr__(self, "model", None)


_LEADS = ("", "", "", "Extract the details: ", "Extract the data from this text:\n", "Parse this: ",
          "Fill in the fields from the text below.\n", "Text: ", "Turn this into JSON:\n")


def _template(id: str, split: str = "train", registry: Registry = REG) -> Callable:
    """Register ``fn(rng, f) -> patterns`` (``f`` a fresh :class:`Fields`) as a JSON template on ``registry``."""

    def deco(fn: Callable[[random.Random, Fields], Any]):
        def render(rng: random.Random):
            f = Fields(rng)
            patterns = fn(rng, f)
            text = say(rng, patterns, f.slots)
            schema = f.schema()
            lead = rng.choice(_LEADS)
            return lead + text, canonical_json(f.value), f.value, GeneratedSchema(schema), f.sources()

        registry.add(Template(f"json.{id}", FAMILY, split, render))
        return fn

    return deco


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def _money(rng, f, names=("price", "cost", "amount"), p=None, lo=5, hi=2000, code=None):
    code = code or rng.choice(("EUR", "USD", "GBP", "CHF", "SEK"))
    amt = V.amount(rng, lo, hi)
    return f.add("price", names, NUM, amt, V.money_text(rng, amt, code), p=p), code


def _date(rng, f, slot, names, p=None, start=2025, end=2027):
    d = V.date(rng, start, end)
    return f.add(slot, names, DATE, d.isoformat(), V.date_text(rng, d), p=p)


# ----------------------------------------------------------------------- held-out templates (7 domains)
# Other domains and other text shapes than the train templates (json_templates.py).
@_template("vehicle_ad", "heldout")
def _(rng, f):
    mk, md = rng.choice((("Volkswagen", "Golf"), ("Škoda", "Octavia"), ("Toyota", "Corolla"), ("Renault", "Clio"), ("Volvo", "XC60"), ("Citroën", "C3")))
    f.add("make", ("make", "brand"), STR, mk)
    f.add("model", ("model",), STR, md)
    f.add("year", ("year", "model_year"), INT(1950, 2026), rng.randint(2005, 2025))
    km = rng.randrange(5000, 250000, 1000)
    f.add("km", ("mileage_km", "odometer_km", "km"), INT(0), km, f"{km:,}")
    fu = ("petrol", "diesel", "electric", "hybrid")
    f.add("fuel", ("fuel", "fuel_type"), ENUM(*fu), rng.choice(fu))
    f.add("color", ("color", "colour"), STR, rng.choice(V.COLORS), p=0.5)
    _money(rng, f, ("price", "asking_price"), lo=1500, hi=60000, code="EUR")
    return ["FOR SALE: {year} {make} {model}, {km} km, {fuel}<color:, {color}>, asking {price}. Call after 6pm.",
            "Selling my {make} {model} ({year})<color: in {color}> - {fuel} - only {km} km on the clock. {price} or best offer."]


@_template("clinic_dialogue", "heldout")
def _(rng, f):
    f.add("patient", ("patient_name", "patient"), STR, V.person(rng))
    f.add("doctor", ("doctor", "physician"), STR, f"Dr. {rng.choice(V.LAST_NAMES)}")
    _date(rng, f, "date", ("appointment_date", "date"))
    t, tt = V.time_of_day(rng, 15, 8, 17)
    f.add("time", ("appointment_time", "time"), TIME, t, tt)
    f.add("reason", ("reason", "reason_for_visit"), STR, rng.choice(("back pain", "a check-up", "a sore throat", "vaccination")), p=0.6)
    return [("Receptionist: Good morning, how can I help?\nCaller: Hi, this is {patient}. I'd like to see {doctor}"
             "<reason: about {reason}>.\nReceptionist: {doctor} is free on {date} at {time}.\nCaller: Perfect, I'll take it."),
            "- Can I book {patient} in with {doctor}?\n- Sure, {date}, {time}. <reason:What is it for?\n- {reason}.>"]


@_template("match_report", "heldout")
def _(rng, f):
    home, away = rng.sample(("FC Porto", "Benfica", "Bayern München", "Atlético", "Ajax", "Malmö FF", "Galatasaray", "Brøndby"), 2)
    hs, as_ = rng.randint(0, 5), rng.randint(0, 5)
    f.add("home", ("home_team", "home"), STR, home)
    f.add("away", ("away_team", "away", "visitors"), STR, away)
    f.add("hs", ("home_score", "home_goals"), INT(0, 30), hs)
    f.add("as", ("away_score", "away_goals"), INT(0, 30), as_)
    _date(rng, f, "date", ("date", "match_date"))
    att = rng.randint(2000, 80000)
    f.add("att", ("attendance", "spectators"), INT(0), att, f"{att:,}", p=0.5)
    return ["{home} {hs}-{as} {away} ({date})<att:. Attendance: {att}>.",
            "On {date}, {home} hosted {away}; the final score was {hs} to {as}<att: in front of {att} fans>."]


@_template("signature_block", "heldout")
def _(rng, f):
    name = f.add("name", ("name", "sender", "full_name"), STR, V.person(rng))
    f.add("title", ("title", "job_title", "position"), STR, rng.choice(("Head of Sales", "CTO", "Project Manager", "Lead Designer")))
    f.add("company", ("company", "organisation"), STR, rng.choice(V.COMPANIES))
    f.add("email", ("email", "email_address"), EMAIL, V.email(rng, name))
    f.add("phone", ("phone", "direct_line"), STR, f"+{rng.randint(30, 49)} {rng.randint(100, 999)} {rng.randint(1000, 99999)}", p=0.6)
    return ["Thanks for your help!\n\nBest regards,\n{name}\n{title}, {company}\n{email}<phone: | {phone}>",
            "--\n{name} | {title}\n{company}\n<phone:T: {phone}\n>M: {email}"]


@_template("course_listing", "heldout")
def _(rng, f):
    f.add("course", ("course", "course_title"), STR, rng.choice(("Intro to Statistics", "Conversational Spanish", "Watercolour Basics", "Python for Beginners")))
    f.add("teacher", ("instructor", "teacher"), STR, V.person(rng))
    _date(rng, f, "start", ("start_date", "starts"))
    w = rng.randint(2, 16)
    f.add("weeks", ("weeks", "duration_weeks"), INT(1, 52), w, V.count_text(rng, w))
    f.add("cap", ("capacity", "max_students"), INT(1, 500), rng.randint(8, 60), p=0.6)
    on = f.add("online", ("online", "is_online"), BOOL, rng.random() < 0.5)
    f.slots["online"] = "online" if on else "in person"
    return ["NEW THIS TERM >> {course} with {teacher}. Starts {start}, runs {weeks} weeks, {online}.<cap: Only {cap} places!>",
            "Q: When does {course} begin?\nA: On {start}. {teacher} teaches it {online} over {weeks} weeks<cap: (max. {cap} students)>."]


@_template("pet_adoption", "heldout")
def _(rng, f):
    f.add("name", ("name", "pet_name"), STR, rng.choice(("Luna", "Milo", "Kira", "Oskar", "Nala", "Pépito", "Bjørn")))
    sp = ("cat", "dog", "rabbit")
    f.add("species", ("species", "animal"), ENUM(*sp), rng.choice(sp))
    a = rng.randint(1, 14)
    f.add("age", ("age_years", "age"), INT(0, 40), a, V.count_text(rng, a))
    sx = ("female", "male")
    f.add("sex", ("sex", "gender"), ENUM(*sx), rng.choice(sx))
    vac = f.add("vac", ("vaccinated", "is_vaccinated"), BOOL, rng.random() < 0.7)
    f.slots["vac"] = "fully vaccinated" if vac else "not yet vaccinated"
    f.add("city", ("shelter_city", "city"), STR, V.city(rng).name)
    return ["Meet {name}! This {age}-year-old {sex} {species} is {vac} and waiting for a home at our {city} shelter.",
            "Adopt me: I'm {name}, a {sex} {species}, {age} years young, {vac}. Find me at the shelter in {city}."]


@_template("news_brief", "heldout")
def _(rng, f):
    f.add("place", ("location", "place", "region"), STR, V.city(rng).name)
    m = round(rng.uniform(3.0, 7.9), 1)
    f.add("mag", ("magnitude",), NUM, m)
    _date(rng, f, "date", ("date", "occurred_on"))
    inj = rng.randint(0, 40)
    f.add("inj", ("injuries", "injured"), INT(0), inj, "no" if inj == 0 else V.count_text(rng, inj))
    f.add("depth", ("depth_km",), NUM, rng.randint(5, 70), p=0.4)
    return ["BREAKING - A magnitude {mag} earthquake struck near {place} on {date}<depth: at a depth of {depth} km>. Officials report {inj} injuries.",
            "{place}, {date} (news): {inj} people were hurt when a {mag}-magnitude quake<depth: ({depth} km deep)> shook the area."]


from . import json_composed, json_templates  # noqa: F401,E402  (register their templates on REG)


def __getattr__(name: str):
    """``TRAIN_TEMPLATES`` / ``HELDOUT_TEMPLATES``, read when asked: the template modules register on
    ``REG`` as they import, and either may be imported before this one finishes."""
    if name == "TRAIN_TEMPLATES":
        return REG.train
    if name == "HELDOUT_TEMPLATES":
        return REG.heldout
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def examples(split: str, n: int, seed: int = 0):
    """``n`` JSON extraction examples of ``split`` ("train" or "heldout")."""
    return generate(FAMILY, split, REG.split(split), n, seed)
