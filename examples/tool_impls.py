"""Safe implementations of the seven example tools in ``examples/tools.py``, for the agent executor.

    from structgen.agent import AgentRuntime, Executor
    impls = load_by_path("examples/tool_impls.py").functions(sandbox="/tmp/structgen-sandbox")
    runtime = AgentRuntime(gen, executor=Executor(impls), ...)

Nothing here reaches the network or touches files outside the folders it is given:

- ``get_weather``, ``search_flights``, ``convert_currency``, ``create_event``, ``set_reminder`` return
  deterministic fake data (the same arguments always give the same answer);
- ``send_email`` writes the message as a JSON file into the outbox folder instead of sending it;
- ``delete_file`` deletes only regular files inside the sandbox folder: a relative path is taken inside the
  sandbox, an absolute one must resolve (symbolic links followed) inside it; anything else is refused.

The executor calls each function with the validated pydantic model's fields as keyword arguments, so
``date`` arrives as ``datetime.date`` and ``at`` as ``datetime.datetime``.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from pathlib import Path
from typing import Callable

CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "rain", "snow", "windy", "fog")
#: units of each currency per euro (fixed fake rates)
RATES = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85, "JPY": 161.0, "CHF": 0.95, "NOK": 11.6, "SEK": 11.3, "DKK": 7.46}
CARRIERS = ("SK", "LH", "AF", "KL", "BA", "DY")


def _seed(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def get_weather(city: str, unit: str = "celsius", days: int = 1) -> dict:
    """Deterministic fake weather for ``days`` days."""
    forecast = []
    for d in range(days):
        s = _seed(city.lower(), d)
        c = -5 + s % 30
        temp = c if unit == "celsius" else round(c * 9 / 5 + 32)
        forecast.append({"day": d, "temperature": temp, "conditions": CONDITIONS[(s >> 8) % len(CONDITIONS)]})
    return {"city": city, "unit": unit, "forecast": forecast}


def create_event(title: str, date: datetime.date, start_time: str, duration_minutes: int = 30,
                 attendees: list[str] | None = None) -> dict:
    """A fake calendar entry (nothing is stored)."""
    start = datetime.datetime.combine(date, datetime.time.fromisoformat(start_time))
    end = start + datetime.timedelta(minutes=duration_minutes)
    return {"event_id": f"evt_{_seed(title, start.isoformat()):x}"[:16], "title": title, "start": start.isoformat(),
            "end": end.isoformat(), "attendees": list(attendees or [])}


def search_flights(origin: str, destination: str, date: datetime.date, passengers: int = 1,
                   cabin: str = "economy") -> dict:
    """Three deterministic fake flights."""
    factor = {"economy": 1.0, "premium_economy": 1.6, "business": 3.2, "first": 5.5}[cabin]
    flights = []
    for i in range(3):
        s = _seed(origin, destination, date.isoformat(), i)
        dep = datetime.datetime.combine(date, datetime.time(6 + (s % 14), (s >> 4) % 4 * 15))
        mins = 60 + (s >> 8) % 600
        flights.append({"flight": f"{CARRIERS[s % len(CARRIERS)]}{100 + (s >> 12) % 900}",
                        "departure": dep.isoformat(), "arrival": (dep + datetime.timedelta(minutes=mins)).isoformat(),
                        "price_eur": round((80 + (s >> 16) % 400) * factor * passengers, 2)})
    return {"origin": origin, "destination": destination, "cabin": cabin, "passengers": passengers,
            "flights": flights}


def set_reminder(text: str, at: datetime.datetime) -> dict:
    """A fake reminder (nothing is scheduled)."""
    return {"reminder_id": f"rem_{_seed(text, at.isoformat()):x}"[:16], "text": text, "at": at.isoformat()}


def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict:
    """Conversion at fixed fake rates; an unknown currency is an error."""
    for code in (from_currency, to_currency):
        if code not in RATES:
            raise ValueError(f"unknown currency {code!r}; known: {', '.join(sorted(RATES))}")
    rate = RATES[to_currency] / RATES[from_currency]
    return {"amount": amount, "from": from_currency, "to": to_currency, "rate": round(rate, 6),
            "result": round(amount * rate, 2)}


def functions(sandbox: str | os.PathLike, outbox: str | os.PathLike | None = None) -> dict[str, Callable]:
    """The seven implementations by tool name; ``delete_file`` works inside ``sandbox`` only and
    ``send_email`` writes to ``outbox`` (default ``<sandbox>/outbox``). Both folders are created."""
    root = Path(sandbox).resolve()
    root.mkdir(parents=True, exist_ok=True)
    out = Path(outbox).resolve() if outbox is not None else root / "outbox"
    out.mkdir(parents=True, exist_ok=True)

    def send_email(to: list[str], subject: str, body: str) -> dict:
        """Write the message to the outbox as JSON (nothing is sent)."""
        message = {"to": list(to), "subject": subject, "body": body,
                   "queued_at": datetime.datetime.now(datetime.timezone.utc).isoformat()}
        name = f"{datetime.datetime.now().strftime('%Y%m%dT%H%M%S%f')}-{_seed(to, subject, body):x}"[:40] + ".json"
        path = out / name
        with open(path, "x", encoding="utf-8") as f:  # never overwrite
            json.dump(message, f, ensure_ascii=False, indent=2)
        return {"queued": True, "outbox_file": name, "recipients": len(to)}

    def delete_file(path: str) -> dict:
        """Delete one regular file inside the sandbox."""
        target = Path(path) if os.path.isabs(path) else root / path
        real = Path(os.path.realpath(target))
        if os.path.commonpath([real, root]) != str(root) or real == root:
            raise PermissionError(f"{path!r} is outside the sandbox {root}; refusing to delete it")
        if real.is_relative_to(out):
            raise PermissionError(f"{path!r} is in the outbox; refusing to delete it")
        if not real.is_file():
            raise FileNotFoundError(f"{path!r} is not a file in the sandbox")
        real.unlink()
        return {"deleted": str(real.relative_to(root))}

    return {"get_weather": get_weather, "create_event": create_event, "send_email": send_email,
            "search_flights": search_flights, "set_reminder": set_reminder, "convert_currency": convert_currency,
            "delete_file": delete_file}
