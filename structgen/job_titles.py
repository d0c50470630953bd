"""Job titles: which of a request's capitalised names is a person's job, not a person or an organisation.

An e-mail signature or a contact card writes a person, their job and their organisation as three
capitalised names in a row ("Dana Ivanova | CTO | Nordwind GmbH", "Head of Sales, Acme Corp"), and a small
model mixes them up: ``"title": "Nordwind GmbH"``, ``"position": "M"`` (of "M: dana@..."), ``"company":
"Sales"``. A job title is told apart by its words (``job_title``): it ends with a word that names a job
(``JOB_WORDS``: "Project Manager", "Lead Designer", "CTO") or is such a word with its field ("Head of
Sales", "Director of Engineering").

An object with a job field (``job_field``: ``job_title``, ``position``, ``occupation``; ``title`` and
``role`` only beside a person's or an organisation's field, since an event or a book has a title too)
whose request writes at least one job title gets:

* the job field, free text or a choice of names, as a choice of the request's job titles (the longest:
  not "Head" of "Head of Sales");
* a bare ``name`` field, otherwise free text, as a person's name (``structgen.proper_names``, as
  ``full_name``);
* each other field that is a choice of the request's proper names (``company``, ``sender``, ``full_name``)
  no name the request writes only inside a job title, the shortest where one title starts another (no
  ``company`` "Sales"; "Société Lumière" of "Head of Sales Société Lumière" stays), where it keeps one to
  write (``EXCLUDE_KEY``).

A request that writes no job title leaves every field as it was. The words are English ones.
"""

from __future__ import annotations

import re

from .proper_names import NAME_QUALIFIERS, PERSON_WORDS, key_words, proper_names, word_places

__all__ = ["JOB_WORDS", "job_title", "job_titles", "job_field", "split_jobs"]

_ACRONYM = re.compile(r"(?<!\w)[A-Z]{2,4}(?!\w)")

#: words a job title ends with ("Project Manager", "CTO") or that take "of" and a field ("Head of Sales")
JOB_WORDS = frozenset("""manager director officer engineer designer developer programmer analyst consultant
    architect scientist researcher specialist coordinator administrator assistant associate accountant
    advisor adviser editor writer journalist president founder cofounder co-founder partner lead head chief
    executive supervisor representative strategist recruiter technician intern secretary clerk nurse teacher
    lecturer professor dean attorney lawyer counsel paralegal principal chair chairman chairwoman chairperson
    treasurer owner buyer planner producer marketer salesperson controller auditor inspector surveyor
    pharmacist therapist physician surgeon dentist librarian ceo cto cfo coo cio cmo cpo cso ciso
    vp svp evp avp md gm""".split())
#: key words of a job field; ``title`` and ``role`` count only beside a person's or an organisation's field
JOB_KEYS = frozenset("job position occupation designation profession".split())
SHARED_KEYS = frozenset("title role".split())
#: key words of a field that holds a person or an organisation (what makes ``title`` a job's)
HOLDER_KEYS = PERSON_WORDS | NAME_QUALIFIERS | frozenset("""name sender company organisation organization
    employer firm business agency signatory""".split())
#: key words that make a title no job's ("course_title", "event_role")
NOT_JOB_KEYS = frozenset("""course book event song movie film album article paper project task page post product
    item meeting talk session chapter show episode file user""".split())


def job_title(name: str) -> bool:
    """Whether a proper name reads as a job title (module doc): its last word names a job, or a job word is
    followed by "of" and one or two words."""
    words = [w.strip(".,").lower() for w in name.split()]
    if not words:
        return False
    if words[-1] in JOB_WORDS:
        return True
    at = words.index("of") if "of" in words else -1
    return at >= 1 and words[at - 1] in JOB_WORDS and 1 <= len(words) - at - 1 <= 2


