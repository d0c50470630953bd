"""Tool calls: a user request -> ``{"name": ..., "arguments": {...}}`` for one of examples/tools.py's TOOLS.

Each tool has a value maker (random arguments and the surface forms a request may use for them: cities
with or without their IATA code, dates in several explicit spellings, 12- or 24-hour times, amounts with
symbols, currency names, durations in words) and a table of templates whose phrasings state some optional
arguments and not others; an argument the request does not state is left out of the call, so its default
applies. The prompt is the request alone: ``ToolCallSpec.render_prompt`` adds the tools. Targets are the
canonical JSON (:func:`base.canonical_json`) with arguments in the tool schema's property order.
Besides the table, each tool has two training templates whose phrasing is composed per example from
argument phrases in random order (``tool_composed.py``).

The held-out split always lists every tool (as ``gen.tool_call(prompt, tools=TOOLS)`` does); a share
(``SUBSET_SHARE``) of training examples lists only the called tool and up to three others, which shortens
the prompt (the full block is the longest part of any training row) and makes the model read the list.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

from structgen.errors import SpecError

from . import tool_composed
from . import vocab as V
from .base import Registry, Template, ValueSource, canonical_json, example_file, generate, ordered, say

FAMILY = "tool"
REG = Registry(FAMILY)


@functools.lru_cache(maxsize=1)
def tools() -> tuple:
    """The example tools (``TOOLS`` of examples/tools.py, loaded by path)."""
    from structgen.agent.tools import load_tools

    return load_tools(example_file("tools.py", "the tool-call data"))


@functools.lru_cache(maxsize=1)
def spec():
    """The ``ToolCallSpec`` of every example (one instance: its constraint compiles once)."""
    from structgen.agent.tools import tool_call_spec

    return tool_call_spec(tools())


#: share of *training* examples whose prompt lists only a subset of the tools (the called one and 0-3 others,
#: in TOOLS order): a shorter prompt, and the model learns to read the tool list rather than memorise it.
#: Held-out examples always list every tool, as ``gen.tool_call(prompt, tools=TOOLS)`` does.
SUBSET_SHARE = 0.6


@functools.lru_cache(maxsize=None)
def subset_spec(names: frozenset):
    """The ``ToolCallSpec`` over the example tools named in ``names`` (in TOOLS order)."""
    from structgen.agent.tools import tool_call_spec

    return tool_call_spec([t for t in tools() if t.name in names])


def _spec_for(tool: str, split: str, rng: random.Random):
    if split != "train" or rng.random() >= SUBSET_SHARE:
        return spec()
    others = [t.name for t in tools() if t.name != tool]
    return subset_spec(frozenset([tool, *rng.sample(others, rng.randint(0, 3))]))


def _p(rng: random.Random, p: float) -> bool:
    return rng.random() < p


# ---------------------------------------------------------------------------------------- value makers
def _weather(rng, days=0.4, unit=0.35):
    c = V.city(rng).name
    a, s = {"city": c}, {"city": c}
    if _p(rng, unit):
        a["unit"] = u = rng.choice(tuple(V.UNITS))
        s["unit"] = rng.choice(V.UNITS[u])
    if _p(rng, days):
        a["days"] = n = rng.randint(2, 14)
        s["days"] = V.count_text(rng, n)
    return a, s


_TITLES = ("Budget review", "Dentist", "Sprint planning", "Lunch with Ana", "1:1 with Søren", "Yoga class",
           "Quarterly all-hands", "Café Müller tasting", "Project kickoff", "Parent-teacher meeting",
           "Design critique", "Car service", "Interview: data analyst", "Book club", "Flat viewing in Köln")


def _emails(rng, lo, hi):
    return [V.email(rng) for _ in range(rng.randint(lo, hi))]


def _event(rng, dur=0.5, att=0.5):
    d = V.date(rng)
    t, tt = V.time_of_day(rng, 15, 7, 20)
    title = rng.choice(_TITLES)
    a = {"title": title, "date": d.isoformat(), "start_time": t}
    s = {"title": title, "date": V.date_text(rng, d), "time": tt}
    if _p(rng, dur):
        a["duration_minutes"] = m = rng.choice(tuple(V.DURATIONS))
        s["dur"] = rng.choice(V.DURATIONS[m])
    if _p(rng, att):
        a["attendees"] = people = _emails(rng, 1, 4)
        s["att"] = V.join_list(rng, people)
    return a, s


_SUBJECTS = ("Q2 numbers", "Lunch on Friday?", "Invoice INV-2026-0042", "Welcome aboard!", "Flight change",
             "Meeting notes", "Your order has shipped", "Reunião de equipe", "Rückruf erbeten", "Thank you",
             "Draft contract for review", "Schedule for the Zürich trip")
_BODIES = ("See you at noon at Café Müller.", "The report is attached; please send comments by Monday.",
           "Thanks for your help with the launch, it went great.", "Can we move our call to 3 pm?",
           "I will be out of office until the 14th.", "Please find the updated figures below.",
           "Could you confirm the booking for two nights?", "Happy birthday! Hope you have a wonderful day.",
           "The build is green again, you can deploy.", "Let's meet in Kraków next month to plan the trip.",
           "Olá! Segue o documento que pediste.", "Danke für das Treffen gestern.")


def _email(rng, lo=1, hi=4):
    to = _emails(rng, lo, hi)
    subj, body = rng.choice(_SUBJECTS), rng.choice(_BODIES)
    if _p(rng, 0.3):
        body += " " + rng.choice(_BODIES)
    return {"to": to, "subject": subj, "body": body}, {"to": V.join_list(rng, to), "subject": subj, "body": body}


def _airport(rng, c, style=None):
    style = style or rng.choice(("paren", "paren", "code", "city", "both"))
    return {"paren": f"{c.name} ({c.iata})", "code": c.iata, "city": c.name, "both": f"{c.name} {c.iata}"}[style]


def _flight(rng, pax=0.45, cabin=0.4, style=None):
    o, d = V.two_cities(rng)
    day = V.date(rng)
    a = {"origin": o.iata, "destination": d.iata, "date": day.isoformat()}
    s = {"o": _airport(rng, o, style), "d": _airport(rng, d, style), "date": V.date_text(rng, day),
         "ocity": o.name, "dcity": d.name}
    if _p(rng, pax):
        a["passengers"] = n = rng.randint(1, 9)
        s["pax"] = V.count_text(rng, n)
    if _p(rng, cabin):
        a["cabin"] = c = rng.choice(tuple(V.CABINS))
        s["cab"] = rng.choice(V.CABINS[c])
    return a, s


_TASKS = ("call mom", "pay the rent", "water the plants", "submit the report to Zoë", "renew my passport",
          "pick up the dry cleaning", "book the dentist", "send the invoice to Globex", "take my medication",
          "buy a gift for Amélie", "check in for the flight to São Paulo", "back up the laptop")


def _reminder(rng):
    d = V.date(rng)
    t, tt = V.time_of_day(rng, 5, 6, 23)
    off, names = rng.choice(V.ZONES)
    task = rng.choice(_TASKS)
    a = {"text": task, "at": f"{d.isoformat()}T{t}:00{off}"}
    return a, {"task": task, "date": V.date_text(rng, d), "time": tt, "tz": rng.choice(names)}


_TARGETS = ("EUR", "USD", "GBP", "JPY", "CHF", "SEK", "PLN", "BRL", "INR", "CAD", "NOK", "MXN")


def _currency(rng):
    src, dst = rng.sample(_TARGETS, 2)
    amt = V.amount(rng, 1, 20000)
    names = next(c[1] for c in V.CURRENCIES if c[0] == dst)
    return ({"amount": amt, "from_currency": src, "to_currency": dst},
            {"amt": V.money_text(rng, amt, src), "to": rng.choice(names)})


_DIRS = ("/tmp", "~/Downloads", "./build", "/var/log/app", "~/Documents/drafts", "/home/ana/projects/old",
         "C:\\Users\\Søren\\Desktop", "D:\\backup\\2025", "~/Pictures/Kraków trip")
_FILES = ("report_2026.csv", "old invoice.pdf", "cache.bin", "2025-03-03.log", "Résumé José.pdf",
          "notes.txt", "temp-export.json", "IMG_0042.jpg", "draft_v3.docx", "dump.sql", "budget (copy).xlsx")


def _file(rng):
    d = rng.choice(_DIRS)
    path = d + ("\\" if "\\" in d else "/") + rng.choice(_FILES)
    return {"path": path}, {"path": path}


#: per tool: argument -> the request slots its value is rendered from (the pointer targets of a call)
ARG_SLOTS: dict[str, dict[str, tuple[str, ...]]] = {
    "get_weather": {"city": ("city",), "unit": ("unit",), "days": ("days",)},
    "create_event": {"title": ("title",), "date": ("date",), "start_time": ("time",), "duration_minutes": ("dur",)},
    "send_email": {"subject": ("subject",), "body": ("body",)},
    "search_flights": {"origin": ("o",), "destination": ("d",), "date": ("date",), "passengers": ("pax",),
                       "cabin": ("cab",)},
    "set_reminder": {"text": ("task",), "at": ("date", "time", "tz")},
    "convert_currency": {"amount": ("amt",), "from_currency": ("amt",), "to_currency": ("to",)},
    "delete_file": {"path": ("path",)},
}


def _sources(tool: str, args: dict, slots: dict) -> tuple[ValueSource, ...]:
    """The tool's name (``ValueSource.tool_name``: its own line of the prompt's tool list; its copy gate is
    0.00 in runs 11 and 25, so choosing the tool is the pointer finding the right entry), then each scalar
    argument's request text (``ARG_SLOTS``); lists (recipients, attendees) are left out."""
    return (ValueSource.tool_name(tool),) + tuple(
        ValueSource.of(arg, args[arg], *(slots.get(s) for s in names))
        for arg, names in ARG_SLOTS[tool].items() if arg in args and not isinstance(args[arg], list))


