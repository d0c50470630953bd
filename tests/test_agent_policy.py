"""Permission policy: precedence, defaults, argument patterns, and errors for bad policy files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.agent import Policy, PolicyError, Tool, ToolCall, load_tools

ROOT = Path(__file__).resolve().parent.parent
TOOLS = load_tools(ROOT / "examples" / "tools.py")
BY = {t.name: t for t in TOOLS}


def call(name: str, **arguments) -> ToolCall:
    return ToolCall.parse({"name": name, "arguments": arguments}, TOOLS)


EMAIL = dict(subject="s", body="b")


def test_defaults_follow_the_tool_flags():
    p = Policy()
    assert p.decide(call("delete_file", path="/tmp/a")).action == "deny"
    assert p.decide(call("send_email", to=["a@b.io"], **EMAIL)).action == "ask"
    d = p.decide(call("get_weather", city="Oslo"))
    assert (d.action, d.rule) == ("allow", "default:other")
    strict = Policy(defaults={"other": "ask", "side_effects": "deny"})
    assert strict.decide(call("get_weather", city="Oslo")).action == "ask"
    assert strict.decide(call("send_email", to=["a@b.io"], **EMAIL)).action == "deny"
    unknown = ToolCall("mystery", {})  # no Tool attached: the policy cannot know its flags
    assert Policy().decide(unknown).action == "ask"


def test_deny_wins_then_ask_then_allow():
    rules = [{"tool": "send_email", "action": "allow"}, {"tool": "send_*", "action": "ask"},
             {"tool": "*", "action": "deny", "arguments": {"subject": "*secret*"}}]
    p = Policy(rules)
    d = p.decide(call("send_email", to=["a@b.io"], subject="the secret plan", body="b"))
    assert (d.action, d.rule) == ("deny", "rule 3")
    assert p.decide(call("send_email", to=["a@b.io"], **EMAIL)) .action == "ask"
    assert Policy(rules[:1]).decide(call("send_email", to=["a@b.io"], **EMAIL)).action == "allow"
    assert Policy([{"tool": ["delete_file", "x"], "action": "allow", "reason": "ok"}]).decide(
        call("delete_file", path="/x")).reason == "ok"


def test_argument_patterns():
    p = Policy([
        {"tool": "delete_file", "action": "allow", "arguments": {"path": "/tmp/sandbox/*"}},
        {"tool": "get_weather", "action": "deny", "arguments": {"city": {"regex": "(?i)mordor|isengard"}}},
        {"tool": "get_weather", "action": "ask", "arguments": {"days": {"regex": "1[0-4]"}}},
        {"tool": "get_weather", "action": "deny", "arguments": {"unit": "fahrenheit", "days": 3}},
        {"tool": "send_email", "action": "allow", "arguments": {"to": ["*@example.com", "*@example.org"]}},
        {"tool": "send_email", "action": "deny", "arguments": {"to": {"glob": "*@rival.com"}}},
    ])
    a = lambda c: p.decide(c).action  # noqa: E731
    assert a(call("delete_file", path="/tmp/sandbox/a.txt")) == "allow"
    assert a(call("delete_file", path="/tmp/sandbox/../../etc/passwd")) == "deny"  # normalised: /etc/passwd
    assert a(call("delete_file", path="/tmp/sandbox/..")) == "deny"
    assert a(call("delete_file", path="/tmp/other")) == "deny"
    assert a(call("get_weather", city="Mordor")) == "deny"
    assert a(call("get_weather", city="Oslo", days=12)) == "ask"
    assert a(call("get_weather", city="Oslo", days=2)) == "allow"
    assert a(call("get_weather", city="Oslo", unit="fahrenheit", days=3)) == "deny"
    assert a(call("get_weather", city="Oslo", days=3)) == "allow"  # unit defaults to celsius
    assert a(call("send_email", to=["a@example.com", "b@example.org"], **EMAIL)) == "allow"
    assert a(call("send_email", to=["a@example.com", "b@elsewhere.io"], **EMAIL)) == "ask"  # not all match
    assert a(call("send_email", to=["a@example.com", "spy@rival.com"], **EMAIL)) == "deny"  # any matches


def test_missing_argument_matches_nothing():
    t = Tool("note", "Write a note.", {"type": "object", "properties": {"text": {"type": "string"},
                                                                         "folder": {"type": "string"}}})
    p = Policy([{"tool": "note", "action": "deny", "arguments": {"folder": "/secret*"}},
                {"tool": "note", "action": "allow", "arguments": {"folder": "/public*"}}],
               defaults={"other": "ask"})
    c = ToolCall.parse({"name": "note", "arguments": {"text": "hi"}}, [t])
    assert p.decide(c).action == "ask"
    c2 = ToolCall.parse({"name": "note", "arguments": {"text": "hi", "folder": "/secret/x"}}, [t])
    assert p.decide(c2).action == "deny"


ACTION = st.sampled_from(["allow", "ask", "deny"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(ACTION, st.booleans()), max_size=6), st.sampled_from(["get_weather", "delete_file"]))
def test_the_strongest_matching_action_decides(rules, name):
    """Whatever the rules, the decision is the strongest action among the rules that match, else the default."""
    spec = [{"tool": name if hit else "other_tool", "action": action} for action, hit in rules]
    c = call(name, city="Oslo") if name == "get_weather" else call(name, path="/x")
    got = Policy(spec).decide(c).action
    matching = [a for a, hit in rules if hit]
    rank = ["allow", "ask", "deny"]
    want = max(matching, key=rank.index) if matching else ("deny" if name == "delete_file" else "allow")
    assert got == want


# -- files ------------------------------------------------------------------------------------------------
def test_example_policy_file():
    p = Policy.from_toml(ROOT / "examples" / "policy.toml")
    assert len(p.rules) == 4 and p.defaults == {"destructive": "deny", "side_effects": "ask", "other": "allow"}
    assert p.decide(call("delete_file", path="/tmp/structgen-sandbox/a.txt")).action == "allow"
    assert p.decide(call("delete_file", path="/etc/passwd")).action == "deny"
    assert p.decide(call("send_email", to=["team@example.com"], **EMAIL)).action == "allow"
    assert p.decide(call("send_email", to=["ceo@rival.com"], **EMAIL)).action == "deny"
    assert p.decide(call("convert_currency", amount=250000, from_currency="EUR", to_currency="USD")).action == "ask"
    assert p.decide(call("convert_currency", amount=25.5, from_currency="EUR", to_currency="USD")).action == "allow"
    assert p.rules[0].label == "rule 1 (line 13)"


@pytest.mark.parametrize("text, match", [
    ('[[rules]]\ntool = "x"\naction = "permit"\n', r"line 1 \(rule 1\): action 'permit' is not valid"),
    ('[[rules]]\ntool = "x"\naction = "allow"\n\n[[rules]]\ntool = "y"\nactoin = "deny"\n',
     r"line 5 \(rule 2\): unknown key 'actoin'; did you mean 'action'"),
    ('[[rule]]\ntool = "x"\naction = "allow"\n', r"line 1: unknown top-level key 'rule'; did you mean 'rules'"),
    ('[[rules]]\naction = "allow"\narguments = { path = { regex = "(" } }\n', r"rule 1\) argument 'path': invalid regex"),
    ('[[rules]]\naction = "allow"\narguments = { path = { like = "x" } }\n', r"a pattern is a glob string"),
    ('[[rules]]\naction = "allow"\ntool = 3\n', "tool must be a tool name"),
    ('[[rules]]\naction = "allow"\narguments = "x"\n', "arguments must be a table"),
    ('[defaults]\ndestructive = "maybe"\n', r"\[defaults\] destructive = 'maybe' is not an action"),
    ('[defaults]\nharmless = "allow"\n', r"unknown key 'harmless' in \[defaults\]"),
    ('[[rules]\naction = "allow"\n', r"is not valid TOML: .*line 1"),
    ('rules = 3\n', "must be an array of tables"),
])
def test_bad_policy_files_name_the_line_and_fix(tmp_path, text, match):
    f = tmp_path / "p.toml"
    f.write_text(text)
    with pytest.raises(PolicyError, match=match) as e:
        Policy.from_toml(f)
    assert str(f) in str(e.value)


def test_missing_policy_file(tmp_path):
    with pytest.raises(PolicyError, match="cannot read policy file"):
        Policy.from_toml(tmp_path / "nope.toml")
