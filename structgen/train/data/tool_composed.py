"""Tool calls, composed: requests assembled from an opener, an intent and one phrase per argument in random order.

The fixed phrasings of ``tool_calls.TABLE`` are few per tool (4-7), and a model that fits them has learnt
those sentences more than the skill of finding each argument wherever a request puts it. These phrasings
are built per example: ``[opener] intent arg-phrase arg-phrase ... [closer]``, every argument phrase drawn
from its own list (``in {city}``, ``for the next {days} days`` ...), optional arguments guarded as in the
table (``<days:...>``), the order shuffled (a phrase that must end the request, such as an e-mail body,
stays last). ``PHRASES`` holds them per tool; ``tool_calls`` registers one template per tool and layout.
The held-out phrasings (``h.*`` in ``tool_calls.TABLE``) are whole sentences none of these produce.
"""

from __future__ import annotations

import random

OPENERS = ("", "", "", "please: ", "hey, ", "quick one: ", "pls ", "request: ", "ok so ", "todo: ")
CLOSERS = ("", "", "", ".", "?", " please", " - thanks", ", thx", "!", " asap")

#: per tool: (intents, [(slot, phrases), ...], the slot that must come last or None)
PHRASES: dict[str, tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...], str | None]] = {
    "get_weather": (
        ("weather", "get the weather", "check the weather", "forecast", "weather report", "show me the weather",
         "how's the weather", "look up the temperatures"),
        (("city", ("in {city}", "for {city}", "at {city}", "over {city}")),
         ("days", ("for {days} days", "over the next {days} days", "{days} days ahead", "covering {days} days")),
         ("unit", ("in {unit}", "using {unit}", "({unit})", "{unit} please"))),
        None),
    "create_event": (
        ("schedule", "create an event", "add to my calendar", "new calendar entry", "set up an event",
         "put an event in my calendar", "calendar:"),
        (("title", ('"{title}"', "called {title}", "titled {title}", "named '{title}'")),
         ("date", ("on {date}", "for {date}", "date {date}")),
         ("time", ("at {time}", "starting {time}", "from {time}", "start {time}")),
         ("dur", ("for {dur}", "lasting {dur}", "({dur})", "duration {dur}")),
         ("att", ("with {att}", "invite {att}", "inviting {att}", "guests: {att}"))),
        None),
    "send_email": (
        ("email", "send an email", "mail", "write an email", "send a message", "drop an email"),
        (("to", ("to {to}", "for {to}", "addressed to {to}")),
         ("subject", ('subject "{subject}"', "re: {subject}", 'titled "{subject}"', "with the subject {subject}")),
         ("body", ('saying "{body}"', "body: {body}", "message: {body}", "text: {body}"))),
        "body"),
    "search_flights": (
        ("flights", "find flights", "search for flights", "look for a flight", "any flights", "I want to fly",
         "get me a flight", "flight search:"),
        (("o", ("from {o}", "out of {o}", "leaving {o}", "departing {o}")),
         ("d", ("to {d}", "into {d}", "arriving in {d}", "bound for {d}")),
         ("date", ("on {date}", "for {date}", "date {date}")),
         ("pax", ("for {pax} passengers", "{pax} travellers", "party of {pax}", "{pax} seats")),
         ("cab", ("in {cab}", "{cab}", "flying {cab}"))),
        None),
    "set_reminder": (
        ("remind me", "set a reminder", "reminder", "ping me", "nudge me", "alert me"),
        (("task", ("to {task}", "about: {task}", "- {task} -")),
         ("date", ("on {date}", "{date}")),
         ("time", ("at {time} {tz}", "{time} ({tz})", "at {time}, {tz}"))),
        None),
    "convert_currency": (
        ("convert", "how much is", "what is", "change", "exchange", "currency check:", "work out"),
        (("amt", ("{amt}",)),
         ("to", ("in {to}", "to {to}", "into {to}", "as {to}"))),
        "to"),
    "delete_file": (
        ("delete", "remove", "wipe", "erase", "get rid of", "discard", "throw away", "trash"),
        (("path", ("{path}", "the file {path}", "file {path}", "`{path}`")),),
        None),
}


def phrasing(rng: random.Random, tool: str, layout: str, optional: tuple[str, ...]) -> str:
    """One pattern (``base.say``'s language) for ``tool``: ``layout`` "sentence" (opener, intent, phrases,
    closer) or "terse" (intent and phrases only); phrases of the ``optional`` slots are guarded."""
    intents, slots, last = PHRASES[tool]
    sep = rng.choice((" ", " ", ", "))
    parts = []
    for slot, options in slots:
        part = rng.choice(options)
        parts.append((slot, f"<{slot}:{sep}{part}>" if slot in optional else f"{sep}{part}"))
    tail = [p for p in parts if p[0] == last]
    parts = [p for p in parts if p[0] != last]
    rng.shuffle(parts)
    body = "".join(p for _, p in parts + tail).removeprefix(",")
    if layout == "terse":
        return rng.choice(intents) + body
    closer = "" if last else rng.choice(CLOSERS)  # nothing after a free-text phrase such as an e-mail body
    return rng.choice(OPENERS) + rng.choice(intents) + body + closer