def job_titles(source: str) -> list[str]:
    """The job titles ``source`` writes (module doc), in order of first appearance: a label's included
    ("Product Manager: requires Excel"), and a job's acronym in capitals wherever it stands ("Dana | CTO |
    Nordwind", which ``proper_names`` reads as a heading); less a title every place of which is inside a
    longer one ("Manager" of "Project Manager", "Head" of "Head of Sales"; not "Head of Sales" of "Head of
    Sales Globex", whose last word may be the organisation's)."""
    found = [n for n in proper_names(source.replace(":", ",")) if job_title(n)]
    found += [m.group(0) for m in _ACRONYM.finditer(source) if m.group(0).lower() in JOB_WORDS]
    places = {n: word_places(n, source) for n in dict.fromkeys(found)}
    jobs = sorted(places, key=lambda n: min((a for a, _ in places[n]), default=len(source)))

    def covered(n: str, a: int, b: int) -> bool:
        return any(len(m) > len(n) and not (" of " in n and m.startswith(n)) and x <= a and b <= y
                   for m in jobs for x, y in places[m])

    return [n for n in jobs if any(not covered(n, a, b) for a, b in places[n])]


def job_field(properties: dict) -> str | None:
    """The one property of ``properties`` that holds a job title (module doc), or None."""
    names = [k for k in properties if isinstance(k, str)]
    holders = any(set(key_words(k)) & HOLDER_KEYS and not set(key_words(k)) & (JOB_KEYS | SHARED_KEYS)
                  for k in names)
    jobs = [k for k in names if not set(key_words(k)) & NOT_JOB_KEYS
            and (set(key_words(k)) & JOB_KEYS or (holders and set(key_words(k)) & SHARED_KEYS))]
    return jobs[0] if len(jobs) == 1 else None


def _inside(value: str, jobs: list[str], source: str) -> bool:
    """Whether ``source`` writes ``value`` only where it overlaps one of ``jobs``."""
    spans = [p for j in jobs for p in word_places(j, source)]
    places = word_places(value, source)
    return bool(places) and all(any(a < y and x < b for x, y in spans) for a, b in places)


def split_jobs(properties: dict, source: str) -> dict:
    """``properties`` (marked by ``ground_schema``, spans chosen) with the job field a choice of the
    request's job titles and the other name fields ruled out of them (module doc); unchanged where the object
    has no job field or the request writes no job title."""
    from .constraints.quote_automaton import is_quoted
    from .grounding import GROUND_KEY, STATED_KEY, quotable, stated_for
    from .roles import rule_out
    from .stated_spans import KIND_KEY, SPANS_KEY, spans_field

    key = job_field(properties)
    node = properties.get(key)
    if key is None or not isinstance(node, dict) or not (GROUND_KEY in node or node.get(KIND_KEY) == "name"):
        return properties
    lo, hi = node.get("minLength", 0), node.get("maxLength")
    jobs = [j for j in job_titles(source) if len(j) >= lo and (hi is None or len(j) <= hi)
            and is_quoted(j, quotable(source))]
    if not jobs:
        return properties
    out = dict(properties)
    rest = {k: v for k, v in node.items() if k not in (GROUND_KEY, STATED_KEY, SPANS_KEY, KIND_KEY)}
    out[key] = {**rest, STATED_KEY: source, SPANS_KEY: jobs, KIND_KEY: "job title"}
    shortest = [j for j in jobs if not any(k != j and j.startswith(k + " ") for k in jobs)]  # not "Head of Sales X"
    for other, sub in properties.items():
        if isinstance(other, str) and key_words(other) == ["name"] and isinstance(sub, dict) and GROUND_KEY in sub:
            sub = spans_field("full_name", sub, source) or sub  # beside a job, a bare name is a person's
            out[other] = sub
        if other != key and isinstance(sub, dict) and STATED_KEY in sub and sub.get(KIND_KEY) == "name":
            values = [v for v in stated_for(sub, source) if isinstance(v, str)]
            out[other] = rule_out(sub, values, [v for v in values if _inside(v, shortest, source)])
    return out
