"""Home and away: which team a match report gives the home side, and which the away side.

A match record has a pair of side fields (``home``/``away``, ``homeTeam``/``visitors``, ``host``/``guest``)
that take two names of one kind from the request, and a small model swaps them as often as not ("Atlético
5-1 Ajax" written with Ajax at home). Grounding (``structgen.grounding_fields``) reads the side of each name
the fields may hold here and rules each out of the other side's field (``EXCLUDE_KEY``), as
``structgen.roles`` does for a pair of direction fields. A name's side, from the words right before it:

* **away** — after "hosted", "hosts", "welcomed", "at home to", "vs", "v." or "versus" ("Ajax hosted
  Malmö FF"); after a score ("Atlético 5-1 Ajax": a result is written home side first);
* **home** — after "visited", "visiting", "travelled to", "away to", "away at", "hosted by", "guests of".

The nearest such words before a place of the name, within its clause, decide (``roles.role_before``); a name
stated with both sides, or none, has none, unless it is one of two names the fields may hold and the other
has a side. Each field keeps at least one name. Nothing changes unless the object has exactly one home and
one away field, each a choice of the request's names (``structgen.proper_names``: ``homeTeam`` and
``visitors`` are such fields).

Scores: with one home and one away team known, a pair of score fields (``home_goals``/``awayScore``) takes
the numbers of a score in the order its sentence names the teams (``score_sides``: "Galatasaray hosted FC
Porto; the final score was 3 to 5" gives the home side 3), each field ruling out the other side's number.
"""

from __future__ import annotations

import re

__all__ = ["side_pair", "name_sides", "score_sides", "split_by_side"]

_HOME_FIELD = re.compile(r"(?:home|hosts?)(?:[_ ]?(?:team|side|club|name))?", re.IGNORECASE)
_AWAY_FIELD = re.compile(r"(?:away|visitors?|visiting|guests?)(?:[_ ]?(?:team|side|club|name))?", re.IGNORECASE)
_SIDE_CUES = re.compile(
    r"(?<!\w)(?:(?P<home>visited|visits|visiting|travell?ed\s+to|away\s+(?:to|at)|hosted\s+by|guests\s+of)"
    r"|(?P<away>hosted|hosts|hosting|welcomed|welcomes|at\s+home\s+(?:to|against)|vs|v|versus))(?!\w)"
    r"|(?P<score>(?<![\w.\-–])\d{1,3}\s*[-–]\s*\d{1,3}(?![\w\-–]))",
    re.IGNORECASE)
_ABBREVIATION = re.compile(r"(?<!\w)(vs|v)\.", re.IGNORECASE)
_HOME_SCORE = re.compile(r"(?:home|hosts?)[_ ]?(?:score|goals|points)", re.IGNORECASE)
_AWAY_SCORE = re.compile(r"(?:away|visitors?|visiting|guests?)[_ ]?(?:score|goals|points)", re.IGNORECASE)
_SCORE = re.compile(r"(?<![\w.\-–])(\d{1,3})(?:\s*[-–]\s*|\s+to\s+)(\d{1,3})(?![\w\-–])")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
_PASSIVE = re.compile(r"(?<!\w)by(?!\w)", re.IGNORECASE)  # "Ajax were beaten 3-1 by Benfica": no order to read


def side_pair(properties: dict, score: bool = False) -> tuple[str, str] | None:
    """The (home, away) property names of an object whose ``properties`` have exactly one team field of each
    side (``score``: one score field of each side, ``home_goals``/``awayScore``)."""
    home, away = (_HOME_SCORE, _AWAY_SCORE) if score else (_HOME_FIELD, _AWAY_FIELD)
    names = [k for k in properties if isinstance(k, str)]
    homes = [k for k in names if home.fullmatch(k)]
    aways = [k for k in names if away.fullmatch(k)]
    return (homes[0], aways[0]) if len(homes) == 1 and len(aways) == 1 else None


