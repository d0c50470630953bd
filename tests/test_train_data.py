"""Training data: the framework (phrasing, canonical JSON, seeded generation, family dispatch) and the JSON
extraction and tool-call families: determinism, disjoint splits, targets accepted token by token by the
compiled constraint and valid, gold consistent with the target, unstated arguments left out, coverage."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import jsonschema
import pytest
from structgen.validators import validators_for

import structgen as sg
from structgen.errors import ConfigError, SpecError
from structgen.train.data import (
    FAMILIES,
    canonical_json,
    corpus_texts,
    examples,
    family_module,
    mixture,
    template_ids,
)
from structgen.train.data import vocab as V
from structgen.train.data.base import (
    Registry,
    Template,
    camel,
    expand,
    fill,
    ordered,
    prompt_text,
    say,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MINE = ("json", "tool")
TOOL_NAMES = ("get_weather", "create_event", "send_email", "search_flights", "set_reminder", "convert_currency",
              "delete_file")


CURRENCY_CODES = {c[0] for c in V.CURRENCIES}
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _key(e):
    return (e.family, e.template, prompt_text(e.prompt), e.target, json.dumps(e.gold, sort_keys=True), e.spec.key)


# ------------------------------------------------------------------------------------------- framework
def test_phrasing_language():
    rng = random.Random(0)
    slots = {"name": "Zoë O'Neil", "city": None}
    seen = {expand(rng, "[Hi|Hello|] {name}<city: from {city}>.", slots) for _ in range(60)}
    assert seen == {"Hi {name}.", "Hello {name}.", " {name}."}
    assert expand(rng, "<city:[a|b]>x", {"city": "Oslo"}) in ("ax", "bx")
    assert fill("{name}!", slots) == "Zoë O'Neil!"
    with pytest.raises(SpecError, match="guard it with <city:"):
        fill("in {city}", slots)
    # noise changes template words only: inserted values keep their exact form
    texts = {say(random.Random(i), "Meet {name}, From {name}.", {"name": "ÅSA Berg"}) for i in range(200)}
    assert all(t.count("ÅSA Berg") == 2 for t in texts)
    assert any(t.startswith("meet ") for t in texts) and any(t.startswith("Meet ") for t in texts)
    assert any(not t.endswith(".") for t in texts)


def test_canonical_json_and_schema_order():
    schema = {"type": "object", "properties": {"b": {}, "a": {"type": "object", "properties": {"y": {}, "x": {}}}}}
    obj = ordered({"a": {"x": 1, "y": [1.5, "é"]}, "b": True}, schema)
    assert list(obj) == ["b", "a"] and list(obj["a"]) == ["y", "x"]
    assert canonical_json(obj) == '{"b": true, "a": {"y": [1.5, "é"], "x": 1}}'


def test_registry_rejects_duplicates_and_bad_splits():
    reg = Registry("demo")
    reg.add(Template("t", "demo", "train", lambda rng: ("p", "t", None, None)))
    with pytest.raises(SpecError, match="registered twice"):
        reg.add(Template("t", "demo", "heldout", lambda rng: ("p", "t", None, None)))
    with pytest.raises(SpecError, match="split"):
        reg.template("u", "test")


def test_family_dispatch_errors():
    with pytest.raises(ConfigError, match="unknown data family"):
        examples("yaml", "train", 1)
    with pytest.raises(ConfigError, match="split"):
        examples("json", "validation", 1)
    with pytest.raises(ConfigError, match="families"):
        mixture("train", 1, families=("json", "csv"))
    assert FAMILIES == ("json", "tool", "sql", "alert")


# ----------------------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("family", MINE)
def test_deterministic_and_prefix_stable(family):
    a = examples(family, "train", 80, seed=7)
    assert [_key(e) for e in a] == [_key(e) for e in examples(family, "train", 80, seed=7)]
    assert [_key(e) for e in a[:30]] == [_key(e) for e in examples(family, "train", 30, seed=7)]
    assert [_key(e) for e in a] != [_key(e) for e in examples(family, "train", 80, seed=8)]
    assert all(e.family == family for e in a)


def test_template_counts():
    assert len(template_ids("json", "train")) >= 20 and len(template_ids("json", "heldout")) >= 6
    for split, least in (("train", 6), ("heldout", 2)):
        per_tool = Counter(t.split(".")[1] for t in template_ids("tool", split))
        assert set(per_tool) == set(TOOL_NAMES)
        assert min(per_tool.values()) >= least


@pytest.mark.parametrize("family", MINE)
def test_splits_are_disjoint(family):
    train, held = template_ids(family, "train"), template_ids(family, "heldout")
    assert not set(train) & set(held) and len(set(train)) == len(train)
    train_prompts = {prompt_text(e.prompt) for e in examples(family, "train", 1500, seed=0)}
    held_ex = examples(family, "heldout", 400, seed=0)
    assert {e.template for e in held_ex} == set(held)
    assert not {prompt_text(e.prompt) for e in held_ex} & train_prompts


# ------------------------------------------------------------------------- targets: constraint, validity
def _sample(family, split, per_template):
    n = per_template * len(template_ids(family, split))
    return examples(family, split, n, seed=3)


@pytest.mark.parametrize("split", ["train", "heldout"])
@pytest.mark.parametrize("family", MINE)
def test_targets_accepted_token_by_token_and_valid(family, split, tok4k):
    for e in _sample(family, split, 2 if family == "json" else 3):
        c = sg.compile(e.spec, tok4k)
        ids = tok4k.encode(e.target, add_special_tokens=False)
        assert all(c.accepts_prefix(ids[:k]) for k in range(len(ids))), (e.template, e.target)
        assert c.accepts(ids), (e.template, e.target)
        assert not [i for v in validators_for(e.spec) for i in v(e.target)], (e.template, e.target)
        assert isinstance(e.spec, sg.JsonSchema)
        jsonschema.validate(e.gold, e.spec.schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.mark.parametrize("family", MINE)
def test_gold_is_the_target_in_schema_order(family):
    for e in examples(family, "train", 300, seed=5) + examples(family, "heldout", 100, seed=5):
        assert json.loads(e.target) == e.gold
        assert e.target == canonical_json(e.gold)
        schema = e.spec.schema if family == "json" else e.spec.tool(e.gold["name"]).schema
        value = e.gold if family == "json" else e.gold["arguments"]
        assert json.dumps(ordered(value, schema)) == json.dumps(value)
        if family == "tool":
            assert list(e.gold) == ["name", "arguments"]


def test_tool_calls_parse_and_validate_with_pydantic():
    for e in examples("tool", "train", 200, seed=9) + examples("tool", "heldout", 60, seed=9):
        call = e.spec.parse(e.target)
        assert (call.name, call.arguments) == (e.gold["name"], e.gold["arguments"])
        call.tool.model.model_validate(call.arguments)  # raises when invalid
        assert isinstance(e.prompt, str) and e.spec.render_prompt(e.prompt) != e.prompt


# --------------------------------------------------------------------- the data says what the text says
def _string_leaves(value, schema):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _string_leaves(v, schema.get("properties", {}).get(k, {}))
    elif isinstance(value, list):
        for v in value:
            yield from _string_leaves(v, schema.get("items", {}))
    elif isinstance(value, str) and "format" not in schema and "pattern" not in schema:
        yield value.replace("_", " ") if "enum" in schema else value


def test_json_values_come_from_the_text_and_optional_fields_are_left_out():
    left_out = 0
    exs = examples("json", "train", 600, seed=11) + examples("json", "heldout", 200, seed=11)
    for e in exs:
        for s in _string_leaves(e.gold, e.spec.schema):
            if s not in CURRENCY_CODES:  # "$", "US dollars" -> "USD" is the extraction's job
                assert s in e.prompt, (e.template, s, e.prompt)
        left_out += len(e.gold) < len(e.spec.schema["properties"])
        assert set(e.spec.schema.get("required", [])) <= set(e.gold)
    assert left_out > len(exs) // 5
    keys = {k for e in exs for k in e.gold}
    assert any(re.search(r"[a-z][A-Z]", k) for k in keys) and any("_" in k for k in keys)  # camelCase, snake_case


def test_tool_arguments_come_from_the_request():
    iata = {c.iata: c.name for c in V.CITIES}
    for e in examples("tool", "train", 600, seed=12) + examples("tool", "heldout", 200, seed=12):
        a = e.gold["arguments"]
        for k in ("city", "title", "subject", "body", "text", "path"):
            if k in a:
                assert a[k] in e.prompt, (e.template, k, e.prompt)
        for addr in a.get("to", []) + a.get("attendees", []):
            assert addr in e.prompt
        for k in ("origin", "destination"):
            if k in a:
                assert a[k] in e.prompt or iata[a[k]] in e.prompt
        assert len(EMAIL.findall(e.prompt)) == len(a.get("to", []) + a.get("attendees", []))


def test_unstated_tool_arguments_are_left_out():
    exs = examples("tool", "train", 1200, seed=13) + examples("tool", "heldout", 400, seed=13)
    seen: dict[tuple[str, str], set[bool]] = {}
    words = {"unit": r"celsius|fahrenheit|°", "cabin": r"economy|business|first|coach",
             "passengers": r"passenger|people|adults|\bpax\b|of us|seats|tickets|party|\bx\d"}
    for e in exs:
        name, args = e.gold["name"], e.gold["arguments"]
        schema = e.spec.tool(name).schema
        for k, prop in schema["properties"].items():
            if "default" in prop:
                seen.setdefault((name, k), set()).add(k in args)
                if k in words and k not in args:
                    assert not re.search(words[k], e.prompt, re.IGNORECASE), (e.template, k, e.prompt)
        assert set(schema.get("required", [])) <= set(args)
    assert seen and all(v == {True, False} for v in seen.values()), seen


# -------------------------------------------------------------------------------------------- coverage
def test_coverage():
    assert {e.gold["name"] for e in examples("tool", "train", 100, seed=1)} == set(TOOL_NAMES)
    assert {e.gold["name"] for e in examples("tool", "heldout", 30, seed=1)} == set(TOOL_NAMES)
    assert {e.template for e in examples("json", "train", 500, seed=1)} == set(template_ids("json", "train"))
    assert {e.template for e in examples("tool", "train", 500, seed=1)} == set(template_ids("tool", "train"))
    text = " ".join(e.prompt for e in examples("json", "train", 300, seed=1))
    assert re.search(r"[^\x00-\x7f]", text)  # non-ASCII names and places


def test_mixture_and_corpus():
    mix = mixture("train", 40, seed=2, families=MINE)
    assert Counter(e.family for e in mix) == {"json": 40, "tool": 40}
    assert [_key(e) for e in mix] == [_key(e) for e in mixture("train", 40, seed=2, families=MINE)]
    assert [e.family for e in mix[:40]] != ["json"] * 40  # shuffled together
    assert sorted(map(_key, mix)) == sorted(map(_key, examples("json", "train", 40, 2) + examples("tool", "train", 40, 2)))
    texts = corpus_texts(21, seed=2, families=MINE)
    assert len(texts) == 42
    ex = examples("json", "train", 11, seed=2)
    assert texts[:2] == [prompt_text(ex[0].spec.render_prompt(ex[0].prompt)), ex[0].target]
    assert ex[0].prompt in texts[0]
    assert _key(family_module("json").examples("train", 3, 2)[0]) == _key(ex[0])


def test_generated_schemas_are_meta_checked_once_per_piece_not_per_example():
    """Nearly every example has its own key names and fields; the 2020-12 meta-schema check (milliseconds
    each) runs once per piece (an object's own keywords, each property's subschema), and still catches a
    bad one."""
    from structgen.train.data import json_extract as J

    assert len(examples("json", "train", 2000, seed=21)) == 2000
    assert len(J._CHECKED_SHAPES) < 300  # not one per example
    with pytest.raises(SpecError, match="invalid JSON Schema"):
        J.GeneratedSchema({"type": "object", "properties": {"a_new_key": {"type": "strin"}}})


def test_training_tool_prompts_list_subsets_but_held_out_lists_every_tool():
    from structgen.train.data import tool_calls as tc

    every = {t.name for t in tc.tools()}
    train = examples("tool", "train", 200, seed=3)
    listed = [{t.name for t in ex.spec.tools} for ex in train]
    assert all(json.loads(ex.target)["name"] in names for ex, names in zip(train, listed))
    subsets = sum(names != every for names in listed)
    assert 0.45 < subsets / len(train) < 0.75  # SUBSET_SHARE = 0.6
    assert all(len(names) <= 4 for names in listed if names != every)
    for ex in train:  # the prompt lists exactly the tools the constraint allows
        text = ex.spec.render_prompt(ex.prompt)
        assert all((f"\n{n}(" in text) == (n in {t.name for t in ex.spec.tools}) for n in every)
    held = examples("tool", "heldout", 50, seed=3)
    assert all({t.name for t in ex.spec.tools} == every for ex in held)


def test_composed_json_records_state_their_fields_in_any_order_and_never_held_out_keys():
    """The composed templates (json_composed.py): random fields, text order independent of schema order,
    every value stated in the text, and none of the held-out domains' key names."""
    from structgen.train.data.json_composed import FIELDS, LAYOUTS

    composed = [t for t in template_ids("json", "train") if ".composed_" in t]
    assert len(composed) == 2 * len(LAYOUTS)
    exs = [e for e in examples("json", "train", 3000, seed=5) if ".composed_" in e.template]
    assert {e.template for e in exs} == set(composed)

    def keys(es):
        return {k for e in es for k in e.spec.schema["properties"]}

    held_keys = keys(examples("json", "heldout", 400, seed=5))
    domain_keys = keys(e for e in examples("json", "train", 3000, seed=5) if ".composed_" not in e.template)
    bank_keys = {k for kind in FIELDS for k in kind.keys}
    assert held_keys & bank_keys <= domain_keys  # generic keys (name, email ...) the domains already teach
    reordered = 0
    for e in exs:
        positions = [e.prompt.index(v) for v in e.gold.values() if isinstance(v, str) and v in e.prompt]
        reordered += positions != sorted(positions)
    assert reordered > len(exs) // 5


