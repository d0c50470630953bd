"""The grammar engine's endgame search over random tokens: what it costs a generation, and what it decides.

``RandomLogits`` over the 4k test tokenizer writes into ``sg.Sql(shop)`` on the sweep of the SQL validity
property (``tests/test_sql_property.py``): block lengths 8/16/32/48, four commit policies (``threshold=0.9``;
``tokens_per_step`` 1/2/4), greedy and sampled (temperature 0.8), four questions, canvases of 48-64 tokens.
Random tokens run into the canvas's end all the time, so nearly all of a generation's time is the endgame
search (``structgen/constraints/grammar_search.py``) and the llguidance matcher calls it makes.

Printed: the generations, how many were released (valid) or raised a ``GenerationError``, the seconds in
all, per generation (median, slowest), and the matcher calls made (``try_consume_tokens``,
``compute_ff_bytes``, ``compute_bitmask``, counted by wrapping the class). ``digest`` is the sha256 of every
output text and outcome in order: a change that only makes the search faster leaves it as it was.

    python benchmarks/endgame_search.py
    python benchmarks/endgame_search.py --runs 32 --json endgame.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
import time
from collections import Counter
from itertools import product
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

BLOCKS = (8, 16, 32, 48)
POLICIES = ({"threshold": 0.9, "tokens_per_step": None}, {"threshold": None, "tokens_per_step": 1},
            {"threshold": None, "tokens_per_step": 2}, {"threshold": None, "tokens_per_step": 4})
QUESTIONS = ("How many customers are from Germany?", "Which products cost more than 50?",
             "List the ten most recent orders with their customer's name.",
             "What is the total revenue per product category?")
COUNTED = ("try_consume_tokens", "compute_ff_bytes", "compute_bitmask")


def jobs(n: int) -> list[dict]:
    """``n`` generation settings, the property test's sweep in turn (its seeds, block lengths, policies,
    temperatures, questions and canvases), repeated with other seeds past the first 16."""
    sweep, out = list(product(BLOCKS, POLICIES)), []
    for i in range(n):
        block, policy = sweep[i % len(sweep)]
        out.append(dict(seed=7919 * i + 11, block_length=block, temperature=(0.0, 0.8)[(i + i // 4) % 2],
                        question=QUESTIONS[i % len(QUESTIONS)], max_tokens=48 + (5 * i) % 17, **policy))
    return out


class CountingMatcher:
    """Counts the calls of ``COUNTED`` on every ``llguidance.LLMatcher`` made while it is installed."""

    def __init__(self):
        import llguidance

        self.cls = llguidance.LLMatcher
        self.calls: Counter = Counter()
        self.saved = {}

    def __enter__(self):
        for name in COUNTED:
            real = self.saved[name] = getattr(self.cls, name)
            setattr(self.cls, name, self._wrap(name, real))
        return self

    def _wrap(self, name, real):
        calls = self.calls

        def counted(m, *a, **kw):
            calls[name] += 1
            return real(m, *a, **kw)
        return counted

    def __exit__(self, *exc):
        for name, real in self.saved.items():
            setattr(self.cls, name, real)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=16, help="generations (default 16: the property test's sweep)")
    ap.add_argument("--no-count", action="store_true", help="do not wrap the matcher to count its calls")
    C.add_common_args(ap, device=False)
    args = ap.parse_args()
    C.setup_torch(args)
    C.quiet_warnings()
    import structgen as sg

    spec = sg.Sql(C.ROOT / "examples" / "shop" / "shop.sqlite")
    gen = sg.Generator(sg.models.RandomLogits(C.tokenizer("4k"), seed=0))
    digest = hashlib.sha256()
    tally: Counter = Counter()
    seconds: list[float] = []
    counting = None if args.no_count else CountingMatcher()
    with C.progress() as bar, (counting or contextlib.nullcontext()):
        task = bar.add_task("random logits into sg.Sql(shop)", total=args.runs)
        for job in jobs(args.runs):
            kw = dict(job)
            question, max_tokens = kw.pop("question"), kw.pop("max_tokens")
            t0 = time.perf_counter()
            try:
                r = gen.generate(question, spec, max_tokens, strict=True, **kw)
                outcome, text = "released", r.text
            except sg.GenerationError as e:
                outcome, text = "generation error", type(e).__name__
            seconds.append(time.perf_counter() - t0)
            tally[outcome] += 1
            digest.update(f"{outcome}\x00{text}\x00".encode())
            bar.advance(task)
    calls = dict(counting.calls) if counting else {}
    row = [args.runs, tally["released"], tally["generation error"], sum(seconds), C.median(seconds),
           max(seconds), *(calls.get(k, "-") for k in COUNTED), digest.hexdigest()[:16]]
    C.console.print(C.table("The endgame search: random logits into sg.Sql(shop) (the SQL validity property's sweep)",
                            ["generations", "released", "generation errors", "seconds", "median s", "slowest s",
                             *COUNTED, "digest"], [row]))
    C.write_json(args.json, {"runs": args.runs, "tally": dict(tally), "seconds": seconds, "calls": calls,
                             "digest": digest.hexdigest(), "environment": C.environment(args)})


if __name__ == "__main__":
    main()
