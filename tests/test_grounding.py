"""Grounded strings (``generate(..., ground=True)``): every free-text value is a part of the request.

The suffix automaton against Python's ``in``; which subschemas a schema marks (numbers among them); the token automaton's
product, walked token by token (substrings in, anything else out, escapes as JSON writes them); random
logits through real grounded constraints (every released value is quoted from the source); the validator's
keyword; the generator's errors; the eval's grounded mode.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.constraints.quote_automaton import QuoteAutomaton, SuffixAutomaton, escaped, is_quoted, word_starts
from structgen.errors import ConfigError
from structgen.grounding import (GROUND_KEY, STATED_KEY, Grounded, emails_in, ground_schema, source_of, source_text,
                                 quotable, stated_for, stated_values)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from tools import TOOLS  # noqa: E402

HYP = settings(max_examples=60, deadline=None, derandomize=True, database=None,
               suppress_health_check=[HealthCheck.too_slow])
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 130},
                                           "city": {"type": "string"}},
          "required": ["name", "age", "city"], "additionalProperties": False}
REQUEST = 'Maria Lopez, 41, lives in Porto. Notes: "C:\\Users\\Søren\\plan.txt" (draft)'
#: a bare ``name`` beside no field only a person has stays free text (``proper_names.person_key``): the parts
#: of the request that are whole words, which the quote automaton holds
ITEM = {**PERSON, "properties": {("qty" if k == "age" else k): v for k, v in PERSON["properties"].items()},
        "required": ["name", "qty", "city"]}


# ------------------------------------------------------------------------------------- suffix automaton
@HYP
@given(st.text(alphabet="ab\"\\ é", max_size=24), st.lists(st.text(alphabet="ab\"\\ é", max_size=6), max_size=8))
def test_suffix_automaton_accepts_exactly_the_substrings(text, probes):
    data = text.encode()
    sa = SuffixAutomaton(data)
    assert sa.n_states <= max(1, 2 * len(data))
    parts = [p.encode() for p in probes] + [data[i:j] for i in range(len(data)) for j in range(i, len(data) + 1)][:40]
    walked = sa.walk(parts)
    for k, part in enumerate(parts):
        assert (walked[0, k] >= 0) == (part in data), part


def test_the_source_is_read_as_json_writes_it():
    assert escaped('say "hi" C:\\x é')[0] == 'say \\"hi\\" C:\\\\x é'.encode()


WORDS = st.text(alphabet="ab1 /=\"\\é\n,.-(", max_size=20)


@HYP
@given(WORDS, st.lists(WORDS, max_size=10))
def test_the_quote_automaton_holds_exactly_the_parts_that_are_whole_words(text, probes):
    """Walked over JSON bytes from the root, a value ends in a final state exactly when ``is_quoted`` says it
    is a part of the text a grounded string may be; the automaton is no larger than the text's suffixes."""
    qa = QuoteAutomaton.for_text(text)
    starts = word_starts(text)
    values = probes + [text[k:j] for k in starts for j in range(k, len(text) + 1)][:60]
    walked = qa.walk([escaped(v)[0] for v in values])
    for k, v in enumerate(values):
        a = int(walked[0, k])
        assert (a >= 0 and bool(qa.final[a])) == is_quoted(v, text), (v, text)


def test_a_long_document_is_held_to_substrings_by_the_suffix_automaton(monkeypatch):
    """Past ``MAX_TRIE`` trie nodes the word rule gives way to every substring, in the automaton and in
    ``is_quoted`` alike."""
    import structgen.constraints.quote_automaton as qa_mod

    text = "Erase /tmp/dump.sql now"
    monkeypatch.setattr(qa_mod, "MAX_TRIE", 10)
    qa_mod.word_rule.cache_clear()
    try:
        qa = QuoteAutomaton.for_text(text)
        assert qa.final[1:].all() and not qa.final[0]  # every substring but the empty one
        assert is_quoted("tmp/dump", text) and not is_quoted("tmp/dumps", text) and not is_quoted("", text)
        walked = qa.walk([b"tmp/dump", b"tmp/dumps"])
        assert walked[0, 0] >= 0 and walked[0, 1] < 0
    finally:
        qa_mod.word_rule.cache_clear()