MAKERS = {"get_weather": _weather, "create_event": _event, "send_email": _email, "search_flights": _flight,
          "set_reminder": _reminder, "convert_currency": _currency, "delete_file": _file}


# ---------------------------------------------------------------------------------------------- templates
# (tool, id, split, maker keywords, phrasings). Every phrasing of a template guards each optional argument
# its maker may state with <slot:...>, or the maker's probability for it is 0 (checked at render time).
W, E, M, F, R, C, D = ("get_weather", "create_event", "send_email", "search_flights", "set_reminder",
                       "convert_currency", "delete_file")
TABLE: tuple[tuple[str, str, str, dict, tuple[str, ...]], ...] = (
    (W, "ask", "train", {}, ("What's the weather [like|] in {city}<days: for the next {days} days><unit: in {unit}>?",
                             "How's the weather in {city}<days: over the next {days} days><unit:, in {unit}>?")),
    (W, "forecast", "train", {"days": 1.0}, ("{days}-day forecast for {city}<unit:, {unit} please>.",
                                             "Give me a {days} day forecast for {city}<unit: in {unit}>.")),
    (W, "rain", "train", {}, ("Will it rain in {city}<days: in the next {days} days>?<unit: Temperatures in {unit}.>",
                              "Do I need an umbrella in {city}<days: over the coming {days} days>?<unit: Use {unit}.>")),
    (W, "terse", "train", {}, ("weather {city}<days: {days} days><unit: {unit}>", "{city} weather<unit: {unit}><days:, {days} days>")),
    (W, "trip", "train", {}, ("I'm heading to {city}<days: for {days} days> - how warm is it there<unit: in {unit}>?",
                              "Travelling to {city}<days: for {days} days>. What's the weather going to be<unit: (in {unit})>?")),
    (W, "temp", "train", {"days": 0.0}, ("How cold is it in {city} right now<unit:, in {unit}>?",
                                         "Current temperature in {city}<unit: in {unit}>, please.")),
    (W, "h.relative", "heldout", {}, ("My parents live in {city}. Could you check what the sky looks like over there<days: for the following {days} days><unit:, with temperatures in {unit}>?",)),
    (W, "h.packing", "heldout", {}, ("Need to pack for {city}<days: - staying {days} days>. Temperature outlook<unit: in {unit}> pls",)),
    (E, "schedule", "train", {}, ('Schedule "{title}" on {date} at {time}<dur: for {dur}><att: with {att}>.',
                                  "Schedule {title} for {date} at {time}<dur:, {dur} long><att:, and invite {att}>.")),
    (E, "create", "train", {}, ("Create a calendar event called {title} on {date}, starting at {time}<dur:, lasting {dur}><att:; invite {att}>.",)),
    (E, "put", "train", {}, ("Put {title} in my calendar: {date} {time}<dur:, {dur}><att:, attendees {att}>",
                             "Add to calendar - {title} - {date} at {time}<dur: - {dur}><att: - with {att}>")),
    (E, "add", "train", {}, ("Add an event on {date} at {time}: {title}<att: (invite {att})>.<dur: It takes {dur}.>",)),
    (E, "slot", "train", {"dur": 1.0}, ("Block out {dur} on {date} at {time} for {title}<att: with {att}>.",
                                        "Reserve {dur} on {date} from {time} for {title}<att:, invite {att}>.")),
    (E, "meeting", "train", {"att": 1.0}, ("Set up a meeting '{title}' with {att} at {time} on {date}<dur: for {dur}>.",
                                           "Invite {att} to {title} on {date} at {time}<dur: ({dur})>.")),
    (E, "h.block", "heldout", {}, ("Can you block my calendar on {date} from {time}<dur: for {dur}>? It's for {title}.<att: Please send invites to {att} as well.>",)),
    (E, "h.notation", "heldout", {}, ("{title} // {date} @ {time}<dur: // {dur}><att: // guests: {att}>",)),
    (M, "email", "train", {}, ('Email {to} with the subject "{subject}" and say: {body}',
                               'Email {to}, subject "{subject}": {body}')),
    (M, "send", "train", {}, ("Send an email to {to}. Subject: {subject}. Body: {body}",)),
    (M, "write", "train", {}, ("Write to {to} - subject '{subject}', message: \"{body}\"",)),
    (M, "mail", "train", {}, ('Please send {to} a mail titled "{subject}": {body}', 'Mail {to}: "{subject}" / {body}')),
    (M, "headers", "train", {}, ("Send this email.\nTo: {to}\nSubject: {subject}\n\n{body}", "To: {to}\nSubject: {subject}\n{body}")),
    (M, "message", "train", {}, ('Message {to} about "{subject}" with the text: {body}',
                                 'Send a message to {to} with subject {subject} saying "{body}"')),
    (M, "h.letknow", "heldout", {}, ('Let {to} know "{body}" - and put "{subject}" in the subject line.',)),
    (M, "h.note", "heldout", {}, ("Shoot a quick note over to {to} (re: {subject}) that says: {body}",)),
    (F, "find", "train", {}, ("Find flights from {o} to {d} on {date}<pax: for {pax} passengers><cab: in {cab}>.",
                              "Find me a flight from {o} to {d} on {date}<cab:, {cab}><pax:, {pax} people>.")),
    (F, "search", "train", {}, ("Search flights {o} to {d}, {date}<pax:, {pax} adults><cab:, {cab}>",)),
    (F, "need", "train", {}, ("I need to fly from {o} to {d} on {date}<cab:, {cab} please>.<pax: We are {pax}.>",)),
    (F, "terse", "train", {}, ("{o} to {d} {date}<pax: x{pax}><cab: {cab}>", "flights {o}-{d} {date}<cab: {cab}><pax: {pax} pax>")),
    (F, "any", "train", {}, ("Are there any flights from {o} to {d} on {date}<pax: for {pax} people><cab: in {cab}>?",)),
    (F, "seats", "train", {"pax": 1.0}, ("Look up {pax} seats<cab: in {cab}> on a flight from {o} to {d} for {date}.",
                                         "Book {pax} tickets<cab: in {cab}> from {o} to {d} on {date}.")),
    (F, "h.meeting", "heldout", {"style": "paren"}, ("My meeting is in {d} on {date} and I'm based in {o}. What flights are there?<pax: There will be {pax} of us.><cab: It's a work trip, so {cab}.>",)),
    (F, "h.outof", "heldout", {}, ("Flying out of {o} on {date}, heading to {d}<cab:, {cab} if possible><pax:, party of {pax}> - what's available?",)),
    (R, "remind", "train", {}, ("Remind me to {task} on {date} at {time} {tz}.",)),
    (R, "set", "train", {}, ("Set a reminder for {date}, {time} ({tz}): {task}",)),
    (R, "at", "train", {}, ("At {time} {tz} on {date} remind me to {task}.",)),
    (R, "terse", "train", {}, ("reminder: {task} - {date} {time} {tz}", "remind {task} {date} {time} {tz}")),
    (R, "forget", "train", {}, ("Don't let me forget to {task}! {date} at {time} {tz}.",)),
    (R, "ping", "train", {}, ("Please ping me on {date} at {time} {tz} to {task}.", "Alert me to {task} on {date}, {time} {tz}.")),
    (R, "h.nudge", "heldout", {}, ("I have to {task}. Can you nudge me at {time} on {date}? Times are {tz}.",)),
    (R, "h.note", "heldout", {}, ("{date} / {time} {tz} :: {task} (reminder)",)),
    (C, "convert", "train", {}, ("Convert {amt} to {to}.",)),
    (C, "howmuch", "train", {}, ("How much is {amt} in {to}?",)),
    (C, "worth", "train", {}, ("What's {amt} worth in {to}?",)),
    (C, "terse", "train", {}, ("{amt} in {to}", "{amt} to {to}?")),
    (C, "exchange", "train", {}, ("Exchange {amt} into {to}, please.",)),
    (C, "have", "train", {}, ("I have {amt}. How many {to} is that?",)),
    (C, "h.bill", "heldout", {}, ("My hotel bill came to {amt}; what does that come to in {to}?",)),
    (C, "h.quote", "heldout", {}, ("Quote me the {to} equivalent of {amt}.",)),
    (D, "delete", "train", {}, ("Delete {path}", "Delete the file {path}.")),
    (D, "remove", "train", {}, ("Remove the file {path}.", "Remove {path} please")),
    (D, "getrid", "train", {}, ("Please get rid of {path}",)),
    (D, "rm", "train", {}, ("rm {path}", "del {path}")),
    (D, "can", "train", {}, ("Can you delete the file at {path}?",)),
    (D, "erase", "train", {}, ("Erase `{path}` from disk.",)),
    (D, "h.trash", "heldout", {}, ("{path} is no longer needed - trash it.",)),
    (D, "h.cleanup", "heldout", {}, ("Clean-up time: the file {path} should go away permanently.",)),
)
_OPTIONAL = ("unit", "days", "dur", "att", "pax", "cab")  # slots of optional arguments