def test_composed_tool_requests_put_the_arguments_in_any_order():
    """tool_composed.py: two composed templates per tool, and a request's argument phrases come in either
    order (origin before destination and after), so position alone never tells which argument is which."""
    composed = [t for t in template_ids("tool", "train") if ".composed_" in t]
    assert sorted(composed) == sorted(f"tool.{n}.composed_{lay}" for n in TOOL_NAMES for lay in ("sentence", "terse"))
    iata = {c.iata: c.name for c in V.CITIES}
    orders = set()
    for e in examples("tool", "train", 3000, seed=14):
        if e.template.startswith("tool.search_flights.composed_"):
            a = e.gold["arguments"]
            o, d = (a[k] if a[k] in e.prompt else iata[a[k]] for k in ("origin", "destination"))
            orders.add(e.prompt.index(o) < e.prompt.index(d))
    assert orders == {True, False}


def test_json_drills_are_conversions_outside_the_family_splits(tok4k):
    """json_drills.py: training-only records of 1-4 values to convert (month names, spelled dates, zones,
    currencies, cabins), never registered in the JSON family's splits; targets valid token by token."""
    from structgen.train.data import json_drills

    drill_ids = {t.id for t in json_drills.REG.train}
    assert drill_ids and not json_drills.REG.heldout
    assert not drill_ids & set(template_ids("json", "train") + template_ids("json", "heldout"))
    exs = json_drills.examples(300, seed=4)
    assert [_key(e) for e in exs[:50]] == [_key(e) for e in json_drills.examples(50, seed=4)]
    assert [_key(e) for e in exs] != [_key(e) for e in json_drills.examples(300, seed=5)]
    assert {e.template for e in exs} == drill_ids and {e.family for e in exs} == {"json"}
    held_keys = {k for e in examples("json", "heldout", 400, seed=5) for k in e.spec.schema["properties"]}
    months = 0
    for i, e in enumerate(exs):
        assert json.loads(e.target) == e.gold and e.target == canonical_json(e.gold)
        assert 1 <= len(e.spec.schema["properties"]) <= 4
        assert not set(e.spec.schema["properties"]) & held_keys
        jsonschema.validate(e.gold, e.spec.schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        for k, v in e.gold.items():
            if k in ("month", "birthMonth", "birth_month", "monthNumber", "month_number"):
                months += 1
                assert V.MONTHS[v - 1][:3].lower() in e.prompt.lower()  # the text names the month
        if i % 10 == 0:
            c = sg.compile(e.spec, tok4k)
            ids = tok4k.encode(e.target, add_special_tokens=False)
            assert all(c.accepts_prefix(ids[:k]) for k in range(len(ids))) and c.accepts(ids), e.target
    assert months > 10


def test_role_drills_tell_a_pair_apart_by_its_words_not_its_place():
    """json_drills.PAIRS: two airports, two currencies or two dates in one sentence, stated in both orders and
    listed in the schema in both orders; the two values always differ, so copying one into both keys is wrong."""
    from structgen.train.data import json_drills

    iata = {c.iata: c.name for c in V.CITIES}
    role = {name: i for key_pairs, _ in json_drills.PAIRS.values() for pair in key_pairs for i, key in enumerate(pair)
            for name in (key, camel(key))}
    text_orders, schema_orders, kinds = set(), set(), set()
    for e in json_drills.examples(600, seed=8):
        if e.template != "json.drill_roles":
            continue
        keys = list(e.spec.schema["properties"])
        a, b = e.gold[keys[0]], e.gold[keys[1]]
        assert len(keys) == 2 and a != b and e.spec.schema["required"] == keys
        schema_orders.add(role[keys[0]] == 0)
        if all(v in iata for v in (a, b)):
            kinds.add("airports")
            origin, destination = (e.gold[k] for k in sorted(keys, key=role.get))
            where = [e.prompt.find(v) if v in e.prompt else e.prompt.find(iata[v]) for v in (origin, destination)]
            assert min(where) >= 0, e.prompt
            text_orders.add(where[0] < where[1])
        elif len(a) == 3:
            kinds.add("currencies")
        else:
            kinds.add("dates")
    assert kinds == {"airports", "currencies", "dates"}
    assert text_orders == {True, False} and schema_orders == {True, False}


def test_drill_examples_join_the_training_rows_only():
    from structgen.train.config import TrainConfig
    from structgen.train.trainer import load_data

    base, drilled = load_data(TrainConfig.tiny()), load_data(TrainConfig.tiny(drill_examples=12))
    drills = [e for e in drilled.train if ".drill_" in e.template]
    assert len(drills) == 12 and len(drilled.train) == len(base.train) + 12
    assert sorted(map(_key, base.train)) == sorted(_key(e) for e in drilled.train if ".drill_" not in e.template)
    assert [_key(e) for e in drilled.heldout] == [_key(e) for e in base.heldout]
    for bad in (-1, 2.5, True):
        with pytest.raises(ConfigError, match="drill_examples"):
            TrainConfig.tiny(drill_examples=bad)