def test_a_quoted_part_is_whole_words():
    text = "Erase /tmp/dump.sql now; key=Alpenglow AG (re: Hi!) 3 chairs, “Der Weg” #A-82128 'Kickoff'"
    for ok in ["/tmp/dump.sql", "Alpenglow AG", "Hi!", "Hi", "chairs", "Erase /tmp/dump.sql", "Der Weg", "A-82128",
               "Kickoff", "/tmp/dump.sql now"]:
        assert is_quoted(ok, text), ok
    for bad in ["tmp/dump.sql", "dump.sql", "lpenglow", "/tmp/dump.sql ", "hairs", " now", "chair", "Alpen",
                "82128", "", "/tmp/dump", "Erase /tmp", "3 chairs,", "AG (", "A-"]:  # not inside a joined word
        assert not is_quoted(bad, text), bad



def test_what_the_request_puts_in_double_quotes_is_quoted_whole():
    text = 'Let ana@x.org know "The report is attached." - and put “Flight change” in the subject line'
    for ok in ["The report is attached.", "Flight change", "Let ana@x.org know", "subject line"]:
        assert is_quoted(ok, text), ok
    for bad in ["The report", "report is attached.", "Flight", "change", "attached"]:
        assert not is_quoted(bad, text), bad
    qa = QuoteAutomaton.for_text(text)
    walked = qa.walk([escaped(v)[0] for v in ("Flight change", "Flight")])
    assert qa.final[walked[0, 0]] and not (walked[0, 1] >= 0 and qa.final[walked[0, 1]])

# ------------------------------------------------------------------------------------------ the schema
def test_free_text_strings_are_marked_and_converted_values_are_not():
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 40, "description": "who"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "when": {"type": "string", "format": "date"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "to": {"type": "array", "items": {"type": "string", "format": "email"}},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        "$defs": {"tag": {"type": "string"}}}
    src = "write to ana@example.org"
    g = ground_schema(schema, src)
    props = g["properties"]
    assert props["name"][GROUND_KEY] == src and props["name"]["maxLength"] == 40
    assert props["either"]["anyOf"][0][GROUND_KEY] == src and GROUND_KEY not in props["either"]["anyOf"][1]
    assert g["$defs"]["tag"][GROUND_KEY] == src
    # the schema's only e-mail field, a list: every address the request states (structgen.every_address)
    assert props["to"]["const"] == ["ana@example.org"] and g["required"] == ["to"]
    assert GROUND_KEY not in props["unit"] and STATED_KEY not in props["unit"]  # the enum: "c" is stated by no word
    # optional, no default, and the request states no code and no date: left out (structgen.grounding_fields)
    assert "code" not in props and "when" not in props and g["additionalProperties"] is False
    kept = ground_schema({**schema, "required": ["code", "when"]}, src)["properties"]
    assert all(GROUND_KEY not in kept[k] and STATED_KEY not in kept[k] for k in ("code", "when"))
    assert "to" not in ground_schema(schema, "no address here")["properties"]  # optional, and no address: left out
    assert schema["properties"]["name"] == {"type": "string", "maxLength": 40, "description": "who"}  # a copy
    assert source_of(g) == src and source_of(schema) is None
    assert emails_in("a@b.example, x.y@c.example.org; a@b.example.") == ["a@b.example", "x.y@c.example.org"]


