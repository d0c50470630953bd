"""How many dates, times, UTC offsets, amounts and currencies of the gold answers a model could copy, with and
without request notes.

A model of the embedded size copies a value it can see in the request and never learnt to convert one
(docs/training-log.md, runs 17-37). ``structgen.request_notes`` writes the ISO form of each date, clock time,
UTC offset and amount beside it; this counts, over the examples ``structgen eval`` decodes (the same split,
size and seed), the gold values of that kind — a date ``2027-02-24``, a time ``13:45``, a date-time whole
and its date, time and offset, an amount with its currency ``7441 USD``, a currency code ``SEK`` — and how
many of them appear verbatim in the prompt without the notes and with them. It also
counts the notes written where no gold value needed one, and times both readers: the notes, and
``dateparser.search.search_dates`` (if installed) over the same requests. Figures only; nothing is asserted.

    python benchmarks/request_notes.py                      # held-out and training split, tool and JSON, n=50
    python benchmarks/request_notes.py -n 400 --families tool
    python benchmarks/request_notes.py --version 1            # the notes a version-1 model reads
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from structgen.request_notes import VERSION, annotate, notes  # noqa: E402
from structgen.train.data import examples as family_examples  # noqa: E402

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TIME = re.compile(r"^\d{2}:\d{2}$")
DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}):\d{2}(Z|[+-]\d{2}:\d{2})$")


CODE = re.compile(r"^[A-Z]{3}$")


def _number(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def parts(value) -> list[tuple[str, str]]:
    """``(kind, text)`` for every date, time, offset, amount or currency code inside a gold value (nested lists
    and objects too; an object's ``amount`` with its ``from_currency`` or ``currency`` is an amount, the value of a
    key that names a currency a currency code)."""
    if isinstance(value, dict):
        code = value.get("from_currency") or value.get("currency")
        amount = value.get("amount")
        money = ([("amount", f"{_number(amount)} {code}")]
                 if isinstance(code, str) and isinstance(amount, (int, float)) and not isinstance(amount, bool) else [])
        codes = [("currency", v) for k, v in value.items() if "currency" in k and isinstance(v, str) and CODE.match(v)]
        return money + codes + [p for v in value.values() for p in parts(v)]
    if isinstance(value, list):
        return [p for v in value for p in parts(v)]
    if not isinstance(value, str):
        return []
    if DATE.match(value):
        return [("date", value)]
    if TIME.match(value):
        return [("time", value)]
    m = DATETIME.match(value)
    return [("date-time: whole", value), ("date-time: date", m[1]), ("date-time: time", m[2]),
            ("date-time: offset", m[3])] if m else []


def numbers(value) -> set[str]:
    """Every number in a gold value, written as a note writes it."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*(numbers(v) for v in value)) if value else set()
    return {_number(value)} if isinstance(value, (int, float)) and not isinstance(value, bool) else set()


def visible(text: str, kind: str, value: str) -> bool:
    """``value`` stands in ``text`` as a token run a model could copy (an offset ``Z`` only as ``(Z)``)."""
    if value == "Z":
        return "(Z)" in text or re.search(r"\dZ\)", text) is not None
    if kind == "date-time: offset":  # alone, or ending a whole date-time note
        return re.search(rf"(?<![\d:]){re.escape(value)}(?![\d:])|:\d\d{re.escape(value)}\)", text) is not None
    return re.search(rf"(?<![\d:.]){re.escape(value)}(?![\d:]|\.\d)", text) is not None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=50, help="examples per family and split (structgen eval's -n)")
    ap.add_argument("--families", default="tool,json")
    ap.add_argument("--seed", type=int, default=1234, help="structgen eval's default")
    ap.add_argument("--version", type=int, default=VERSION, help=f"the notes' version (default {VERSION})")
    args = ap.parse_args(argv)
    try:
        from dateparser.search import search_dates
    except ImportError:
        search_dates = None
    table = Table(title=f"Gold values visible in the request, notes version {args.version} (structgen eval's "
                        "examples)")
    for col in ("family", "split", "kind", "values", "plain", "with notes"):
        table.add_column(col, justify="left" if col in ("family", "split", "kind") else "right")
    spare = total_notes = 0
    note_s = parse_s = 0.0
    n_requests = 0
    for fam in args.families.split(","):
        for split in ("heldout", "train"):
            counts: dict[str, list[int]] = {}
            for ex in family_examples(fam, split, args.n, args.seed):
                text = ex.prompt if isinstance(ex.prompt, str) else "\n".join(m["content"] for m in ex.prompt)
                t0 = time.perf_counter()
                noted = annotate(text, args.version)
                note_s += time.perf_counter() - t0
                if search_dates is not None:
                    t0 = time.perf_counter()
                    search_dates(text, languages=["en"])
                    parse_s += time.perf_counter() - t0
                n_requests += 1
                gold = parts(ex.gold)
                found = notes(text, args.version)
                total_notes += len(found)
                held = {v for _, v in gold} | numbers(ex.gold)
                spare += sum(1 for *_, iso in found if iso not in held and iso.split(" ")[0] not in held)
                for kind, value in gold:
                    c = counts.setdefault(kind, [0, 0, 0])
                    c[0] += 1
                    c[1] += visible(text, kind, value)
                    c[2] += visible(noted, kind, value)
            for kind, (n, plain, with_notes) in sorted(counts.items()):
                table.add_row(fam, split, kind, str(n), f"{plain} ({plain / n:.0%})",
                              f"{with_notes} ({with_notes / n:.0%})")
    console = Console()
    console.print(table)
    console.print(f"{n_requests} requests: {total_notes} notes written, {spare} of them on a value the answer does "
                  f"not hold; notes {note_s / n_requests * 1e6:.0f} µs a request"
                  + (f", dateparser.search_dates {parse_s / n_requests * 1e3:.1f} ms a request"
                     if search_dates else ""))


if __name__ == "__main__":
    main()
