"""Which arguments does a model get wrong? The tool calls of a ``structgen eval`` run, argument by argument.

``structgen eval`` scores a tool call as one exact match; this reads the examples it wrote
(``OUT/examples.jsonl``), rebuilds the same examples (the same split and seed) and says, for each decoded
call, whether its name was wrong, and otherwise which arguments differ from the gold call once the tool's
defaults apply (as ``evaluate.same_call`` compares them). The second count is the lever: an argument that is
the *only* wrong one of its call would turn that call right on its own. Figures only; nothing is asserted.

    structgen eval --model DIR -n 50 --modes constrained --families tool --out OUT
    python benchmarks/argument_errors.py OUT/examples.jsonl            # the held-out split, seed 1234
    python benchmarks/argument_errors.py OUT/examples.jsonl --mode one-token --json errors.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

NAME, INVALID = "(the tool's name)", "(not a valid call)"


def wrong_arguments(spec, got: str, gold: str) -> list[str]:
    """What differs between the decoded call ``got`` and ``gold`` (both as text): ``[NAME]`` for another
    tool, ``[INVALID]`` for text that is not a valid call, else ``"tool.argument"`` for each argument whose
    value the tool would receive differently (an empty list: the same call)."""
    from structgen.errors import StructgenError
    from structgen.train.evaluate import resolved_arguments

    want = spec.parse(json.loads(gold))
    try:
        have = spec.parse(json.loads(got))
    except (StructgenError, ValueError):
        return [INVALID]
    if have.name != want.name:
        return [NAME]
    a, b = resolved_arguments(have), resolved_arguments(want)
    return [f"{want.name}.{k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def tally(rows: list[dict], exs: list) -> dict:
    """Counts over decoded rows paired with their examples: calls right, wrong per argument, and wrong as
    the only wrong argument of its call."""
    wrong, only, right = Counter(), Counter(), 0
    for row, ex in zip(rows, exs):
        if row["template"] != ex.template:
            raise SystemExit(f"row of template {row['template']!r} paired with an example of {ex.template!r}: "
                             "give the --split and --seed the eval ran with")
        diff = wrong_arguments(ex.spec, row["text"], ex.target) if row["text"] else [INVALID]
        right += not diff
        wrong.update(diff)
        if len(diff) == 1:
            only.update(diff)
    return {"n": len(rows), "right": right, "wrong": dict(wrong), "only_wrong": dict(only)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("examples", help="examples.jsonl written by structgen eval")
    ap.add_argument("--mode", default="constrained", help="which decoding mode's rows to read")
    ap.add_argument("--split", default="heldout", help="the split the eval ran on")
    ap.add_argument("--seed", type=int, default=1234, help="the seed the eval ran with")
    ap.add_argument("--json", default=None, help="also write the counts to this file")
    args = ap.parse_args()
    from structgen.train.data import examples

    rows = [r for r in map(json.loads, Path(args.examples).read_text().splitlines())
            if r["family"] == "tool" and r["mode"] == args.mode]
    if not rows:
        raise SystemExit(f"{args.examples} has no tool-call rows of mode {args.mode!r}")
    got = tally(rows, list(examples("tool", args.split, len(rows), args.seed)))
    table = [[k, v, got["only_wrong"].get(k, 0)] for k, v in sorted(got["wrong"].items(), key=lambda kv: -kv[1])]
    C.console.print(C.table(f"Wrong arguments in {got['n']} {args.mode} tool calls ({got['right']} right)",
                            ["argument", "wrong", "the only wrong one of its call"], table))
    C.write_json(args.json, {"examples": args.examples, "mode": args.mode, "split": args.split, **got})


if __name__ == "__main__":
    main()