def test_dates_and_date_times_are_the_ones_the_request_states():
    text = "Nudge me at 1:45 pm on the 24th of February 2027? Times are GMT-8. Not 2027-02-30; maybe 2027-03-01."
    assert stated_values(text, "date") == ["2027-02-24", "2027-03-01"]  # notes, then ISO values; no Feb 30th
    assert stated_values(text, "date-time") == []  # two dates: no date-time is stated
    assert stated_values(text.split(" Not")[0], "date-time") == ["2027-02-24T13:45:00-08:00"]
    assert stated_values("call at 2027-01-22T15:15:00+09:00", "date-time") == ["2027-01-22T15:15:00+09:00"]
    assert stated_values("tomorrow at 9", "date") == [] and stated_values("tomorrow at 9", "date-time") == []
    schema = {"type": "object", "properties": {"on": {"type": "string", "format": "date"},
                                               "at": {"type": "string", "format": "date-time"}}}
    one = text.split(" Not")[0]
    g = ground_schema(schema, one)["properties"]
    assert g["on"][STATED_KEY] == one and g["at"][STATED_KEY] == one and GROUND_KEY not in g["on"]
    g = ground_schema({**schema, "required": ["on"]}, "tomorrow at 9")["properties"]  # nothing stated:
    assert STATED_KEY not in g["on"] and "at" not in g  # the format as it is, and the optional one left out


def test_patterned_strings_are_words_or_note_values_the_pattern_matches():
    code = {"type": "string", "pattern": "^[A-Z]{3}$"}
    text = "Quote me the Swedish kronor equivalent of $7,441 from HEL-Chicago ORD. NOT THIS"
    assert stated_for(code, text) == ["SEK", "USD", "HEL", "ORD", "NOT"]  # notes first, then the words
    assert stated_for({"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
                      "starting at 9:30 am, or 14:15.") == ["09:30", "14:15"]
    assert stated_for({"type": "string", "pattern": r"^C:\\"}, r"wipe C:\tmp\x now") == [r"C:\tmp\x"]
    assert stated_for({"type": "string", "pattern": "(?<=a"}, "abc") == []  # a pattern Python cannot read
    assert STATED_KEY not in ground_schema({"type": "object", "properties": {"c": code}, "required": ["c"]},
                                           "no code here")["properties"]["c"]


def test_numbers_are_ones_the_request_states_that_their_bounds_allow():
    g = ground_schema(PERSON, REQUEST)["properties"]
    assert g["age"][STATED_KEY] == REQUEST and stated_for(g["age"], REQUEST) == [41]
    text = "Flying on May 3, 2027 at 9:30, party of three, 12 bags of 2.5 kg each, 40k miles"
    passengers = {"type": "integer", "minimum": 1, "maximum": 9}
    assert stated_for(passengers, text) == [3]  # no date or clock time digits; 12 and 40000 out of bounds
    assert stated_for({"type": "number", "exclusiveMinimum": 0}, text) == [3, 12, 2.5, 40000]
    assert stated_for({"type": "integer", "multipleOf": 4}, text) == [12, 40000]
    unmarked = ground_schema({"type": "object", "properties": {
        "n": passengers, "e": {"type": "integer", "enum": [3, 4]}, "b": {"type": "boolean"},
        "x": {"type": "integer", "minimum": 100, "maximum": 200}}}, text)["properties"]
    assert STATED_KEY in unmarked["n"] and not any(STATED_KEY in unmarked[k] for k in "eb")
    assert "x" not in unmarked  # optional, and no number of the request fits it: left out
    assert STATED_KEY not in ground_schema(PERSON, "Maria Lopez lives in Porto")["properties"]["age"]


def test_free_text_may_quote_the_request_or_its_notes_values():
    text = "Total: £4,847, due at 3 pm"
    assert quotable(text) == "Total: £4,847, due at 3 pm\n4847 GBP"  # the request's spans stay whole; no ISO
    # dates, times or offsets: a free-text value quotes those as the request writes them
    schema = {"type": "object", "properties": {"currency": {"type": "string"}}, "required": ["currency"]}
    from structgen.validators import validators_for

    (check,) = validators_for(Grounded(sg.JsonSchema(schema), text))
    assert check('{"currency": "GBP"}') == [] and check('{"currency": "due at 3 pm"}') == []
    assert len(check('{"currency": "USD"}')) == 1 and len(check('{"currency": "15:00"}')) == 1


def test_a_turn_s_text_reply_stays_free_while_its_calls_are_grounded():
    from structgen.agent.turn import CONTENT_SCHEMA, TurnSpec

    g = Grounded(TurnSpec(TOOLS), "in Porto").schema
    content = [a for a in g["anyOf"] if a == CONTENT_SCHEMA]
    assert content and GROUND_KEY not in json.dumps(content)
    assert STATED_KEY in json.dumps(g["anyOf"][0])  # get_weather's city: a name of the request (Porto)


def test_the_source_of_chat_messages_is_their_user_text():
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "Maria, 41"},
            {"role": "assistant", "content": "ok"}, {"role": "user", "content": [{"type": "text", "text": "Porto"}]}]
    assert source_text(msgs) == "Maria, 41\nPorto"
    assert source_text("plain") == "plain"