def name_sides(names: list[str], source: str) -> dict[str, str]:
    """The side ("home" or "away") of each of ``names`` that ``source`` states with one side only; of two
    names, when one has a side and the other none, the other takes the other side."""
    from .proper_names import word_places
    from .roles import role_before

    # "vs." ends no clause: the same text, its abbreviations' dots made spaces (so every place stays where it is)
    plain = _ABBREVIATION.sub(lambda m: m[1] + " ", source)
    out: dict[str, str] = {}
    for name in names:
        sides = {role_before(plain, a, _SIDE_CUES) for a, _ in word_places(name, source)}
        sides = {"away" if s == "score" else s for s in sides}
        if len(sides) == 1 and None not in sides:
            out[name] = sides.pop()
    if len(names) == 2 and len(out) == 1:
        (known, side), = out.items()
        out[next(n for n in names if n != known)] = "home" if side == "away" else "away"
    return out


def score_sides(home: str, away: str, source: str) -> dict[float, str]:
    """The side of each number of the scores ``source`` states ("Atlético 5-1 Ajax", "Galatasaray hosted
    FC Porto; the final score was 3 to 5", "Benfica beat Ajax 3-1"): the first number is the score of the
    team its sentence names first, the second the other's; {} when a sentence with a score names not both
    teams or says "by" (the passive, "Ajax were beaten 3-1 by Benfica", names the loser first), the numbers
    are equal, or two scores disagree."""
    from .proper_names import word_places

    out: dict[float, str] = {}
    for m in _SCORE.finditer(source):
        start = max((e.end() for e in _SENTENCE_END.finditer(source, 0, m.start())), default=0)
        end = next((e.start() for e in _SENTENCE_END.finditer(source, m.end())), len(source))
        firsts = {side: next((a for a, b in word_places(name, source) if start <= a and b <= end), None)
                  for side, name in (("home", home), ("away", away))}
        a, b = float(m[1]), float(m[2])
        if None in firsts.values() or a == b or _PASSIVE.search(source, start, end):
            return {}
        first = min(firsts, key=firsts.get)
        for value, side in ((a, first), (b, "away" if first == "home" else "home")):
            if out.setdefault(value, side) != side:
                return {}
    return out


def split_by_side(properties: dict, source: str) -> dict:
    """``properties`` (marked by ``ground_schema``, spans chosen) with each team field of a side pair no
    longer allowing the names of the other side, and each score field the other side's score
    (``EXCLUDE_KEY``), where it keeps a value to write; unchanged otherwise."""
    from .grounding import STATED_KEY, stated_for
    from .roles import rule_out
    from .stated_spans import KIND_KEY

    pair = side_pair(properties)
    nodes = [properties.get(k) for k in pair or ()]
    if pair is None or not all(isinstance(n, dict) and STATED_KEY in n and n.get(KIND_KEY) == "name"
                               for n in nodes):
        return properties
    stated = [stated_for(n, source) for n in nodes]
    names = list(dict.fromkeys(v for vs in stated for v in vs if isinstance(v, str)))
    sides = name_sides(names, source)
    out = dict(properties)
    for key, node, values, other in zip(pair, nodes, stated, ("away", "home")):
        out[key] = rule_out(node, values, [v for v in values if sides.get(v) == other])
    teams = {side: [n for n in names if sides.get(n) == side] for side in ("home", "away")}
    scores = side_pair(properties, score=True)
    if scores is None or len(teams["home"]) != 1 or len(teams["away"]) != 1:
        return out
    numbers = score_sides(teams["home"][0], teams["away"][0], source)
    for key, other in zip(scores, ("away", "home")):
        node = properties[key]
        if isinstance(node, dict) and STATED_KEY in node:
            values = stated_for(node, source)
            out[key] = rule_out(node, values, [v for v in values if isinstance(v, (int, float))
                                               and not isinstance(v, bool) and numbers.get(float(v)) == other])
    return out
