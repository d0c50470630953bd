"""Fine-tuning the embedded model on a schema of your own: `structgen train --from default --data FILE`.

A user's task the shipped model never saw: parcel-tracking records (a tracking code, a carrier, a weight, a
delivered flag, a recipient). This script writes its training file (train phrasings) and a held-out set
(other phrasings), fine-tunes the embedded model on the file with the `structgen train` code path, and
scores the base and the fine-tuned model on the held-out requests with constrained decoding, and with
grounded decoding (values taken from the request): field accuracy and exact match. Then it scores both on
the built-in tool calls (`structgen eval`'s held-out split, grounded), to show what the new task cost the
old one. Prints one table; `--json FILE` writes it too.

    python benchmarks/fine_tune.py                      # 400 rows, 300 steps (a few minutes on 2 cores)
    python benchmarks/fine_tune.py --mix 100            # + 100 generated rows per built-in family
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "tracking_code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{9}[A-Z]{2}$"},
        "carrier": {"enum": ["DHL", "UPS", "FedEx", "PostNord", "GLS"]},
        "weight_kg": {"type": "number", "minimum": 0},
        "delivered": {"type": "boolean"},
        "recipient": {"type": "string", "maxLength": 60},
    },
    "required": ["tracking_code", "carrier", "weight_kg", "delivered", "recipient"],
    "additionalProperties": False,
}
FIRST = ("Ingrid", "Tomás", "Aiko", "Kwame", "Léa", "Mateus", "Olga", "Sven", "Priya", "Yusuf", "Hana", "Jonas")
LAST = ("Berg", "Okafor", "Silva", "Nakamura", "Dubois", "Kowalski", "Haddad", "Lindqvist", "Rossi", "Mensah")
TRAIN_PHRASES = (
    "Parcel {code} ({carrier}), {kg} kg, for {who}: {state}.",
    "{carrier} shipment {code} to {who} weighs {kg} kg and is {state}.",
    "Tracking {code} | carrier {carrier} | {kg} kg | recipient {who} | {state}",
    "Your {carrier} package for {who} ({kg} kg, tracking number {code}) is {state}.",
    "{who} - {kg}kg - {carrier} - {code} - {state}",
    "Update on {code}: the {kg} kg box sent with {carrier} to {who} is {state}.",
)
HELDOUT_PHRASES = (
    "Hi {who}, good news about order {code}! {carrier} says your {kg} kg parcel is {state}.",
    "Shipment status for {who}: {state}. Courier: {carrier}. Ref {code}. Weight {kg} kg.",
    "{code} / {carrier} / addressed to {who} / {kg} kilograms / {state}",
)
STATES = {True: ("delivered", "already delivered", "handed over"),
          False: ("in transit", "on its way", "not delivered yet")}


def record(rng: random.Random, phrases) -> dict:
    """One example line: a phrasing of random values, and the object it states."""
    code = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(2)) + \
        "".join(rng.choice("0123456789") for _ in range(9)) + rng.choice(("SE", "DE", "US", "GB", "NO"))
    carrier, who = rng.choice(SCHEMA["properties"]["carrier"]["enum"]), f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    kg = rng.choice((round(rng.uniform(0.2, 30), 1), rng.randint(1, 40)))
    done = rng.random() < 0.5
    prompt = rng.choice(phrases).format(code=code, carrier=carrier, kg=kg, who=who, state=rng.choice(STATES[done]))
    return {"prompt": prompt, "schema": SCHEMA,
            "target": {"tracking_code": code, "carrier": carrier, "weight_kg": kg, "delivered": done,
                       "recipient": who}}


def score(model, own: dict, tool_n: int) -> dict[str, tuple[float, float, float]]:
    """``structgen eval --data``'s scores of ``own`` (the held-out lines by family) and of ``tool_n`` built-in
    held-out tool calls: {mode: (field accuracy, exact match, nfe per output token)} for constrained and
    grounded decoding of the parcels, and "tools": grounded tool calls, the mode in which the embedded model
    gets most of them right, so what fine-tuning costs shows."""
    from structgen.train.evaluate import evaluate

    rows = evaluate(model, families=("json",), n=len(own["json"]), modes=("constrained", "grounded"), own=own)
    out = {r.mode: (r.accuracy, r.exact, r.nfe_per_token) for r in rows}
    tools = evaluate(model, families=("tool",), n=tool_n, modes=("grounded",), split="heldout")[0]
    return {**out, "tools": (tools.accuracy, tools.exact, tools.nfe_per_token)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400, help="training lines written")
    ap.add_argument("--heldout", type=int, default=60, help="held-out requests scored")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--mix", type=int, default=0, help="generated rows per built-in family mixed in")
    ap.add_argument("--tool-n", type=int, default=30, help="built-in tool calls scored before and after")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import structgen as sg
    from structgen.train.config import TrainConfig
    from structgen.train.data import mixed_in
    from structgen.train.data.from_file import load_file
    from structgen.train.evaluate import file_examples
    from structgen.train.trainer import TrainData, train

    rng = random.Random(args.seed)
    lines = [record(rng, TRAIN_PHRASES) for _ in range(args.rows)]
    lines += [{**record(rng, HELDOUT_PHRASES), "split": "heldout"} for _ in range(args.heldout)]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "parcels.jsonl"
        data.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
        rows, heldout_rows = load_file(data)
        own = file_examples(data)  # what `structgen eval --data parcels.jsonl` scores
        before = score(sg.load_model(), own, args.tool_n)
        cfg = TrainConfig.fine_tune("default", steps=args.steps, minutes=None, seed=args.seed)
        train_rows = mixed_in(rows, args.mix, args.seed)  # what `structgen train --data F --mix N` trains on
        t0 = time.perf_counter()
        report = train(cfg, Path(tmp) / "tuned", progress=True, data=TrainData(train=train_rows, heldout=heldout_rows))
        seconds = time.perf_counter() - t0
        after = score(sg.load_model(Path(tmp) / "tuned"), own, args.tool_n)
    figures = {"rows": len(train_rows), "steps": report.steps, "train_seconds": round(seconds, 1),
               "peak_rss_mb": round(report.peak_rss_mb), "final_train_loss": report.final_train_loss,
               "before": before, "after": after}
    C.console.print(C.table(
        f"Fine-tuning the embedded model on a new schema ({len(train_rows)} rows, {report.steps} steps, "
        f"{seconds:.0f} s, peak {report.peak_rss_mb:.0f} MB)",
        ["model", "parcels: field accuracy", "exact", "nfe/token", "grounded: field accuracy", "exact",
         "nfe/token", "built-in tool calls (grounded): exact"],
        [[name, *(f"{x:.1%}" if i < 2 else f"{x:.3f}" for mode in ("constrained", "grounded")
                  for i, x in enumerate(scores[mode])), f"{scores['tools'][0]:.1%}"]
         for name, scores in (("embedded (base)", before), ("fine-tuned", after))]))
    C.write_json(args.json and str(args.json), figures)


if __name__ == "__main__":
    main()