def test_a_grounded_spec_keeps_the_prompt_model_and_parse_of_what_it_wraps():
    spec = sg.agent.tools.tool_call_spec(TOOLS)
    g = Grounded(spec, "in Porto")
    assert g.render_prompt("in Porto") == spec.render_prompt("in Porto")
    assert g.tools == spec.tools and g.parse.__self__ is spec
    assert g.key != spec.key and g.key != Grounded(spec, "in Lyon").key
    assert Grounded(g, "in Lyon").inner is spec
    with pytest.raises(ConfigError, match="JSON Schema specs"):
        Grounded(sg.Regex("[a-z]+"), "x")


# ------------------------------------------------------------------------------------ the automaton
def _accepts(constraint, tok, text: str) -> bool:
    return constraint.accepts(tok(text, add_special_tokens=False)["input_ids"])


@pytest.fixture(scope="module")
def item(tok4k, vocab):
    return compile_spec(Grounded(sg.JsonSchema(ITEM), REQUEST), vocab)


@pytest.mark.parametrize("name,city,ok", [
    ("Maria Lopez", "Porto", True),
    ("Maria", "Porto.", False),  # a city is a name (structgen.proper_names): no sentence's period on it
    ("Lopez, 41, lives", "Porto", True),
    ("Maria", "ria", False),  # a part starts at a word
    ("Mar", "Porto", False),  # and ends at one
    ("Maria ", "Porto", False),  # not with a space
    ('\\"C:\\\\Users\\\\Søren\\\\plan.txt\\"', "Porto", True),  # quotes and backslashes, JSON-escaped
    ("", "Porto", False),  # the empty string is no part
    ("Maria Lopes", "Porto", False),
    ("Maria", "Lisbon", False),
    ("Maria  Lopez", "Porto", False),
    ("C:\\/Users", "Porto", False),  # an escape the source's JSON form does not use
])
def test_the_product_holds_exactly_the_quotable_parts(item, tok4k, name, city, ok):
    text = '{"name": "%s", "qty": 41, "city": "%s"}' % (name, city)
    assert item.engine == "automaton"
    assert _accepts(item, tok4k, text) is ok


def test_tokens_that_hold_quotes_are_checked_string_by_string(tok4k):
    """``", "`` closes one grounded value and opens the next in one token; ``": "`` ends a key and opens a
    value: each string such a token holds, and each it starts or ends, is grounded all the same. (The test
    vocabulary gets both as tokens; a tokenizer trained on JSON may have them.)"""
    import copy

    from structgen.constraints.vocab import TokenVocab

    tok = copy.deepcopy(tok4k)
    tok.add_tokens(['", "', '": "'])
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
              "required": ["a", "b"], "additionalProperties": False}
    c = compile_spec(Grounded(sg.JsonSchema(schema), "Oslo and Bergen"), TokenVocab.of(tok))
    ok = '{"a": "Oslo", "b": "Bergen"}'
    pieces = [tok.decode([i]) for i in tok(ok, add_special_tokens=False)["input_ids"]]
    assert '", "' in pieces and '": "' in pieces, pieces  # the case under test is there
    assert _accepts(c, tok, ok) and _accepts(c, tok, '{"a": "Bergen", "b": "Oslo and Bergen"}')
    assert not _accepts(c, tok, '{"a": "Bergen", "b": "Oslo and"}')  # no part ends with "and" (END_WORDS)
    assert not _accepts(c, tok, '{"a": "Bergen", "b": ""}')  # no empty value
    for bad in ['{"a": "Oslo", "b": "Bergenx"}', '{"a": "Osl", "b": "Bergen"}', '{"a": "x", "b": "Bergen"}']:
        assert not _accepts(c, tok, bad), bad


