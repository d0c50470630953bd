"""Builds the example shop database ``examples/shop/shop.sqlite``: customers, products, orders, order items.

The content comes from a seeded ``random.Random`` and fixed name lists (nothing depends on the clock), so
two builds with the same seed give byte-identical files. The file is written to a temporary file in the
same folder and renamed into place, so a reader never sees a half-written database.

    build(path=DEFAULT_PATH, seed=DEFAULT_SEED) -> Path   # always (re)writes
    ensure(path=DEFAULT_PATH) -> Path                      # builds only when the file is missing
    python examples/shop/build.py [--out PATH] [--force] [--seed N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sqlite3
import sys
import tempfile
from pathlib import Path

DEFAULT_PATH = Path(__file__).resolve().parent / "shop.sqlite"
DEFAULT_SEED = 20240101

# The schema, exactly as stored in sqlite_master (SQLite keeps the statement text as written).
SCHEMA: tuple[str, ...] = (
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL,\n"
    "  country TEXT NOT NULL, signup_date TEXT NOT NULL)",
    "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,\n"
    "  price REAL NOT NULL)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),\n"
    "  order_date TEXT NOT NULL,\n"
    "  status TEXT NOT NULL CHECK (status IN ('pending','shipped','delivered','cancelled')))",
    "CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(id),\n"
    "  product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL CHECK (quantity > 0),\n"
    "  PRIMARY KEY (order_id, product_id))",
)

STATUSES = ("pending", "shipped", "delivered", "cancelled")
FIRST_ORDER = dt.date(2024, 1, 1)
LAST_ORDER = dt.date(2026, 11, 30)
FIRST_SIGNUP = dt.date(2022, 3, 1)
LAST_SIGNUP = dt.date(2026, 6, 30)
N_ORDERS = 320

# country: (customer count, real cities, first names, family names)
COUNTRIES: dict[str, tuple[int, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "Germany": (10, ("Berlin", "Hamburg", "Munich", "Cologne", "Leipzig", "Stuttgart"),
                ("Anna", "Lukas", "Marie", "Jonas", "Sophie", "Felix", "Lena", "Paul", "Hannah", "Moritz"),
                ("Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Wagner", "Becker", "Hoffmann")),
    "France": (9, ("Paris", "Lyon", "Marseille", "Toulouse", "Bordeaux", "Nantes"),
               ("Camille", "Louis", "Chloé", "Hugo", "Léa", "Jules", "Manon", "Arthur", "Inès"),
               ("Martin", "Bernard", "Dubois", "Thomas", "Robert", "Richard", "Petit", "Durand")),
    "Japan": (9, ("Tokyo", "Osaka", "Kyoto", "Yokohama", "Sapporo", "Fukuoka"),
              ("Haruto", "Yui", "Sota", "Aoi", "Ren", "Hina", "Yuto", "Sakura", "Riku"),
              ("Sato", "Suzuki", "Takahashi", "Tanaka", "Watanabe", "Ito", "Yamamoto", "Nakamura")),
    "Brazil": (8, ("São Paulo", "Rio de Janeiro", "Belo Horizonte", "Salvador", "Curitiba", "Recife"),
               ("Gabriel", "Ana", "Lucas", "Beatriz", "Mateus", "Julia", "Pedro", "Larissa"),
               ("Silva", "Santos", "Oliveira", "Souza", "Pereira", "Costa", "Almeida", "Ferreira")),
    "Canada": (8, ("Toronto", "Montreal", "Vancouver", "Calgary", "Ottawa", "Halifax"),
               ("Liam", "Olivia", "Noah", "Emma", "Ethan", "Charlotte", "William", "Ava"),
               ("Smith", "Tremblay", "Brown", "Wilson", "MacDonald", "Gagnon", "Campbell", "Roy")),
    "India": (10, ("Mumbai", "Delhi", "Bengaluru", "Chennai", "Hyderabad", "Kolkata", "Pune"),
              ("Aarav", "Priya", "Vihaan", "Ananya", "Arjun", "Diya", "Rohan", "Kavya", "Ishaan", "Meera"),
              ("Sharma", "Patel", "Iyer", "Reddy", "Gupta", "Nair", "Singh", "Mehta")),
    "Spain": (8, ("Madrid", "Barcelona", "Valencia", "Seville", "Bilbao", "Zaragoza"),
              ("Lucía", "Hugo", "Martina", "Daniel", "Sofía", "Alejandro", "Paula", "Pablo"),
              ("García", "Fernández", "González", "Rodríguez", "López", "Martínez", "Sánchez", "Pérez")),
    "Kenya": (8, ("Nairobi", "Mombasa", "Kisumu", "Nakuru", "Eldoret"),
              ("Wanjiru", "Otieno", "Akinyi", "Kamau", "Njeri", "Mwangi", "Chebet", "Kiprop"),
              ("Odhiambo", "Mutua", "Kariuki", "Wambui", "Ochieng", "Kiplagat", "Njoroge", "Achieng")),
}

# category: (product name, lowest price, highest price)
PRODUCTS: dict[str, tuple[tuple[str, float, float], ...]] = {
    "books": (
        ("Pocket Notebook", 2.00, 2.25),
        ("The Pragmatic Gardener", 14.0, 24.0),
        ("Learning SQL, 3rd Edition", 35.0, 49.0),
        ("World Atlas", 25.0, 40.0),
        ("Cooking for Two", 12.0, 22.0),
        ("A Short History of Nearly Everything", 10.0, 18.0),
        ("Children's Picture Dictionary", 8.0, 15.0),
        ("Photography Field Guide", 20.0, 32.0),
        ("Crossword Collection", 4.0, 9.0),
    ),
    "electronics": (
        ("4K OLED Monitor", 489.0, 499.99),
        ("Wireless Earbuds", 49.0, 129.0),
        ("USB-C Charging Cable", 6.0, 14.0),
        ("Bluetooth Speaker", 29.0, 89.0),
        ("Mechanical Keyboard", 69.0, 149.0),
        ("Noise-Cancelling Headphones", 199.0, 349.0),
        ("Portable Power Bank", 19.0, 49.0),
        ("E-Reader", 99.0, 179.0),
        ("Smart Watch", 149.0, 299.0),
        ("Wireless Mouse", 15.0, 39.0),
    ),
    "toys": (
        ("Wooden Building Blocks", 19.0, 34.0),
        ("Jigsaw Puzzle 1000 Pieces", 12.0, 22.0),
        ("Remote Control Car", 35.0, 79.0),
        ("Plush Elephant", 9.0, 19.0),
        ("Board Game: Island Traders", 29.0, 45.0),
        ("Kite", 11.0, 25.0),
        ("Modelling Clay Set", 5.0, 12.0),
        ("Rubber Duck", 2.20, 3.50),
    ),
    "garden": (
        ("Garden Hose 25 m", 24.0, 45.0),
        ("Pruning Shears", 14.0, 32.0),
        ("Tomato Seeds", 2.10, 3.90),
        ("Terracotta Pot", 6.0, 18.0),
        ("Cordless Lawn Mower", 249.0, 459.0),
        ("Compost Bin", 39.0, 79.0),
        ("Bird Feeder", 12.0, 28.0),
        ("Watering Can", 9.0, 21.0),
        ("Solar Garden Lights", 19.0, 39.0),
    ),
    "kitchen": (
        ("Chef's Knife", 29.0, 119.0),
        ("Cast Iron Skillet", 25.0, 59.0),
        ("Espresso Machine", 189.0, 449.0),
        ("Cutting Board", 12.0, 34.0),
        ("Stand Mixer", 229.0, 399.0),
        ("Tea Kettle", 19.0, 49.0),
        ("Silicone Spatula", 3.0, 8.0),
        ("Measuring Cups", 7.0, 16.0),
        ("Salad Spinner", 15.0, 29.0),
    ),
}


def _day(rng: random.Random, first: dt.date, last: dt.date) -> dt.date:
    return first + dt.timedelta(days=rng.randint(0, (last - first).days))


def _customers(rng: random.Random) -> list[tuple]:
    rows = []
    for country, (count, cities, firsts, lasts) in COUNTRIES.items():
        names: set[str] = set()
        while len(names) < count:
            names.add(f"{rng.choice(firsts)} {rng.choice(lasts)}")
        for name in sorted(names):
            rows.append((name, rng.choice(cities), country, _day(rng, FIRST_SIGNUP, LAST_SIGNUP)))
    rng.shuffle(rows)
    return [(i, *row) for i, row in enumerate(rows, start=1)]


def _products(rng: random.Random) -> list[tuple]:
    rows = []
    for category, items in PRODUCTS.items():
        for name, low, high in items:
            rows.append((name, category, round(rng.uniform(low, high), 2)))
    rng.shuffle(rows)
    return [(i, *row) for i, row in enumerate(rows, start=1)]


def _status(rng: random.Random, day: dt.date) -> str:
    """Old orders are delivered or cancelled; the last three months also hold pending and shipped ones."""
    age = (LAST_ORDER - day).days
    if age < 20:
        weights = (0.45, 0.35, 0.12, 0.08)
    elif age < 90:
        weights = (0.10, 0.35, 0.47, 0.08)
    else:
        weights = (0.0, 0.0, 0.88, 0.12)
    return rng.choices(STATUSES, weights=weights)[0]


def _orders(rng: random.Random, customers: list[tuple], n_products: int) -> tuple[list[tuple], list[tuple]]:
    # Some customers order often, some rarely; a few never do.
    activity = [rng.choice((0, 1, 1, 2, 3, 5, 8)) for _ in customers]
    drafts = []
    for _ in range(N_ORDERS):
        cid, _, _, _, signup = rng.choices(customers, weights=activity)[0]
        first = max(FIRST_ORDER, signup + dt.timedelta(days=1))
        drafts.append((_day(rng, first, LAST_ORDER), cid))
    drafts.sort()
    orders, items = [], []
    for oid, (day, cid) in enumerate(drafts, start=1):
        orders.append((oid, cid, day.isoformat(), _status(rng, day)))
        for pid in sorted(rng.sample(range(1, n_products + 1), rng.randint(1, 5))):
            items.append((oid, pid, rng.choices((1, 2, 3, 4, 6), weights=(60, 22, 10, 5, 3))[0]))
    return orders, items


def _fill(conn: sqlite3.Connection, seed: int) -> None:
    rng = random.Random(seed)
    customers = _customers(rng)
    products = _products(rng)
    orders, items = _orders(rng, customers, len(products))
    conn.execute("PRAGMA foreign_keys = ON")
    with conn:
        for stmt in SCHEMA:
            conn.execute(stmt)
        conn.executemany(
            "INSERT INTO customers VALUES (?, ?, ?, ?, ?)",
            [(i, n, c, k, d.isoformat()) for i, n, c, k, d in customers])
        conn.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", products)
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", orders)
        conn.executemany("INSERT INTO order_items VALUES (?, ?, ?)", items)


def build(path: Path = DEFAULT_PATH, seed: int = DEFAULT_SEED) -> Path:
    """Write the shop database to ``path`` (replacing it) and return the path.

    The database is written to a temporary file beside ``path`` and renamed over it in one step.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        conn = sqlite3.connect(tmp)
        try:
            _fill(conn, seed)
        finally:
            conn.close()
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def ensure(path: Path = DEFAULT_PATH) -> Path:
    """The shop database at ``path``, built first when the file does not exist."""
    path = Path(path)
    if not path.is_file():
        build(path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the example shop SQLite database.")
    ap.add_argument("--out", type=Path, default=DEFAULT_PATH, help=f"where to write it (default {DEFAULT_PATH})")
    ap.add_argument("--force", action="store_true", help="rebuild even when the file exists")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default %(default)s)")
    args = ap.parse_args(argv)
    if args.force or not args.out.is_file():
        build(args.out, args.seed)
        what = "built"
    else:
        what = "exists (pass --force to rebuild)"
    conn = sqlite3.connect(f"{args.out.resolve().as_uri()}?mode=ro", uri=True)
    try:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("customers", "products", "orders", "order_items")}
    finally:
        conn.close()
    print(f"{args.out}: {what}; " + ", ".join(f"{n} {t}" for t, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
