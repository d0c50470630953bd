"""Start-up: what a fresh process pays before its first output, and the README's first command end to end.

Each figure is measured in new Python processes (a module imported once is cached, so only a fresh process
shows what a newcomer's command or a new server or test worker pays), ``--repeat`` times, median shown:

* ``import jsonschema`` alone, and after ``import structgen`` (``structgen.deferred_iri`` defers the IRI
  parsers jsonschema's format checker would otherwise build at import);
* ``import structgen``; ``sg.load_model()`` (most of it is importing transformers' ModernBERT); the first
  and the second ``generate`` of the README's example (the first compiles the schema and imports the
  validators);
* the README's first command, ``structgen generate --schema examples/person.json "Maria Lopez, 41, lives
  in Porto"``, from start to exit.

    python benchmarks/startup.py
    python benchmarks/startup.py --repeat 5 --json startup.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

PROMPT = "Maria Lopez, 41, lives in Porto"
SCHEMA = C.ROOT / "examples" / "person.json"

# each prints one JSON object of seconds
IMPORT_JSONSCHEMA = """
import json, time
t = time.perf_counter(); import jsonschema; print(json.dumps({"import jsonschema": time.perf_counter() - t}))
"""
STAGES = """
import json, sys, time
t0 = time.perf_counter(); import structgen as sg
t1 = time.perf_counter(); import jsonschema
t2 = time.perf_counter(); model = sg.load_model()
t3 = time.perf_counter()
gen = sg.Generator(model)
spec = sg.JsonSchema(json.loads(open(sys.argv[1]).read()))
r = gen.generate(sys.argv[2], spec, max_tokens=64)
t4 = time.perf_counter(); gen.generate(sys.argv[2], spec, max_tokens=64)
t5 = time.perf_counter()
assert r.valid, r.text
print(json.dumps({"import structgen": t1 - t0, "import jsonschema after structgen": t2 - t1,
                  "sg.load_model()": t3 - t2, "first generate": t4 - t3, "second generate": t5 - t4}))
"""


def _python(code: str, *args: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=C.ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _first_command() -> dict[str, float]:
    cli = Path(sys.executable).with_name("structgen")
    cmd = [str(cli)] if cli.exists() else [sys.executable, "-c", "from structgen.cli import app; app()"]
    t = time.perf_counter()
    subprocess.run([*cmd, "generate", "--schema", str(SCHEMA), PROMPT], capture_output=True, check=True, cwd=C.ROOT)
    return {"the README's first command": time.perf_counter() - t}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per figure (default 3; median shown)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = ap.parse_args()
    runs: dict[str, list[float]] = {}
    with C.progress() as bar:
        task = bar.add_task("fresh processes", total=3 * args.repeat)
        for _ in range(args.repeat):
            for figures in (_python(IMPORT_JSONSCHEMA), _python(STAGES, str(SCHEMA), PROMPT), _first_command()):
                for name, seconds in figures.items():
                    runs.setdefault(name, []).append(seconds)
                bar.advance(task)
    rows = [[name, C.median(xs), min(xs), max(xs)] for name, xs in runs.items()]
    C.console.print(C.table(f"Start-up ({args.repeat} fresh processes each, seconds)",
                            ["step", "median", "fastest", "slowest"], rows))
    C.write_json(args.json, {"repeat": args.repeat, "seconds": runs})


if __name__ == "__main__":
    main()