def test_a_token_that_holds_a_whole_value_is_grounded_too(tok4k):
    """A vocabulary with ``"Oslo"`` and ``"Lima"`` as single tokens (quotes included): the first is a value the
    request states, the second is not, though no state of the DFA is ever inside its body."""
    import copy

    from structgen.constraints.vocab import TokenVocab

    tok = copy.deepcopy(tok4k)
    tok.add_tokens(['"Oslo"', '"Lima"'])
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    c = compile_spec(Grounded(sg.JsonSchema(schema), "fly to Oslo"), TokenVocab.of(tok))
    for text, ok in [('{"a": "Oslo"}', True), ('{"a": "Lima"}', False)]:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert text[6:12] in [tok.decode([i]) for i in ids]  # the value is one token
        assert _accepts(c, tok, text) is ok


def test_emails_are_one_of_the_addresses_in_the_request(tok4k, vocab):
    schema = {"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string", "format": "email"},
                                                      "minItems": 1}}, "required": ["to"]}
    c = compile_spec(Grounded(sg.JsonSchema(schema), "mail ana@example.org and bo.li@uni.example.edu"), vocab)
    assert _accepts(c, tok4k, '{"to": ["ana@example.org", "bo.li@uni.example.edu"]}')
    assert not _accepts(c, tok4k, '{"to": ["ana@example.edu"]}')


def test_a_stated_code_with_a_backslash_is_written_as_json_writes_it(tok4k, vocab):
    schema = {"type": "object", "properties": {"p": {"type": "string", "pattern": r"^C:\\"}}, "required": ["p"]}
    c = compile_spec(Grounded(sg.JsonSchema(schema), r"wipe C:\tmp now"), vocab)
    assert _accepts(c, tok4k, r'{"p": "C:\\tmp"}') and not _accepts(c, tok4k, r'{"p": "C:\tmp"}')


def test_a_stated_date_is_one_of_the_request_s_dates(tok4k, vocab):
    schema = {"type": "object", "properties": {"on": {"type": "string", "format": "date"}}, "required": ["on"]}
    c = compile_spec(Grounded(sg.JsonSchema(schema), "fly on March 3rd 2026, back 2026-03-09"), vocab)
    assert _accepts(c, tok4k, '{"on": "2026-03-03"}') and _accepts(c, tok4k, '{"on": "2026-03-09"}')
    assert not _accepts(c, tok4k, '{"on": "2026-03-04"}') and not _accepts(c, tok4k, '{"on": "2026-04-03"}')


def test_a_stated_number_is_one_of_the_request_s_numbers(tok4k, vocab):
    schema = {"type": "object", "properties": {"minutes": {"type": "integer", "minimum": 1, "maximum": 480},
                                               "x": {"type": "number"}}, "required": ["minutes", "x"]}
    c = compile_spec(Grounded(sg.JsonSchema(schema), "book two hours, 3.5 km away"), vocab)
    for n, x in [(120, 3.5), (120, 2)]:
        assert _accepts(c, tok4k, '{"minutes": %s, "x": %s}' % (n, x))
    # 120 is the two hours in minutes: the minutes' value, and no value of a field that does not hold minutes
    # (structgen.named_numbers)
    for n, x in [(3, 3.5), (12, 3.5), (120, 3.55), (120, 35), (1, 2), (2, 120), (2, 3.5)]:
        assert not _accepts(c, tok4k, '{"minutes": %s, "x": %s}' % (n, x))


