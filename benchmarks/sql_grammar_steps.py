"""The SQL grammars' work per token: what one llguidance mask costs before ``FROM`` and after it.

Until ``FROM`` a query carries every top-level scope's copy of the expression rules, so a token there costs
hundreds of times one after it (``docs/design-notes.md``, "Few rules per scope"). This walks the gold
queries of the held-out SQL split (``structgen.train.data``, the shop database) token by token through each
grammar of ``sg.Sql(shop)`` — default, strict, and grounded SQL's foreign-key joins — computing the mask at
every token, as the sampler does. A grammar's row counts only the queries it accepts whole (the strict one
refuses an output alias in ``ORDER BY``, the foreign-key one a join on other columns).

Printed per grammar: queries walked, tokens before and after ``FROM``, and microseconds per token in each
part, the fastest of ``--rounds`` rounds (this machine's timings drift by a fifth between runs; the
fastest round is the steadiest figure).

To compare two revisions of the grammar code, write one revision's grammar texts and time them beside the
other's in the same rounds (interleaved, so drift hits both alike):

    python benchmarks/sql_grammar_steps.py
    python benchmarks/sql_grammar_steps.py --dump-texts old.json        # in the old revision's checkout
    python benchmarks/sql_grammar_steps.py --against old.json --rounds 12
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

SHOP = C.ROOT / "examples" / "shop" / "shop.sqlite"
GRAMMARS = {"default": {}, "strict": {"strict": True}, "foreign keys": {"fk_joins": True}}


def grammar_texts() -> dict[str, str]:
    """This checkout's Lark text of each grammar in ``GRAMMARS`` for the shop database."""
    from structgen.sql import DbSchema, specialise

    schema = DbSchema.read(SHOP)
    return {name: specialise(schema, **kw) for name, kw in GRAMMARS.items()}


def accepted(llg, vocab, tok, grammar, golds: list[str]) -> tuple[list[list[int]], list[int]]:
    """The token ids of the queries in ``golds`` that ``grammar`` accepts whole, and for each the index of
    its first token after ``FROM``."""
    queries, cuts = [], []
    for q in golds:
        ids = vocab.encode(q)
        m = llg.LLMatcher(vocab.ll, grammar, log_level=0)
        if m.is_error() or m.try_consume_tokens(ids) != len(ids) or not m.is_accepting():
            continue
        head = q.index(" FROM ") + len(" FROM ")
        cuts.append(next(k for k in range(len(ids) + 1) if len(tok.decode(ids[:k])) >= head))
        queries.append(ids)
    return queries, cuts


def walk(llg, vocab, grammar, queries: list[list[int]], from_at: list[int]) -> tuple[float, float]:
    """Seconds spent on masks and steps before and after ``FROM`` over ``queries`` (token ids; ``from_at``:
    the index of each query's first token after ``FROM``)."""
    import llguidance.numpy as lln

    mask = lln.allocate_token_bitmask(1, vocab.ll.vocab_size)
    before = after = 0.0
    for ids, cut in zip(queries, from_at):
        m = llg.LLMatcher(vocab.ll, grammar, log_level=0)
        for k, t in enumerate(ids):
            t0 = time.perf_counter()
            lln.fill_next_token_bitmask(m, mask, 0)
            m.consume_token(t)
            dt = time.perf_counter() - t0
            if k < cut:
                before += dt
            else:
                after += dt
    return before, after


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=24, help="held-out SQL questions whose gold queries are walked (24)")
    ap.add_argument("--seed", type=int, default=1234, help="seeds the questions (default: structgen eval's)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; each figure is the fastest round's (5)")
    ap.add_argument("--against", metavar="FILE", help="also time the grammar texts in FILE (--dump-texts)")
    ap.add_argument("--dump-texts", metavar="FILE", help="write this checkout's grammar texts to FILE and stop")
    C.add_common_args(ap, device=False)
    args = ap.parse_args()
    if args.dump_texts:
        Path(args.dump_texts).write_text(json.dumps(grammar_texts()), encoding="utf-8")
        C.console.print(f"wrote {args.dump_texts}")
        return
    C.quiet_warnings()
    import llguidance as llg

    from structgen.constraints.vocab import TokenVocab
    from structgen.train.data import examples

    tok = C.tokenizer("4k")
    vocab = TokenVocab.of(tok)
    texts = grammar_texts()
    if args.against:
        texts.update({f"{name} ({args.against})": text
                      for name, text in json.loads(Path(args.against).read_text(encoding="utf-8")).items()})
    golds = [ex.gold for ex in examples("sql", "heldout", args.n, seed=args.seed)]
    plan = {}  # grammar -> (compiled grammar, token ids of the queries it accepts, FROM cut per query)
    for name, text in texts.items():
        grammar = llg.LLMatcher.grammar_from_lark(text)
        plan[name] = (grammar, *accepted(llg, vocab, tok, grammar, golds))
    best = {name: [float("inf"), float("inf")] for name in plan}
    with C.progress() as bar:
        task = bar.add_task("rounds (every grammar in each)", total=args.rounds)
        for _ in range(args.rounds):
            for name, (grammar, queries, cuts) in plan.items():
                before, after = walk(llg, vocab, grammar, queries, cuts)
                best[name] = [min(best[name][0], before), min(best[name][1], after)]
            bar.advance(task)
    rows, figures = [], {}
    for name, (_, queries, cuts) in plan.items():
        n_before = sum(cuts)
        n_after = sum(len(q) for q in queries) - n_before
        us_before = 1e6 * best[name][0] / max(n_before, 1)
        us_after = 1e6 * best[name][1] / max(n_after, 1)
        rows.append([name, len(queries), n_before, n_after, us_before, us_after])
        figures[name] = {"queries": len(queries), "tokens_before_from": n_before, "tokens_after_from": n_after,
                         "us_per_token_before_from": us_before, "us_per_token_after_from": us_after}
    C.console.print(C.table(f"The SQL grammars' mask per token (fastest of {args.rounds} rounds, {len(golds)} "
                            "held-out gold queries, the 4k test tokenizer)",
                            ["grammar", "queries", "tokens before FROM", "tokens after",
                             "µs/token before FROM", "µs/token after"], rows))
    C.write_json(args.json, {"figures": figures, "rounds": args.rounds, "n": args.n, "seed": args.seed,
                             "environment": C.environment(args)})


if __name__ == "__main__":
    main()
