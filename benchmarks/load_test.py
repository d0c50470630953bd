"""Load test of the OpenAI-compatible server: ``structgen serve`` in a child process, N concurrent clients
(threads of this process, the official ``openai`` client) for M requests each, on loopback only.

    python benchmarks/load_test.py --clients 8 --requests 5
    python benchmarks/load_test.py --clients 4 --requests 3 --model random --json load.json

Requests cycle through four shapes, all with the seven example tools (``examples/tools.py``): a required
tool call, the same streamed, ``tool_choice="auto"``, and a ``response_format`` json_schema object. Every
client sends its requests one after another, so at most N are in flight; the run stops after
``--timeout`` seconds whatever is left.

Figures: completed requests, throughput (completed per second of wall time), p50 / p95 latency, status
counts (5xx, 4xx, connection errors), the batching the server reports (forward passes, mean and largest
batch) and the audit check: every completed request must have its rows in the server's audit log, from
``request`` first to ``completed`` last. Exit status 1 when any request got a 5xx or a connection error,
or any completed request's audit rows are missing. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:  # a source checkout without `pip install -e .`
    import structgen  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(ROOT))

MAX_CLIENTS = 64
MAX_TOTAL = 5000
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}
PROMPTS = ["What's the weather in Oslo for 3 days?", "Book a flight from OSL to CDG on 2026-03-14",
           "Convert 120 EUR to USD", "Remind me to call Ana at 2026-05-01T09:00:00Z"]
SHAPES = ("tool_required", "tool_stream", "tool_auto", "json_schema")


@dataclass
class Outcome:
    shape: str
    status: int  # HTTP status; 0 for a connection error
    latency_s: float
    request_id: str | None = None
    error: str | None = None


def one_request(client, tools: list, shape: str, prompt: str, max_tokens: int) -> Outcome:
    import openai

    messages = [{"role": "user", "content": prompt}]
    t0 = time.perf_counter()
    try:
        if shape == "json_schema":
            r = client.chat.completions.create(
                model="structgen", messages=messages, max_tokens=max_tokens,
                response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}})
            rid = r.id
        elif shape == "tool_stream":
            rid = None
            for chunk in client.chat.completions.create(model="structgen", messages=messages, tools=tools,
                                                        tool_choice="required", max_tokens=max_tokens, stream=True):
                rid = chunk.id
        else:
            r = client.chat.completions.create(model="structgen", messages=messages, tools=tools,
                                               tool_choice="required" if shape == "tool_required" else "auto",
                                               max_tokens=max_tokens)
            rid = r.id
        return Outcome(shape, 200, time.perf_counter() - t0, rid)
    except openai.APIStatusError as e:
        return Outcome(shape, e.status_code, time.perf_counter() - t0, error=str(e)[:300])
    except openai.APIConnectionError as e:
        return Outcome(shape, 0, time.perf_counter() - t0, error=f"{type(e).__name__}: {e}"[:300])


def run_clients(base_url: str, clients: int, requests: int, max_tokens: int, deadline: float) -> list[Outcome]:
    import openai

    from structgen.agent import load_tools, to_openai_tools

    tools = to_openai_tools(load_tools(ROOT / "examples" / "tools.py"))
    results: list[Outcome] = []
    lock = threading.Lock()

    def client_loop(c: int) -> None:
        client = openai.OpenAI(base_url=base_url, api_key="load-test", max_retries=0, timeout=600)
        for i in range(requests):
            if time.monotonic() > deadline:
                return
            k = c * requests + i
            out = one_request(client, tools, SHAPES[k % len(SHAPES)], PROMPTS[k % len(PROMPTS)], max_tokens)
            with lock:
                results.append(out)

    threads = [threading.Thread(target=client_loop, args=(c,), daemon=True) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()) + 5)
    return results


def audit_missing(audit_path: Path, request_ids: list[str]) -> list[str]:
    """Completed requests whose audit rows are missing or incomplete (no ``request`` first or ``completed``
    last). Read-only: the server keeps writing its WAL file."""
    db = sqlite3.connect(f"file:{audit_path}?mode=ro", uri=True, timeout=30)
    try:
        missing = []
        for rid in request_ids:
            kinds = [k for (k,) in db.execute("SELECT kind FROM events WHERE request_id = ? ORDER BY seq", (rid,))]
            if not kinds or kinds[0] != "request" or kinds[-1] != "completed":
                missing.append(rid)
        return missing
    finally:
        db.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main(argv: list[str] | None = None) -> int:
    from structgen.server.testing import ServerProcess

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=8, help=f"concurrent clients (at most {MAX_CLIENTS})")
    ap.add_argument("--requests", type=int, default=5, help="requests per client")
    ap.add_argument("--model", default="random", help="model for `structgen serve --model` (default: random)")
    ap.add_argument("--max-tokens", type=int, default=96, help="canvas length of every request")
    ap.add_argument("--workers", type=int, default=4, help="server generation workers (batched on the model)")
    ap.add_argument("--timeout", type=float, default=600, help="stop sending after this many seconds")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if not (1 <= args.clients <= MAX_CLIENTS) or args.requests < 1 or args.clients * args.requests > MAX_TOTAL:
        ap.error(f"need 1 <= clients <= {MAX_CLIENTS}, requests >= 1 and clients x requests <= {MAX_TOTAL}")
    with tempfile.TemporaryDirectory(prefix="structgen-load-") as tmp:
        audit = Path(tmp) / "audit.db"
        serve_args = ["--model", args.model, "--audit", str(audit), "--tools", str(ROOT / "examples" / "tools.py"),
                      "--policy", str(ROOT / "examples" / "policy.toml"), "--workers", str(args.workers),
                      "--queue-size", str(max(32, args.clients)), "--log-level", "warning"]
        with ServerProcess(serve_args, log_path=Path(tmp) / "server.log") as srv:
            # one warm-up request compiles the constraints, so the figures are of serving, not compiling
            run_clients(srv.base_url, 1, len(SHAPES), args.max_tokens, time.monotonic() + args.timeout)
            t0 = time.perf_counter()
            outcomes = run_clients(srv.base_url, args.clients, args.requests, args.max_tokens,
                                   time.monotonic() + args.timeout)
            wall = time.perf_counter() - t0
            with urllib.request.urlopen(srv.url + "/health", timeout=10) as r:
                health = json.loads(r.read())
            ok = [o for o in outcomes if o.status == 200 and o.request_id]
            missing = audit_missing(audit, [o.request_id for o in ok])
            server_alive = srv.proc.poll() is None
    lat = sorted(o.latency_s for o in ok)
    figures = {
        "clients": args.clients, "requests_per_client": args.requests, "sent": len(outcomes), "completed": len(ok),
        "wall_s": round(wall, 3), "throughput_rps": round(len(ok) / wall, 3) if wall > 0 else None,
        "p50_s": round(percentile(lat, 50), 3), "p95_s": round(percentile(lat, 95), 3),
        "status_5xx": sum(1 for o in outcomes if o.status >= 500), "status_4xx": sum(1 for o in outcomes
                                                                                     if 400 <= o.status < 500),
        "connection_errors": sum(1 for o in outcomes if o.status == 0), "audit_missing": len(missing),
        "server_alive": server_alive, "batching": health.get("batching"), "model": args.model,
        "workers": args.workers, "max_tokens": args.max_tokens,
        "by_shape": {shape: {"completed": len(ls), "p50_s": round(percentile(ls, 50), 3)}
                     for shape in SHAPES for ls in [sorted(o.latency_s for o in ok if o.shape == shape)]},
        "errors": [asdict(o) for o in outcomes if o.status != 200][:10],
    }
    print(f"load test: {args.clients} clients x {args.requests} requests, model {args.model}, "
          f"{args.workers} workers, max_tokens {args.max_tokens}")
    print(f"  completed {figures['completed']}/{figures['sent']} in {figures['wall_s']} s: "
          f"{figures['throughput_rps']} req/s, p50 {figures['p50_s']} s, p95 {figures['p95_s']} s")
    print(f"  5xx {figures['status_5xx']}, 4xx {figures['status_4xx']}, connection errors "
          f"{figures['connection_errors']}, audit rows missing for {figures['audit_missing']} request(s)")
    print("  p50 by shape: " + ", ".join(f"{k} {v['p50_s']} s ({v['completed']})" for k, v in figures["by_shape"].items()))
    b = figures["batching"] or {}
    print(f"  batching: {b.get('batches')} forward passes, {b.get('sequences')} sequences, mean batch "
          f"{b.get('mean_batch')}, largest {b.get('largest')}; server alive after the run: {server_alive}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    failed = figures["status_5xx"] or figures["connection_errors"] or missing or not server_alive
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
