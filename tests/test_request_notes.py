"""Request notes (structgen.request_notes): what they note, held to dateparser as an independent reader of
the same spans, and how a model that reads them encodes its prompts."""

from __future__ import annotations

import datetime as dt
import random
import re

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
def test_version_1_notes_written_beside_the_span(text, expected):
    assert annotate(text, 1) == expected
    assert annotate(expected, 1) == expected  # annotating twice changes nothing


@pytest.mark.parametrize("text, expected", [
    ("Convert $7,441 into Swedish kronor", "Convert $7,441 (7441 USD) into Swedish kronor (SEK)"),
    ("how many yen is €82.40?", "how many yen (JPY) is €82.40 (82.4 EUR)?"),
    ("1,250.00 Norwegian kroner -> CAD, 82.40 EUR, 12 USD", "1,250.00 Norwegian kroner (1250 NOK) -> CAD, 82.40 EUR "
     "(82.4 EUR), 12 USD"),
    # one date, one time and one offset: the offset's note is the whole date-time
    ("Nudge me at 1:45 pm on the 24th of February 2027? Times are GMT-8.",
     "Nudge me at 1:45 pm (13:45) on the 24th of February 2027 (2027-02-24)? Times are GMT-8 "
     "(2027-02-24T13:45:00-08:00)."),
    ("at noon UTC on Mar 3, 2027", "at noon (12:00) UTC (2027-03-03T12:00:00Z) on Mar 3, 2027 (2027-03-03)"),
    # two times: no date-time is put together
    ("at 9:05 UTC+5:30, 12 am GMT, noon UTC+0", "at 9:05 (09:05) UTC+5:30 (+05:30), 12 am (00:00) GMT (Z), "
     "noon (12:00) UTC+0 (Z)"),
    # quoted text is left as it stands
    ('Email a@b.org, subject "Lunch at 3 pm, $20 each": see you at 3 pm',
     'Email a@b.org, subject "Lunch at 3 pm, $20 each": see you at 3 pm (15:00)'),
])
def test_version_2_notes(text, expected):
    assert annotate(text, 2) == expected
    assert annotate(expected, 2) == expected


@pytest.mark.parametrize("text", ["£3.5m", "100 eur", "12 USD", "USD 500", "v$1", "a midnight-blue coat",
                                  "Lunch at noonday"])
def test_version_2_leaves_alone(text):
    assert annotate(text, 2) == text


def test_version_1_is_kept_as_it_was():
    """A model keeps the notes it learnt: version 2's rules do not reach a version-1 model's prompts."""
    text = 'Convert $7,441 to yen at noon "on May 3, 2027" at 1 pm UTC+1 on Jun 1, 2027'
    assert annotate(text, 1) == ('Convert $7,441 to yen at noon "on May 3, 2027 (2027-05-03)" at 1 pm (13:00) '
                                 'UTC+1 (+01:00) on Jun 1, 2027 (2027-06-01)')


@given(amount=st.one_of(st.integers(1, 10**6), st.decimals(min_value="0.01", max_value="999999.99", places=2)),
       currency=st.sampled_from(V.CURRENCIES), seed=st.integers(0, 10**6))
def test_every_amount_the_training_data_writes_is_noted(amount, currency, seed):
    amount = float(amount) if not isinstance(amount, int) else amount
    text = V.money_text(random.Random(seed), amount, currency[0])
    found = notes(f"convert {text} please")
    if text == f"{amount:g} {currency[0]}" or not found:  # already its own note ("12 USD")
        assert annotate(text) == text and text.endswith(currency[0])
        return
    (_, _, note), = found
    number, code = note.split(" ")
    assert code == currency[0] and float(number) == amount


def test_every_currency_name_of_the_training_data_is_noted():
    for code, names, _ in V.CURRENCIES:
        for name in names:
            expected = [] if name == code else [(5, 5 + len(name), code)]
            assert notes(f"into {name}.") == expected, name


def test_the_notes_hold_the_gold_values_of_reminders_and_conversions():
    """Over the generated tool calls, version 2's notes carry each reminder's whole ``at`` and each
    conversion's amount and currencies, so the model can copy them."""
    from structgen.train.data import examples as family_examples

    seen = {"set_reminder": 0, "convert_currency": 0}
    for split in ("train", "heldout"):
        for ex in family_examples("tool", split, 300, seed=7):
            if ex.gold["name"] not in seen:
                continue
            seen[ex.gold["name"]] += 1
            text = annotate(ex.prompt if isinstance(ex.prompt, str) else ex.prompt[-1]["content"])
            args = ex.gold["arguments"]
            if ex.gold["name"] == "set_reminder":
                assert f"({args['at']})" in text, text
            else:
                amounts = re.findall(r"(?<![\d.,])(\d+(?:\.\d+)?) ([A-Z]{3})\b", text)  # as notes write them
                assert (args["amount"], args["from_currency"]) in [(float(n), c) for n, c in amounts], text
                assert re.search(rf"\b{args['to_currency']}\b", text), text
    assert min(seen.values()) > 10


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
    assert notes_version(2, "m") == 2
    with pytest.raises(ModelLoadError, match="m: request notes version 3 is unknown.*upgrade structgen"):
        notes_version(3, "m")


def test_a_model_that_reads_notes_encodes_them_and_the_trainer_agrees(tok4k):
    from structgen.models.random_logits import RandomLogits
    from structgen.train.batches import PromptEncoder

    plain = RandomLogits(tok4k)
    noted = RandomLogits(tok4k)
    noted.request_notes = 1
    prompt = "Remind me on March 3, 2027 at 5 pm UTC+1."
    assert noted.encode_prompt(prompt) == plain.encode_prompt(annotate(prompt, 1)) != plain.encode_prompt(
        annotate(prompt, 2))
    assert plain.encode_prompt(prompt) != noted.encode_prompt(prompt)
    chat = [{"role": "system", "content": "Dates like March 3, 2027 are examples."},
            {"role": "user", "content": prompt}]
    assert noted.with_notes(chat) == [chat[0], {"role": "user", "content": annotate(prompt, 1)}]
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
