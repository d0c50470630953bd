"""Shared random values for the training-data generators: people, places, companies, products, dates.

Every function takes a ``random.Random`` and returns a value together with the surface forms a text may
use for it (dates and times in several spellings, cities with their IATA codes). Non-ASCII names and
places are deliberately common: the tokenizer and the model must carry them through unchanged. E-mail
addresses are lower-case ASCII, the form the constraint's ``email`` format accepts.
"""

from __future__ import annotations

import datetime as _dt
import random
import unicodedata
from dataclasses import dataclass

FIRST_NAMES = (
    "Maria", "José", "Anna", "Ben", "Chloé", "Łukasz", "Søren", "Björn", "Zoë", "Amélie", "Jürgen", "Ana",
    "Kenji", "Aiko", "Priya", "Rahul", "Fatima", "Omar", "Olga", "Dmitri", "Ingrid", "Lars", "Elena",
    "Mateo", "Lucía", "Noah", "Emma", "Liam", "Olivia", "Tomás", "Inès", "François", "Agnieszka", "Mehmet",
    "Ayşe", "Nguyễn", "Thu", "Sean", "Siobhán", "Katarzyna", "Hugo", "Léa", "Jonas", "Mia", "Ali", "Sara",
    "Wei", "Mei", "Kofi", "Amara", "Pedro", "João", "Greta", "Håkon", "Zsófia", "Ángel", "Dana", "Tom",
)
LAST_NAMES = (
    "Lopez", "García", "Müller", "Nowak", "Jensen", "Andersson", "Dubois", "Rossi", "Schmidt", "Kowalski",
    "Tanaka", "Suzuki", "Sharma", "Patel", "Haddad", "Ivanova", "Petrov", "Hansen", "Larsen", "Fernández",
    "Martín", "Smith", "Johnson", "Brown", "O'Neil", "Murphy", "Lefèvre", "Weber", "Fischer", "Wójcik",
    "Yılmaz", "Öztürk", "Tran", "Ng", "Kim", "Park", "Chen", "Wang", "Mensah", "Okafor", "Silva", "Souza",
    "Berg", "Lindqvist", "Nagy", "Kovács", "Ruiz", "Costa", "Novák", "Horvat", "Østergaard", "Björk",
)


@dataclass(frozen=True)
class City:
    name: str
    country: str
    iata: str


CITIES = tuple(City(*c) for c in (
    ("Paris", "France", "CDG"), ("London", "United Kingdom", "LHR"), ("Berlin", "Germany", "BER"),
    ("München", "Germany", "MUC"), ("Köln", "Germany", "CGN"), ("Düsseldorf", "Germany", "DUS"),
    ("Zürich", "Switzerland", "ZRH"), ("Genève", "Switzerland", "GVA"), ("Wien", "Austria", "VIE"),
    ("Kraków", "Poland", "KRK"), ("Warsaw", "Poland", "WAW"), ("Praha", "Czechia", "PRG"),
    ("Málaga", "Spain", "AGP"), ("Madrid", "Spain", "MAD"), ("Barcelona", "Spain", "BCN"),
    ("Lisbon", "Portugal", "LIS"), ("Porto", "Portugal", "OPO"), ("Rome", "Italy", "FCO"),
    ("Milano", "Italy", "MXP"), ("Athens", "Greece", "ATH"), ("İstanbul", "Türkiye", "IST"),
    ("Reykjavík", "Iceland", "KEF"), ("Oslo", "Norway", "OSL"), ("Stockholm", "Sweden", "ARN"),
    ("Göteborg", "Sweden", "GOT"), ("København", "Denmark", "CPH"), ("Helsinki", "Finland", "HEL"),
    ("Amsterdam", "Netherlands", "AMS"), ("Bruxelles", "Belgium", "BRU"), ("Dublin", "Ireland", "DUB"),
    ("New York", "United States", "JFK"), ("Chicago", "United States", "ORD"),
    ("San Francisco", "United States", "SFO"), ("Montréal", "Canada", "YUL"), ("Toronto", "Canada", "YYZ"),
    ("México City", "Mexico", "MEX"), ("Bogotá", "Colombia", "BOG"), ("São Paulo", "Brazil", "GRU"),
    ("Buenos Aires", "Argentina", "EZE"), ("Tokyo", "Japan", "HND"), ("Ōsaka", "Japan", "KIX"),
    ("Seoul", "South Korea", "ICN"), ("Singapore", "Singapore", "SIN"), ("Hà Nội", "Vietnam", "HAN"),
    ("Mumbai", "India", "BOM"), ("Dubai", "United Arab Emirates", "DXB"), ("Cairo", "Egypt", "CAI"),
    ("Nairobi", "Kenya", "NBO"), ("Accra", "Ghana", "ACC"), ("Sydney", "Australia", "SYD"),
))

