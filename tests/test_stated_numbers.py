"""``structgen.stated_numbers``: the numbers a request states, which a grounded number field may hold.

Numerals with separators and multipliers, number words, durations beside their minutes or days; the digits
of dates, clock times, offsets and addresses left out; hypothesis writes numbers the ways people do and
requires each to be read back.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.stated_numbers import WORDS, stated_numbers

HYP = settings(max_examples=80, deadline=None, derandomize=True, database=None)


def test_numerals_words_and_multipliers():
    text = "Volvo XC60, 117,000 km, 3 owners, asking €28,220.12, -5°C outside, a dozen eggs, 12k views"
    assert stated_numbers(text) == [117000, 3, 28220.12, -5, 12, 12000]
    assert stated_numbers("twenty-five people, seven seats, 2.5 million euros, 3-3 draw") == [25, 7, 2500000, 3]
    assert all(isinstance(v, int) for v in stated_numbers("3 and 117,000 and 12k"))
    assert stated_numbers("order 12345678901234567890") == [12345678901234567890]  # every digit kept
    # the end of a hyphenated word is no number; a range's second number is
    assert stated_numbers("host web-3, COVID-19, 2-3 people, -4 degrees") == [2, 3, -4]


def test_durations_state_their_minutes_or_days_beside_their_count():
    assert stated_numbers("for two hours") == [120, 2]
    assert stated_numbers("an hour and a half") == [90, 1.5]
    assert stated_numbers("half an hour") == [30, 0.5]
    assert stated_numbers("block 2h, then 1.5 hrs") == [120, 2, 90, 1.5]
    assert stated_numbers("half a day (4 hours)") == [240, 4]
    assert stated_numbers("for a quarter of an hour") == [15, 0.25]
    assert stated_numbers("staying two weeks") == [14, 2]


def test_dates_times_offsets_and_addresses_are_not_counts():
    text = ("Wednesday, September 29, 2027 from 12:15PM UTC+9, or 2027-03-19T08:00:00Z at 7:30 pm, "
            "cc mateo.berg62@example.com, party of three")
    assert stated_numbers(text) == [3]
    assert stated_numbers("at 4pm on January 1, 2026 for an hour") == [60, 1]
    assert stated_numbers("Sony A7, version v2, item #4") == [4]  # digits inside a word are no count
    assert stated_numbers("48.2kg, 282.4km; 3/5 stars") == [48.2, 282.4, 3, 5]  # a unit after them is fine
    assert stated_numbers("nothing numeric here") == []
    assert stated_numbers("no people were hurt") == [0]


@HYP
@given(st.integers(min_value=-10**9, max_value=10**9), st.sampled_from(["{:,}", "{}"]))
def test_a_written_integer_is_read_back(n, form):
    assert stated_numbers(f"the total was {form.format(n)} today") == [n]


@HYP
@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=99))
def test_a_written_decimal_is_read_back(whole, cents):
    assert stated_numbers(f"price {whole:,}.{cents:02d} EUR") == [round(whole + cents / 100, 10)]


@HYP
@given(st.sampled_from(sorted(WORDS)))
def test_a_number_word_is_read_back(word):
    assert stated_numbers(f"we are {word} in all") == [WORDS[word]]
    assert stated_numbers(f"We are {word.capitalize()} in all") == [WORDS[word]]