def call_target(spec, name: str, arguments: dict) -> tuple[dict, str]:
    """A call of ``name`` as a target: ``(call, canonical text)``, arguments in the tool schema's order
    (``spec`` is the ``ToolCallSpec`` that lists the tool; an unknown name raises ``SpecError``)."""
    call = {"name": name, "arguments": ordered(arguments, spec.tool(name).schema)}
    return call, canonical_json(call)


def _register(tool: str, id: str, split: str, kw: dict, patterns: tuple[str, ...] | Callable) -> None:
    """``patterns``: the phrasings, or ``fn(rng) -> phrasing`` that builds one per example."""
    def render(rng: random.Random):
        args, slots = MAKERS[tool](rng, **kw)
        text = say(rng, patterns(rng) if callable(patterns) else patterns, slots)
        missing = [k for k in _OPTIONAL if slots.get(k) is not None and str(slots[k]) not in text]
        if missing:
            raise SpecError(f"template tool.{tool}.{id} states an argument its text does not mention "
                            f"({', '.join(missing)}); guard it with <slot:...> in every phrasing")
        sp = _spec_for(tool, split, rng)
        call, target = call_target(sp, tool, args)
        return text, target, call, sp, _sources(tool, args, slots)

    REG.add(Template(f"tool.{tool}.{id}", FAMILY, split, render))


for _row in TABLE:
    _register(*_row)
for _tool in MAKERS:  # phrasings composed per example (tool_composed.py)
    for _layout in ("sentence", "terse"):
        _register(_tool, f"composed_{_layout}", "train", {},
                  functools.partial(tool_composed.phrasing, tool=_tool, layout=_layout, optional=_OPTIONAL))

TRAIN_TEMPLATES = REG.train
HELDOUT_TEMPLATES = REG.heldout


def examples(split: str, n: int, seed: int = 0):
    """``n`` tool-call examples of ``split`` ("train" or "heldout")."""
    return generate(FAMILY, split, REG.split(split), n, seed)