COMPANIES = (
    "Acme Corp", "Globex", "Initech", "Nordwind GmbH", "Société Lumière", "Tanaka Seiki", "Vega Labs",
    "Brightline Ltd", "Café Müller", "Øresund Logistics", "Pão & Cia", "Helix Bio", "Stellar Freight",
    "Blue Fjord AS", "Kowalski & Syn", "Oakridge Partners", "Zenit Software", "Alpenglow AG", "Mirai Foods",
)
PRODUCTS = (
    ("Nimbus", "kettle"), ("Aero X2", "headphones"), ("Terra", "backpack"), ("Lumo 3", "desk lamp"),
    ("Fjäll", "rain jacket"), ("Orbit", "smartwatch"), ("Café Crème", "coffee machine"), ("Pixel Pro", "camera"),
    ("Sakura", "tea set"), ("Volt 500", "e-bike"), ("Halo", "air purifier"), ("Nordic", "wool blanket"),
    ("Bolt", "power bank"), ("Señorita", "guitar"), ("Zen", "yoga mat"), ("Atlas", "office chair"),
)
COLORS = ("black", "white", "red", "blue", "green", "grey", "silver", "navy", "beige", "orange")
JOB_TITLES = (
    "nurse", "software engineer", "teacher", "data analyst", "architect", "chef", "pharmacist",
    "graphic designer", "accountant", "electrician", "product manager", "journalist", "translator",
)
SKILLS = ("Python", "SQL", "Docker", "Kubernetes", "Excel", "Figma", "Java", "React", "Rust", "Spark",
          "Go", "Terraform", "Tableau", "AWS", "Linux", "C++")
STREETS = ("Rue de Rivoli", "Hauptstraße", "Calle Mayor", "Baker Street", "Via Roma", "Nørrebrogade",
           "Avenida Paulista", "Ulica Długa", "Kungsgatan", "Rua Augusta", "Elm Street", "Bahnhofstraße")
CURRENCIES = (  # code, names a text may use, symbol or None
    ("EUR", ("euros", "EUR", "euro"), "€"), ("USD", ("US dollars", "USD"), "$"),
    ("GBP", ("pounds", "British pounds", "GBP"), "£"), ("JPY", ("yen", "Japanese yen", "JPY"), "¥"),
    ("CHF", ("Swiss francs", "CHF"), None), ("SEK", ("Swedish kronor", "SEK"), None),
    ("PLN", ("złoty", "Polish złoty", "PLN"), None), ("BRL", ("Brazilian reais", "BRL"), None),
    ("INR", ("Indian rupees", "rupees", "INR"), "₹"), ("CAD", ("Canadian dollars", "CAD"), None),
    ("NOK", ("Norwegian kroner", "NOK"), None), ("MXN", ("Mexican pesos", "MXN"), None),
)
TOPICS = ("the Q2 budget", "the product launch", "hiring plans", "the office move", "customer feedback",
          "the new website", "travel expenses", "the annual report", "the roadmap", "team onboarding")
EMAIL_DOMAINS = ("example.com", "example.org", "mail.example.net", "acme.test", "globex.example", "uni.example.edu")
#: temperature units (the tool's enum values) and the words a request may use for them
UNITS = {"celsius": ("Celsius", "°C", "degrees Celsius", "celsius"),
         "fahrenheit": ("Fahrenheit", "°F", "degrees Fahrenheit", "fahrenheit")}
#: cabin classes (the tool's enum values) and the words a request may use for them
CABINS = {"economy": ("economy", "economy class", "coach"), "premium_economy": ("premium economy",),
          "business": ("business class", "business"), "first": ("first class",)}
#: UTC offsets as an ISO 8601 time carries them, and the names a text may use for them
ZONES = (("Z", ("UTC", "GMT", "UTC+0")), ("+01:00", ("UTC+1", "GMT+1", "UTC+01:00")),
         ("+02:00", ("UTC+2", "GMT+2", "UTC+02:00")), ("-05:00", ("UTC-5", "GMT-5", "UTC-05:00")),
         ("+05:30", ("UTC+5:30", "UTC+05:30", "GMT+5:30")), ("+09:00", ("UTC+9", "GMT+9")),
         ("-03:00", ("UTC-3", "GMT-3")), ("-08:00", ("UTC-8", "GMT-8", "UTC-08:00")))