# ------------------------------------------------------------------------------ random logits, end to end
REQUESTS = ["What's the weather like in Genève for 3 days, in fahrenheit?",
            "remind me to pay rent on the 3rd of May 2027 at 9:30 am UTC+2, or fly to Oslo 2027-05-04",
            'Erase `C:\\Users\\Søren\\Desktop\\draft "v3".doc` from disk',
            "email ana@example.org and li@uni.example.edu, subject Lunch on Friday? body: see you at noon",
            "remind me to water the plants tomorrow at 9"]


def _strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)


def test_random_logits_only_ever_quote_the_request(tok4k):
    """Whatever a model proposes, a tool call is released, and unless it came from the ungrounded last resort
    (a grounded string that repair could not fit into its length bounds: ``Result.fallback``), its free-text
    arguments are parts of the request (or its notes), its e-mails the request's and its dates stated ones."""
    grounded = 0
    for seed in range(3):
        gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed), seed=seed)
        for request_text in REQUESTS:
            call = gen.tool_call(request_text, TOOLS, 128, ground=True)
            if call.result.fallback:
                continue
            grounded += 1
            props = next(t for t in TOOLS if t.name == call.name).model.model_json_schema()["properties"]
            for key, value in call.arguments.items():
                item = props[key].get("items", props[key])
                if item.get("type") in ("integer", "number") and not {"enum", "const"} & item.keys():
                    stated = stated_for(item, request_text)
                    assert not stated or value in stated, (key, value)
                if item.get("type") != "string" or {"enum", "const"} & item.keys():
                    continue
                for s in _strings(value):
                    if item.get("format") == "email":
                        emails = emails_in(request_text, item.get("pattern"))
                        assert not emails or s in emails, (key, s)
                    elif item.get("format") in ("date", "date-time") or "pattern" in item and "format" not in item:
                        stated = stated_for(item, request_text)
                        assert not stated or s in stated, (key, s)
                    else:
                        assert s in quotable(request_text), (key, s)
    assert grounded >= 6  # most calls are grounded ones: the checks above are not vacuous


def test_a_grounded_answer_too_long_for_its_bounds_falls_back_to_the_plain_schema(tok4k):
    from scripted_model import ScriptedLogits

    schema = {"type": "object", "properties": {"moved_to": {"type": "string", "maxLength": 5}},
              "required": ["moved_to"]}
    text = "She moved to Vila Nova de Gaia last year"
    model = ScriptedLogits(tok4k, '{"moved_to": "Vila Nova de Gaia"}')  # insists on a part too long for the bound
    r = sg.Generator(model).generate(text, sg.JsonSchema(schema), 32, ground=True)
    assert r.valid and r.fallback and len(json.loads(r.text)["moved_to"]) <= 5


@pytest.mark.parametrize("seed", range(4))
def test_random_logits_json_values_are_quoted_and_valid(tok4k, seed):
    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=seed), seed=seed, temperature=1.0)
    r = gen.generate(REQUEST, sg.JsonSchema(PERSON), 96, ground=True, strict=False)
    if r.valid:
        v = json.loads(r.text)
        assert v["name"] in REQUEST and v["city"] in REQUEST and len(v["name"]) <= 40 and v["age"] == 41


# --------------------------------------------------------------------------- values stated once, written twice
CONVERT = {"type": "object", "properties": {
    "amount": {"type": "number", "exclusiveMinimum": 0},
    "from_currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "to_currency": {"$ref": "#/$defs/code"},
    "cc": {"type": "array", "items": {"type": "string", "format": "email"}},
    "reply_to": {"type": "string", "format": "email"}},  # two e-mail fields: cc is no list of every address
    "required": ["amount", "from_currency", "to_currency"], "additionalProperties": False,
    "$defs": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}}


