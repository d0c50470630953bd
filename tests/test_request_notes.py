"""Request notes (structgen.request_notes): what they note, held to dateparser as an independent reader of
the same spans, and how a model that reads them encodes its prompts."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.request_notes import annotate, notes
from structgen.train.data import vocab as V

DATES = st.dates(min_value=dt.date(1990, 1, 1), max_value=dt.date(2099, 12, 31))


@pytest.mark.parametrize("text, expected", [
    ("Nudge me at 1:45 pm on the 24th of February 2027? Times are GMT-8.",
     "Nudge me at 1:45 pm (13:45) on the 24th of February 2027 (2027-02-24)? Times are GMT-8 (-08:00)."),
    ("at 11:30PM on Friday, September 18, 2026, UTC+9", "at 11:30PM (23:30) on Friday, September 18, 2026 "
     "(2026-09-18), UTC+9 (+09:00)"),
    ("Budget review // Mar 13, 2027 @ 11am", "Budget review // Mar 13, 2027 (2027-03-13) @ 11am (11:00)"),
    ("on 14 Jan 2027 from 6:15PM for 20 min", "on 14 Jan 2027 (2027-01-14) from 6:15PM (18:15) for 20 min"),
    ("at 9:05 UTC+5:30, 12 am GMT, noon UTC+0", "at 9:05 (09:05) UTC+5:30 (+05:30), 12 am (00:00) GMT (Z), "
     "noon UTC+0 (Z)"),
    # a sign is + - or −, nothing between them: the number after a bare zone name is not its offset
    ("GMT 58, UTC=3", "GMT (Z) 58, UTC (Z)=3"),
    ("At 18h UTC-5, or at 7h30 for 2h", "At 18h (18:00) UTC-5 (-05:00), or at 7h30 (07:30) for 2h"),
    ("Sept. 3 2027 and the 1st of may, 2030", "Sept. 3 2027 (2027-09-03) and the 1st of may, 2030 (2030-05-01)"),
])
def test_notes_written_beside_the_span(text, expected):
    assert annotate(text) == expected
    assert annotate(expected) == expected  # annotating twice changes nothing


@pytest.mark.parametrize("text", [
    "on 2027-03-13 at 14:00",  # already ISO
    "Feb 30, 2027 or June 31 2026",  # no such day
    "I may 3 apples by 2027", "for 3 days", "a 20 min call", "13pm", "I am 12", "for 2h", "at 25h", "v1:20",
    "see ./build/2025-03-03.log", "UTC+99", "UTC+", "",
])
def test_nothing_to_note(text):
    assert notes(text) == [] and annotate(text) == text


@given(d=DATES, form=st.integers(0, 7))
def test_every_spelled_date_of_the_training_data_is_noted(d, form):
    text = V.date_text(_ForcedChoice(form), d)
    if text == d.isoformat():
        assert annotate(text) == text
    else:
        assert annotate(f"on {text}.") == f"on {text} ({d.isoformat()})."


@given(h=st.integers(0, 23), m=st.integers(0, 59), style=st.sampled_from(["{h12}:{m:02d} {ap}", "{h12}:{m:02d}{AP}",
                                                                        "{h12} {ap}", "{h12}{ap}"]))
@settings(deadline=None)  # dateparser's first call loads its language data
def test_clock_times_agree_with_dateparser(h, m, style):
    dateparser = pytest.importorskip("dateparser")  # a dev dependency: the independent reader
    m = m if "{m" in style else 0
    h12, ap = (h % 12 or 12), ("am" if h < 12 else "pm")
    spoken = style.format(h12=h12, m=m, ap=ap, AP=ap.upper())
    (start, end, iso), = notes(f"at {spoken} sharp")
    assert iso == f"{h:02d}:{m:02d}"
    parsed = dateparser.parse(f"at {spoken} sharp"[start:end], languages=["en"])
    assert parsed is not None and parsed.strftime("%H:%M") == iso


@given(d=DATES, pattern=st.sampled_from(["{M} {d}, {y}", "{d} {M} {y}", "{Mon} {d} {y}", "the {o} of {M} {y}",
                                         "{W}, {M} {o}, {y}", "{Mon}. {d}, {y}", "{o} {Mon} {y}"]))
@settings(max_examples=60, deadline=None)  # dateparser takes ~20 ms a call
def test_dates_agree_with_dateparser(d, pattern):
    dateparser = pytest.importorskip("dateparser")
    month = V.MONTHS[d.month - 1]
    o = f"{d.day}{'th' if 11 <= d.day % 100 <= 13 else {1: 'st', 2: 'nd', 3: 'rd'}.get(d.day % 10, 'th')}"
    spoken = pattern.format(M=month, Mon=month[:3], d=d.day, y=d.year, o=o, W=d.strftime("%A"))
    text = f"Please book it for {spoken} if you can."
    (start, end, iso), = notes(text)
    assert iso == d.isoformat()
    parsed = dateparser.parse(text[start:end], languages=["en"], settings={"PREFER_DAY_OF_MONTH": "first"})
    assert parsed is not None and parsed.date() == d


def test_utc_offsets_of_the_training_data():
    for value, names in V.ZONES:
        for name in names:
            assert notes(f"times are {name}.") == [(10, 10 + len(name), value)], name


def test_versions():
    from structgen.errors import ConfigError, ModelLoadError
    from structgen.models.hf_mlm import notes_version
    from structgen.request_notes import VERSION

    text = "on May 2, 2027"
    assert annotate(text, 0) == text and annotate(text, VERSION) == annotate(text) != text
    for bad in (VERSION + 1, -1, "1", True):
        with pytest.raises(ConfigError, match="unknown to this structgen"):
            notes(text, bad)
    # a config.json says true (the first version), a number, or nothing
    assert [notes_version(v, "m") for v in (None, False, 0, True, 1)] == [0, 0, 0, 1, 1]
    with pytest.raises(ModelLoadError, match="m: request notes version 2 is unknown.*upgrade structgen"):
        notes_version(2, "m")


def test_a_model_that_reads_notes_encodes_them_and_the_trainer_agrees(tok4k):
    from structgen.models.random_logits import RandomLogits
    from structgen.train.batches import PromptEncoder

    plain = RandomLogits(tok4k)
    noted = RandomLogits(tok4k)
    noted.request_notes = 1
    prompt = "Remind me on March 3, 2027 at 5 pm UTC+1."
    assert noted.encode_prompt(prompt) == plain.encode_prompt(annotate(prompt))
    assert plain.encode_prompt(prompt) != noted.encode_prompt(prompt)
    chat = [{"role": "system", "content": "Dates like March 3, 2027 are examples."},
            {"role": "user", "content": prompt}]
    assert noted.with_notes(chat) == [chat[0], {"role": "user", "content": annotate(prompt)}]
    enc = PromptEncoder(tok4k, request_notes=1)
    assert enc.encode_prompts([prompt, "no dates here"]) == [noted.encode_prompt(prompt),
                                                             noted.encode_prompt("no dates here")]


class _ForcedChoice(random.Random):
    """A ``random.Random`` whose ``choice`` returns item ``i`` (to walk every surface form of ``date_text``)."""

    def __init__(self, i: int):
        super().__init__(0)
        self.i = i

    def choice(self, seq):
        return seq[self.i % len(seq)]