#: durations in minutes and the words a text may use for them
DURATIONS = {15: ("15 minutes", "a quarter of an hour", "15 min"), 20: ("20 minutes", "20 min"),
             30: ("30 minutes", "half an hour", "30 min"), 45: ("45 minutes", "45 min"),
             60: ("an hour", "1 hour", "60 minutes", "1h"), 90: ("90 minutes", "an hour and a half", "1.5 hours"),
             120: ("2 hours", "two hours", "2h", "120 minutes"), 180: ("3 hours", "three hours", "180 minutes"),
             240: ("4 hours", "half a day (4 hours)")}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def ascii_slug(text: str) -> str:
    """``"Łukasz O'Neil"`` -> ``"lukasz.oneil"``: a lower-case ASCII form for e-mail addresses."""
    text = text.replace("ł", "l").replace("Ł", "L").replace("ø", "o").replace("Ø", "O").replace("ı", "i")
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    parts = ["".join(ch for ch in w.lower() if ch.isalnum()) for w in plain.split()]
    return ".".join(p for p in parts if p) or "user"


def email(rng: random.Random, name: str | None = None) -> str:
    name = name or person(rng)
    local = ascii_slug(name)
    if rng.random() < 0.3:
        local = local.split(".")[0]
    if rng.random() < 0.2:
        local += str(rng.randint(1, 99))
    return f"{local}@{rng.choice(EMAIL_DOMAINS)}"


def city(rng: random.Random) -> City:
    return rng.choice(CITIES)


def two_cities(rng: random.Random) -> tuple[City, City]:
    a, b = rng.sample(CITIES, 2)
    return a, b


def date(rng: random.Random, start: int = 2025, end: int = 2027) -> _dt.date:
    base = _dt.date(start, 1, 1)
    return base + _dt.timedelta(days=rng.randrange((_dt.date(end, 12, 31) - base).days + 1))


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 11 <= n % 100 <= 13 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def date_text(rng: random.Random, d: _dt.date) -> str:
    """One explicit surface form of ``d`` (never relative: there is no reference date)."""
    m = MONTHS[d.month - 1]
    forms = (
        f"{m} {d.day}, {d.year}", d.isoformat(), f"{d.day} {m} {d.year}", f"{m[:3]} {d.day}, {d.year}",
        f"{d.strftime('%A')}, {m} {d.day}, {d.year}", f"the {_ordinal(d.day)} of {m} {d.year}",
        f"{d.day} {m[:3]} {d.year}", f"{m} {_ordinal(d.day)} {d.year}",
    )
    return rng.choice(forms)


def time_of_day(rng: random.Random, step: int = 15, lo: int = 6, hi: int = 22) -> tuple[str, str]:
    """``("14:30", "2:30 pm")``: the 24-hour value and one surface form of it."""
    h, m = rng.randint(lo, hi), rng.randrange(0, 60, step)
    value = f"{h:02d}:{m:02d}"
    h12, ap = (h % 12 or 12), ("am" if h < 12 else "pm")
    forms = [value, f"{h12}:{m:02d} {ap}", f"{h12}:{m:02d}{ap.upper()}"]
    if m == 0:
        forms += [f"{h12} {ap}", f"{h12}{ap}", f"{h}h"]
        if h == 12:
            forms.append("noon")
    return value, rng.choice(forms)


def count_text(rng: random.Random, n: int) -> str:
    """``3`` as "3" or "three" (words up to ten)."""
    return NUMBER_WORDS[n] if n <= 10 and rng.random() < 0.4 else str(n)


def money_text(rng: random.Random, amount: float, code: str) -> str:
    """A surface form of an amount in a currency: "€82.40", "82.40 EUR", "1,250 euros" ..."""
    cur = next(c for c in CURRENCIES if c[0] == code)
    num = f"{amount:,.2f}" if amount != int(amount) or rng.random() < 0.3 else f"{int(amount):,}"
    if rng.random() < 0.5:
        num = num.replace(",", "")
    if cur[2] and rng.random() < 0.4:
        return f"{cur[2]}{num}"
    return f"{num} {rng.choice(cur[1])}"


def amount(rng: random.Random, lo: float = 1, hi: float = 5000, cents: float = 0.5) -> float | int:
    """A positive amount: whole (an ``int``) or with cents, as a text would state it."""
    if rng.random() < cents:
        return round(rng.uniform(lo, hi), 2)
    return rng.randint(int(lo), int(hi))


def join_list(rng: random.Random, items: list[str]) -> str:
    """``["a", "b", "c"]`` -> "a, b and c" / "a, b, and c" / "a, b & c"."""
    if len(items) == 1:
        return items[0]
    conj = rng.choice((" and ", ", and ", " & ")) if len(items) > 2 else rng.choice((" and ", " & "))
    return ", ".join(items[:-1]) + conj + items[-1]