def test_repeated_values_are_the_stated_values_written_more_often_than_stated():
    from structgen.agent.tools import tool_call_spec
    from structgen.repeats import mentions, repeated_values, stated_leaves

    text = "Convert 1,250 Swedish kronor to euros, cc ana@example.org"
    g = Grounded(sg.JsonSchema(CONVERT), text).schema
    v = {"amount": 1250, "from_currency": "SEK", "to_currency": "SEK", "cc": ["ana@example.org"] * 2}
    assert [p for p, _ in stated_leaves(g, v)] == [("amount",), ("from_currency",), ("to_currency",), ("cc", 0),
                                                   ("cc", 1)]  # through the $ref and the items
    assert repeated_values(g, v) == [("SEK", 1, [("from_currency",), ("to_currency",)]),
                                     ("ana@example.org", 1, [("cc", 0), ("cc", 1)])]
    assert repeated_values(g, {**v, "to_currency": "EUR", "cc": []}) == []
    assert repeated_values(sg.JsonSchema(CONVERT).schema, v) == []  # nothing grounded: nothing to count
    score = {"type": "object", "properties": {"home": {"type": "integer"}, "away": {"type": "integer"}}}
    g = Grounded(sg.JsonSchema(score), "Benfica 3-3 Ajax, 2 red cards").schema
    assert mentions(3, "Benfica 3-3 Ajax") == 2
    assert repeated_values(g, {"home": 3, "away": 3}) == []  # stated twice, written twice
    assert repeated_values(g, {"home": 2, "away": 2}) == [(2, 1, [("home",), ("away",)])]
    call = Grounded(tool_call_spec(TOOLS), "Find flights from Lima (LIM) to Oslo (OSL) on March 3rd 2027").schema
    args = {"origin": "OSL", "destination": "OSL", "date": "2027-03-03"}
    assert repeated_values(call, {"name": "search_flights", "arguments": args}) == [
        ("OSL", 1, [("arguments", "origin"), ("arguments", "destination")])]  # the anyOf branch of the tool


def test_a_value_stated_once_and_written_twice_is_redone_once(tok4k):
    """A model that insists on ``SEK`` for both currencies: after the answer is valid, the later ``SEK``
    (both were placed in the same step) is re-masked, ruled out there, and decoded again: ``EUR``, the
    other currency the request states; a trace event says why. An answer without repeats is not redone."""
    from scripted_model import ScriptedLogits

    text = "Convert 1,250 Swedish kronor to euros"
    model = ScriptedLogits(tok4k, '{"amount": 1250, "from_currency": "SEK", "to_currency": "SEK"}')
    r = sg.Generator(model).generate(text, sg.JsonSchema(CONVERT), 48, ground=True, trace=True)
    assert r.valid and not r.fallback and json.loads(r.text) == {"amount": 1250, "from_currency": "SEK",
                                                                 "to_currency": "EUR"}
    notes = [e.note for e in r.trace if e.kind == "remask"]
    assert notes == ["stated once, written again: 'SEK' at /to_currency"]
    plain = sg.Generator(model).generate(text, sg.JsonSchema(CONVERT), 48, trace=True)  # not grounded
    assert json.loads(plain.text)["to_currency"] == "SEK" and not any(e.kind == "remask" for e in plain.trace)
    once = ScriptedLogits(tok4k, '{"amount": 1250, "from_currency": "SEK", "to_currency": "EUR"}')
    r = sg.Generator(once).generate(text, sg.JsonSchema(CONVERT), 48, ground=True, trace=True)
    assert json.loads(r.text)["to_currency"] == "EUR" and not any(e.kind == "remask" for e in r.trace)


