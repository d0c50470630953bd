"""Proper names and paths (``structgen.proper_names``, ``structgen.stated_paths``, ``structgen.stated_spans``): a
free-text field whose name says it holds a proper name (a city, a team, a make, a person) is one of the
request's capitalised names, one that holds a file path one of its paths; through the real compiled
constraint and the validator; the task data's gold values stay allowed; random logits release only names
and stated paths."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from schema_strategies import grounded_decoding, grounded_runs

import structgen as sg
from structgen.constraints import compile as compile_spec
from structgen.grounding import GROUND_KEY, STATED_KEY, Grounded, ground_schema
from structgen.proper_names import holds_name, proper_names
from structgen.stated_paths import holds_path, stated_paths
from structgen.stated_spans import SPANS_KEY, spans_of
from structgen.validators import run_validators, validators_for

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _spans(node: dict) -> list[str]:
    return spans_of(node)["values"]


MATCH = {"type": "object", "properties": {
    "home_team": {"type": "string"}, "visitors": {"type": "string"}, "home_goals": {"type": "integer"},
    "event_name": {"type": "string"}}, "required": ["home_team", "visitors", "home_goals"],
    "additionalProperties": False}
REPORT = "On 2026-08-16, FC Porto hosted Malmö FF; the final score was 3 to 2 at the Summer Cup."


@pytest.mark.parametrize("key, holds", [
    ("city", True), ("shelterCity", True), ("home_team", True), ("homeTeam", True), ("visitors", True),
    ("make", True), ("patient_name", True), ("full_name", True), ("place_of_birth", True), ("employer", True),
    ("name", False), ("event_name", False), ("file_name", False), ("product_name", False), ("title", False),
    ("course", False), ("model_year", False), ("homepage", False), ("contact_email", False), ("city_code", False),
])
def test_a_field_holds_a_name_when_its_own_name_says_so(key, holds):
    assert holds_name(key) is holds


@pytest.mark.parametrize("text, names, not_names", [
    (REPORT, ["FC Porto", "Malmö FF", "Porto", "Summer Cup"], ["On", "the final", "2026-08-16", "Malmö FF;"]),
    ("Meet Kira! This 4-year-old rabbit waits for a home at our Paris shelter.", ["Kira", "Paris"],
     ["Meet", "Meet Kira", "This", "home at our Paris"]),
    ("FOR SALE: 2019 Volvo XC60, 11,000 km, asking EUR 3,843. Call after 6pm.", ["Volvo", "Volvo XC60", "XC60"],
     ["SALE", "FOR SALE", "Call", "2019 Volvo"]),
    ("Parse this: BREAKING - A magnitude 4.2 quake struck near Dublin on July 3. Attendance: 12",
     ["Dublin"], ["BREAKING", "A magnitude", "July", "Attendance"]),
    ("--\nAna Okafor | Head of Sales\nPão & Cia\nM: ana@x.org", ["Ana Okafor", "Head of Sales", "Pão & Cia"],
     ["M", "Okafor | Head", "Ana Okafor Head", "ana@x.org"]),
    ("Caller: Hi, I'd like to see Dr. Weber.\nCountry=Finland; Employer=Blue Fjord AS",
     ["Dr. Weber", "Weber", "Finland", "Blue Fjord AS"], ["Caller", "Hi", "Dr.", "Country", "Employer"]),
    ("Hotel Astoria, New York: check-in Oct 25. Based in Wien (VIE)", ["New York", "Wien", "VIE"],
     ["Oct", "Wien (VIE"]),
])
def test_the_proper_names_of_a_request_are_its_capitalised_runs(text, names, not_names):
    found = proper_names(text)
    assert all(n in found for n in names), found
    assert not any(n in found for n in not_names), found


def test_a_name_field_is_one_of_the_request_s_names_and_a_value_written_twice_is_a_repeat(tok4k, vocab):
    marked = ground_schema(MATCH, REPORT)["properties"]
    assert STATED_KEY in marked["home_team"] and GROUND_KEY not in marked["home_team"]
    assert spans_of(marked["visitors"])["kind"] == "name"
    assert "Malmö FF" in _spans(marked["visitors"]) and "the final" not in _spans(marked["visitors"])
    assert GROUND_KEY in marked["event_name"] and SPANS_KEY not in marked["event_name"]  # an event's name: free text
    g = Grounded(sg.JsonSchema(MATCH), REPORT)
    c = compile_spec(g, vocab)
    ok = '{"home_team": "FC Porto", "visitors": "Malmö FF", "home_goals": 3}'
    for bad in ('{"home_team": "FC Porto", "visitors": "the final", "home_goals": 3}',
                '{"home_team": "FC Porto", "visitors": "2026", "home_goals": 3}'):
        assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"]), bad
        (issue,) = run_validators(validators_for(g), bad)
        assert issue.path == "/visitors" and "is not a name the request states (it states " in issue.message
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"]) and run_validators(validators_for(g), ok) == []
    from structgen.repeats import repeated_values

    twice = json.loads(ok.replace('"FC Porto"', '"Malmö FF"'))
    assert repeated_values(g.schema, twice) == [("Malmö FF", 1, [("home_team",), ("visitors",)])]


def test_titles_doctors_currencies_and_requests_without_names():
    dialogue = "Caller: Hi, this is Maria Park. I'd like to see Dr. Mensah.\nReceptionist: Dr. Mensah is free."
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in ("patient", "doctor", "surname")}}
    props = ground_schema(schema, dialogue)["properties"]
    assert _spans(props["doctor"]) == ["Dr. Mensah"]  # a doctor's field: the name written with "Dr."
    assert "Maria Park" in _spans(props["patient"]) and not {"Dr. Mensah", "Mensah"} & set(_spans(props["patient"]))
    assert "Mensah" in _spans(props["surname"])  # a part of a name: the bare one
    car = ground_schema({"type": "object", "properties": {"make": {"type": "string"}}},
                        "Selling my Citroën C3, €28,220 or best offer; EUR only")["properties"]["make"]
    assert "EUR" not in _spans(car) and "Citroën" in _spans(car)
    # no capitalised name at all, or a length bound none fits: the field stays free text
    plain = ground_schema({"type": "object", "properties": {"city": {"type": "string"}}}, "weather in porto pls")
    assert GROUND_KEY in plain["properties"]["city"] and SPANS_KEY not in plain["properties"]["city"]
    short = ground_schema({"type": "object", "properties": {"city": {"type": "string", "maxLength": 1}}}, REPORT)
    assert SPANS_KEY not in short["properties"]["city"]


PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                          "city": {"type": "string"}}, "required": ["name", "age", "city"],
          "additionalProperties": False}


@pytest.mark.parametrize("sibling", ["age", "age_years", "birthday", "date_of_birth", "dob", "gender",
                                     "nationality"])
def test_a_bare_name_beside_a_field_only_a_person_has_is_a_person_s_name(sibling, release_grounded):
    from structgen.proper_names import person_key

    text = "John Smith is 52 and lives in Boston"  # the embedded model wrote "in Boston" for its name
    schema = {"type": "object", "properties": {"name": {"type": "string"}, sibling: {"type": "string"}}}
    assert person_key("name", schema["properties"]) == "full_name"
    assert _spans(ground_schema(schema, text)["properties"]["name"]) == ["John Smith"]
    assert "Boston" in _spans(ground_schema(PERSON, text)["properties"]["city"])  # a place's field as before
    if sibling == "age":  # through the compiled constraint: random logits can only write the name there
        for seed in range(3):
            r = release_grounded(text, sg.JsonSchema(PERSON), 32, seed)
            assert r is not None and json.loads(r.text)["name"] == "John Smith", r.text


@pytest.mark.parametrize("sibling", ["price", "age_rating", "minimum_age", "agent", "birthday_party"])
def test_a_bare_name_beside_other_fields_stays_free_text(sibling):
    from structgen.proper_names import person_key

    schema = {"type": "object", "properties": {"name": {"type": "string"}, sibling: {"type": "string"}}}
    assert person_key("name", schema["properties"]) == "name" and person_key("full_name", ["age"]) == "full_name"
    node = ground_schema(schema, "The Matrix Reloaded, rated 16, costs 9 EUR at Cinema Nova")["properties"]["name"]
    assert GROUND_KEY in node and SPANS_KEY not in node  # a film's or a product's name: any part of the request


@pytest.mark.parametrize("family", ["json", "tool"])
@pytest.mark.parametrize("split", ["train", "heldout"])
def test_gold_values_of_the_task_data_are_names_and_paths_grounding_allows(family, split):
    """Every gold value of a field the rules make a choice of names or paths is one of them."""
    from structgen.train.data import examples

    checked = 0
    for ex in examples(family, split, 150, seed=6):
        gold = json.loads(ex.target)
        schema, value = ((ex.spec.tool(gold["name"]).schema, gold["arguments"]) if family == "tool"
                         else (ex.spec.schema, gold))
        for key, node in ground_schema(schema, ex.prompt).get("properties", {}).items():
            if spans_of(node) and key in value:
                assert value[key] in _spans(node), (ex.prompt, key, value[key], _spans(node))
                checked += 1
    assert checked > 20


def test_a_person_s_or_a_pet_s_field_takes_no_name_written_only_as_a_place():
    from structgen.proper_names import names_for

    ad = "Adopt me: I'm Oskar, a female cat, 10 years young. Find me at the shelter in Praha."
    assert names_for("petName", ad) == ["Oskar"]
    assert names_for("shelterCity", ad) == ["Praha"]  # (and a place's field no name the request introduces)
    assert names_for("full_name", "Ana moved to Praha; Praha is home now.") == ["Ana", "Praha"]  # also a subject
    assert names_for("pet_name", "A cat found in Praha.") == ["Praha"]  # no other name: left as it is


def test_a_name_an_address_spells_is_a_person_s_and_no_company_s():
    from structgen.proper_names import addressed, names_for

    block = "Best regards,\nJosé Weber\nHead of Sales, Café Müller\njose.weber@acme.test"
    assert addressed("José Weber", block) and addressed("Weber", block) and not addressed("Café Müller", block)
    assert names_for("full_name", block) == ["José Weber"]  # (whole: no "José", no "Weber")
    assert "José Weber" not in names_for("company", block) and "Café Müller" in names_for("company", block)
    assert names_for("surname", block) == ["José", "José Weber", "Weber"]  # a part of a person's name
    assert addressed("Sara Yılmaz", "Sara Yılmaz, sara.yilmaz@x.org") and not addressed("Dr. Ana", "dr@x.org")
    assert addressed("José Weber", "José Weber, j.weber@x.org") and not addressed("Café Müller", "siobhan.muller@x")
    # no address, or one that spells no name: the fields keep every whole name
    assert names_for("full_name", "José Weber, Café Müller") == ["José Weber", "Café Müller"]
    # (an organisation's field takes no name written only as the start of a longer one: no "Café" of it)
    assert names_for("company", "José Weber, Café Müller") == ["José Weber", "Weber", "Café Müller", "Müller"]
    assert "José Weber" in names_for("company", "José Weber, Café Müller, info@x.test")


def test_a_team_s_field_takes_a_team_s_name_whole():
    from structgen.proper_names import names_for

    report = "Bayern München 1-5 Malmö FF (4 May 2025). Malmö fans sang."
    assert names_for("homeTeam", report) == ["Bayern München", "Malmö", "Malmö FF"]  # "Malmö" stands alone once
    assert "München" in names_for("city", report) and "München" not in names_for("away", report)


VEHICLE = {"type": "object", "properties": {"make": {"type": "string"}, "model": {"type": "string"},
                                            "year": {"type": "integer"}}, "required": ["make", "model"]}


def test_two_names_that_are_parts_of_one_mention_are_a_repeat():
    """"Škoda" and "Škoda Octavia" are one mention of the request written twice; "Škoda" and "Octavia" are
    its two parts; a name the request writes again on its own is free to be written beside its longer form."""
    from structgen.repeats import repeated_values

    ad = ground_schema(VEHICLE, "FOR SALE: 2012 Škoda Octavia, 118,000 km, diesel.")
    assert repeated_values(ad, {"make": "Škoda", "model": "Škoda Octavia", "year": 2012}) == [
        ("Škoda Octavia", 1, [("make",), ("model",)])]
    assert repeated_values(ad, {"make": "Škoda", "model": "Octavia", "year": 2012}) == []
    match = ground_schema(MATCH, "Malmö FF 3-3 Brøndby. Malmö fans sang all night.")
    assert repeated_values(match, {"home_team": "Malmö FF", "visitors": "Malmö", "home_goals": 3}) == []
    match = ground_schema(MATCH, "Malmö FF 3-3 Brøndby (November 21, 2025).")
    assert repeated_values(match, {"home_team": "Malmö FF", "visitors": "Malmö", "home_goals": 3}) == [
        ("Malmö FF", 1, [("home_team",), ("visitors",)])]


@pytest.mark.parametrize("family", ["json", "tool"])
def test_no_gold_answer_of_the_task_data_repeats_a_value(family):
    """The repeat pass never redoes a right answer: no gold answer writes a value, or two parts of one name,
    more often than its request states it."""
    from structgen.repeats import repeated_values
    from structgen.train.data import examples

    for split in ("train", "heldout"):
        for ex in examples(family, split, 200, seed=7):
            assert repeated_values(Grounded(ex.spec, ex.prompt).schema, json.loads(ex.target)) == [], ex.prompt


@pytest.mark.timeout(600)
@grounded_runs()
@given(decoding=grounded_decoding())
def test_random_logits_write_names_into_name_fields(release_grounded, decoding):
    r = release_grounded(REPORT, sg.JsonSchema(MATCH), 48, **decoding)
    if r is None:
        return
    value = json.loads(r.text)
    names = proper_names(REPORT)
    assert value["home_team"] in names and value["visitors"] in names, r.text


@pytest.mark.parametrize("key, holds", [("path", True), ("file_path", True), ("filename", True), ("folder", True),
                                        ("file_size", False), ("file_type", False), ("city", False)])
def test_a_field_holds_a_path_when_its_own_name_says_so(key, holds):
    assert holds_path(key) is holds


@pytest.mark.parametrize("text, paths", [
    ("Clean-up time: the file /tmp/dump.sql should go away permanently.", ["/tmp/dump.sql"]),
    ("Can you delete the file at /home/ana/projects/old/budget (copy).xlsx?",
     ["/home/ana/projects/old/budget (copy).xlsx"]),
    ("Erase `~/Pictures/Kraków trip/Résumé José.pdf` from disk!", ["~/Pictures/Kraków trip/Résumé José.pdf"]),
    ("trash C:\\Users\\Søren\\Desktop\\old invoice.pdf now", ["C:\\Users\\Søren\\Desktop\\old invoice.pdf"]),
    ("wipe /var/log/app and /tmp/x.txt, then notes.txt", ["/var/log/app", "/tmp/x.txt", "notes.txt"]),
    ("mail ana@x.org about https://x.org/a", []),
])
def test_the_paths_of_a_request_run_to_their_file_name_and_no_further(text, paths):
    assert list(stated_paths(text)) == paths


def test_a_path_field_is_a_stated_path_through_the_constraint(tok4k, vocab):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from tools import TOOLS

    request = "Clean-up time: the file /tmp/dump.sql should go away permanently."
    spec = sg.ToolCallSpec(TOOLS)
    g = Grounded(spec, request)
    c = compile_spec(g, vocab)
    ok = '{"name": "delete_file", "arguments": {"path": "/tmp/dump.sql"}}'
    bad = '{"name": "delete_file", "arguments": {"path": "/tmp/dump.sql should"}}'
    assert c.accepts(tok4k(ok, add_special_tokens=False)["input_ids"]) and run_validators(validators_for(g), ok) == []
    assert not c.accepts(tok4k(bad, add_special_tokens=False)["input_ids"]) and run_validators(validators_for(g), bad)
    (issue,) = run_validators(validators_for(Grounded(sg.JsonSchema(spec.tool("delete_file").schema), request)),
                              '{"path": "/tmp/dump.sql should"}')
    assert "'/tmp/dump.sql should' is not a path the request states (it states /tmp/dump.sql)" in issue.message


def test_an_organisation_is_no_first_words_of_a_longer_name():
    from structgen.proper_names import names_for, only_opening

    block = "-- \nÁngel Souza | Project Manager\nTanaka Seiki\nM: angel@globex.example"
    assert only_opening("Tanaka", ["Tanaka", "Tanaka Seiki"], block)
    assert "Tanaka" not in names_for("company", block) and "Tanaka Seiki" in names_for("company", block)
    # a label may stand before an organisation: its name stays
    assert "Globex" in names_for("company", "Note: First name Kenji, Firm Globex, subject the move")


def test_a_label_right_after_another_is_no_name():
    from structgen.proper_names import proper_names

    assert proper_names("Extract the details: FOR SALE: 2025 Renault Clio") == ("Renault", "Renault Clio", "Clio")


def test_a_name_of_its_own_is_one_the_request_introduces():
    from structgen.proper_names import introduced_for, names_for

    text = "Adopt me: I'm Milo, a female rabbit. Find me at the shelter in Milano."
    assert introduced_for("name", text) == ["Milo"] and introduced_for("product_name", text) == []
    assert names_for("pet_name", "Meet Nala! Waiting for a home at our Düsseldorf shelter.") == ["Nala"]
    assert names_for("shelter_city", text) == ["Milano"]  # a place's field takes no name the request introduces
    # a part of a name is no introduced one ("I'm Ana Lopez" introduces no last name "Ana"), nor a label's value
    assert names_for("last_name", "Hi, I'm Ana Lopez from Porto") == ["Ana", "Ana Lopez", "Lopez", "Porto"]
    assert introduced_for("name", "Family name is Martín. With name Olga Haddad.") == []


def test_a_person_s_field_takes_a_name_whole():
    from structgen.proper_names import names_for

    qa = "Q: When does Conversational Spanish begin?\nA: On 2027-11-24. Maria Rossi teaches it in person"
    assert names_for("instructor", qa) == ["Conversational Spanish", "Maria Rossi"]  # no "Maria", no "Rossi"
    assert names_for("first_name", qa)[:3] == ["Conversational", "Conversational Spanish", "Spanish"]  # a part
    # a role word or a code before a name makes no longer name of it
    assert "Łukasz Sharma" in names_for("student", "Student Łukasz Sharma (ID 20219204) scored 71 in Art!")
    assert "Inès Yılmaz" in names_for("recipient", "Your parcel JD566969830 Inès Yılmaz is in transit")
