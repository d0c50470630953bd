"""Make and model: which part of a product's name is its maker's and which its model's.

A request names a product maker first: "Volvo XC60", "Citroën C3", "Land Rover Defender". An object with a
field for each (``make``/``brand``/``manufacturer`` and ``model``), both a choice of the request's proper
names (``structgen.proper_names``), lets a small model write them either way round or write the whole name
into one: ``"make": "C3", "model": "Citroën"``, ``"make": "Volvo XC60"``. Here each field is ruled out of
the other's part of a name (``EXCLUDE_KEY``): within a name of several words the make is a part that starts
where the name starts and ends before it does, the model a part that ends where it ends and starts after
it starts. A name written on its own ("Volvo", then "the XC60") stays allowed in both fields, and nothing
changes unless the object has exactly one field of each kind.
"""

from __future__ import annotations

from .proper_names import key_words, word_places

__all__ = ["make_model_pair", "split_make_model"]

#: key words of a maker's field
MAKE_WORDS = frozenset("make brand manufacturer maker".split())
#: key words that say a field named "model..." holds no model's name (``model_year``, ``model_number``)
NOT_MODEL_WORDS = frozenset("year number no id code".split())


def make_model_pair(properties: dict) -> tuple[str, str] | None:
    """The (make, model) property names of an object whose ``properties`` have exactly one of each."""
    names = [k for k in properties if isinstance(k, str)]
    makes = [k for k in names if set(key_words(k)) & MAKE_WORDS]
    models = [k for k in names if "model" in key_words(k) and not set(key_words(k)) & (NOT_MODEL_WORDS | MAKE_WORDS)]
    return (makes[0], models[0]) if len(makes) == 1 and len(models) == 1 else None


def _runs(names: list[str], source: str) -> list[tuple[int, int]]:
    """(start, end) of each place ``source`` writes one of ``names`` of several words that no longer one
    holds: a whole name."""
    places = {p for n in names if " " in n.strip() for p in word_places(n, source)}
    return [(a, b) for a, b in places if not any(x <= a and b <= y and y - x > b - a for x, y in places)]


def _fits(value: str, source: str, runs: list[tuple[int, int]], part: str) -> bool:
    """Whether some place ``source`` writes ``value`` may be the ``part`` ("make" or "model") of a name:
    outside every name of several words, or the make's part of one (its start, not its end) or the model's
    (its end, not its start)."""
    for a, b in word_places(value, source):
        run = next(((x, y) for x, y in runs if x <= a and b <= y), None)
        if run is None or (part == "make" and a == run[0] and b < run[1]) \
                or (part == "model" and b == run[1] and a > run[0]):
            return True
    return False


def split_make_model(properties: dict, source: str) -> dict:
    """``properties`` (marked by ``ground_schema``, spans chosen) with the make field no longer allowing a
    model's part of a name and the model field no longer allowing a make's (``EXCLUDE_KEY``), where each
    keeps a value to write; unchanged otherwise."""
    from .grounding import STATED_KEY, stated_for
    from .roles import rule_out
    from .stated_spans import KIND_KEY

    pair = make_model_pair(properties)
    nodes = [properties.get(k) for k in pair or ()]
    if pair is None or not all(isinstance(n, dict) and STATED_KEY in n and n.get(KIND_KEY) == "name"
                               for n in nodes):
        return properties
    stated = [[v for v in stated_for(n, source) if isinstance(v, str)] for n in nodes]
    runs = _runs(list(dict.fromkeys(v for vs in stated for v in vs)), source)
    out = dict(properties)
    for key, node, values, part in zip(pair, nodes, stated, ("make", "model")):
        out[key] = rule_out(node, values, [v for v in values if not _fits(v, source, runs, part)])
    return out