# ------------------------------------------------------------------------------------------ validator
def test_the_validator_names_the_value_that_is_not_quoted():
    from structgen.validators import validators_for

    (check,) = validators_for(Grounded(sg.JsonSchema(ITEM), REQUEST))
    assert check('{"name": "Maria Lopez", "qty": 41, "city": "Porto"}') == []
    issues = check('{"name": "Maria Lopes", "qty": 41, "city": "Porto"}')
    assert len(issues) == 1 and issues[0].path == "/name" and "not quoted from the request" in issues[0].message
    text = '{"name": "Maria Lopes", "qty": 41, "city": "Porto"}'
    assert text[slice(*issues[0].span)] == '"Maria Lopes"'
    (check,) = validators_for(Grounded(sg.JsonSchema(PERSON), REQUEST))  # beside an age: a person's name
    (issue,) = check('{"name": "Maria Lopes", "age": 41, "city": "Porto"}')
    assert issue.path == "/name" and "'Maria Lopes' is not a name the request states (it states Maria Lopez)" \
        in issue.message
    (issue,) = check('{"name": "Maria Lopez", "age": 41, "city": "Lisbon"}')  # a city: one of the names
    assert issue.path == "/city" and "'Lisbon' is not a name the request states (it states Maria, Maria Lopez, " \
                                     "Lopez, Porto)" in issue.message
    schema = {"type": "object", "properties": {"on": {"type": "string", "format": "date"}}}
    (check,) = validators_for(Grounded(sg.JsonSchema(schema), "on March 3rd 2026"))
    assert check('{"on": "2026-03-03"}') == []
    (issue,) = check('{"on": "2026-03-04"}')
    assert "not a date the request states (it states 2026-03-03)" in issue.message
    (check,) = validators_for(Grounded(sg.JsonSchema(PERSON), REQUEST))
    (issue,) = check('{"name": "Maria Lopez", "age": 14, "city": "Porto"}')
    assert issue.path == "/age" and "14 is not a number the request states (it states 41)" in issue.message


# ---------------------------------------------------------------------------------------- the generator
def test_ground_with_a_given_text_and_bad_uses(tok4k):
    gen = sg.Generator(sg.models.RandomLogits(tok4k, seed=1))
    r = gen.generate("ignored words", sg.JsonSchema(PERSON), 96, ground="Ana Sousa, 30, from Braga", strict=False)
    if r.valid:
        assert json.loads(r.text)["city"] in "Ana Sousa, 30, from Braga"
    with pytest.raises(ConfigError, match="JSON Schema specs, tool calls, sg.Sql and alert rules"):
        gen.generate("x", sg.Regex("[a-z]+"), 8, ground=True)
    with pytest.raises(ConfigError, match="ground must be"):
        gen.generate("x", sg.JsonSchema(PERSON), 96, ground=3)
    with pytest.raises(ConfigError, match="needs text to quote from"):
        gen.generate([{"role": "system", "content": "be brief"}, {"role": "user", "content": " "}],
                     sg.JsonSchema(PERSON), 96, ground=True)


def test_eval_decodes_the_grounded_mode_for_every_family(tok4k, tmp_path, monkeypatch):
    from structgen.train import evaluate as ev
    from structgen.train.eval_report import write_report

    model = sg.models.RandomLogits(tok4k, seed=0)
    rows = ev.evaluate(model, families=("tool", "alert"), n=2, modes=("constrained", "grounded"))
    assert [(r.family, r.mode) for r in rows] == [("tool", "constrained"), ("tool", "grounded"),
                                                  ("alert", "constrained"), ("alert", "grounded")]
    assert set(ev.GROUNDED_FAMILIES) == {"json", "tool", "sql", "alert"}
    svg = write_report(rows, tmp_path, title="t", meta={})[2].read_text()
    assert svg.count("<title>grounded accuracy") == 2 and svg.count("<title>constrained accuracy") == 2
    # a family left out of GROUNDED_FAMILIES gets no grounded row (and no bar)
    monkeypatch.setattr(ev, "GROUNDED_FAMILIES", ("tool",))
    rows = ev.evaluate(model, families=("tool", "alert"), n=2, modes=("constrained", "grounded"))
    assert [(r.family, r.mode) for r in rows] == [("tool", "constrained"), ("tool", "grounded"),
                                                  ("alert", "constrained")]
