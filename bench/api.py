"""API latency on a large analysis (run by `make bench` after the ingests; alone: `python -m bench.api`).

Builds ONE analysis holding both generated traces of bench.run (the blkparse file and the function_graph
report, generated here with the same commands if missing; BENCH_REQUESTS / BENCH_FUNCGRAPH_LINES scale them)
into bench-out/api.duckdb, then calls the routes the UI uses through FastAPI's TestClient (in process: no
network, but routing, validation, the queries and JSON serialisation are all measured): 2 warm-up calls, then
50 measured calls per route. Windows are drawn from a seeded random generator: zoom levels log-uniform from
the whole span down to 1/10000 of it, at random positions inside the span.

Reports p50/p95 latency (ms) and the largest JSON body (bytes) per route against the targets
(p95 <= 100 ms, JSON <= 1 MB), and the DuckDB file size per million events. Results: stdout (markdown)
and bench-out/api.json.

`--reuse` keeps an existing bench-out/api.duckdb (skips the ingest) when it holds one analysis.
"""
from __future__ import annotations

import json
import math
import os
import platform
import random
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message=".*httpx.*")  # starlette's TestClient deprecation notice: noise here
from fastapi.testclient import TestClient  # noqa: E402

from backend.app import create_app  # noqa: E402
from backend.store import InputFile, Store  # noqa: E402
from bench.run import FG_LINES, OUT, REQUESTS, generate  # noqa: E402

CALLS = int(os.environ.get("BENCH_API_CALLS", "50"))
WARMUP = 2
SEED = 6
MAX_ZOOM = 10_000  # the narrowest window is 1/MAX_ZOOM of the span
TARGET_P95_MS = 100.0
TARGET_BYTES = 1_000_000
DB = OUT / "api.duckdb"


def inputs() -> list[Path]:
    OUT.mkdir(exist_ok=True)
    blk = OUT / f"blkparse-{REQUESTS}.txt"
    generate(blk, ["-m", "samples.gen_blkparse", "--requests", str(REQUESTS), "--out", str(blk)])
    fg = OUT / f"funcgraph-{FG_LINES}.txt"
    generate(fg, ["bench/gen_funcgraph.py", str(fg), "--lines", str(FG_LINES)])
    return [blk, fg]


def build(paths: list[Path]) -> tuple[str, float]:
    """One analysis of all the files, in a fresh bench-out/api.duckdb; returns its id and the ingest seconds."""
    for p in (DB, Path(str(DB) + ".wal")):
        p.unlink(missing_ok=True)
    store = Store(DB)
    files = [open(p, "rb") for p in paths]
    try:
        print(f"ingesting {', '.join(p.name for p in paths)} into {DB}...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        created = store.ingest([InputFile(p.name, f, p.stat().st_size) for p, f in zip(paths, files)],
                               name="bench: api latency")
        seconds = time.perf_counter() - t0
    finally:
        for f in files:
            f.close()
        store.close()  # checkpoints: the file size below is the data, not a WAL
    return created["id"], seconds


def window(rng: random.Random, t_min: int, t_max: int) -> dict:
    """A random window inside [t_min, t_max]: width span/10^u, u uniform in [0, log10(MAX_ZOOM)]."""
    span = t_max - t_min
    width = max(1, int(span / 10 ** rng.uniform(0, math.log10(MAX_ZOOM))))
    t0 = t_min + rng.randint(0, span - width)
    return {"t0_ns": t0, "t1_ns": t0 + width}


def routes(aid: str, t_min: int, t_max: int) -> list[tuple[str, str, object]]:
    """(name, path, params(rng, i) -> dict) per measured route."""
    base = f"/api/analyses/{aid}"
    return [
        ("timeline (random window, width_px=1200)", f"{base}/timeline",
         lambda rng, i: {**window(rng, t_min, t_max), "width_px": 1200}),
        ("heatmap i2d (half with a random window)", f"{base}/heatmap",
         lambda rng, i: {"metric": "i2d", **(window(rng, t_min, t_max) if i % 2 else {})}),
        ("requests order=i2d limit=100", f"{base}/requests", lambda rng, i: {"order": "i2d", "limit": 100}),
        ("dispatch-summary", f"{base}/dispatch-summary", lambda rng, i: {}),
        ("waits limit=100", f"{base}/waits", lambda rng, i: {"limit": 100}),
        ("chains limit=50", f"{base}/chains", lambda rng, i: {"limit": 50}),
        ("flamegraph (no offcputime source)", f"{base}/flamegraph", lambda rng, i: {}),
    ]


def pct(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    return sorted_values[max(0, math.ceil(p * len(sorted_values)) - 1)]


def measure(client: TestClient, name: str, path: str, params, span: int) -> dict:
    rng = random.Random(f"{SEED}:{name}")
    calls = []
    for i in range(WARMUP + CALLS):
        q = params(rng, i)
        t0 = time.perf_counter()
        r = client.get(path, params=q)
        ms = (time.perf_counter() - t0) * 1000
        if r.status_code != 200:
            raise SystemExit(f"GET {path} {q} -> {r.status_code}: {r.text[:300]}")
        if i >= WARMUP:
            calls.append({"ms": ms, "bytes": len(r.content), "params": q})
    ms = sorted(c["ms"] for c in calls)
    slowest = max(calls, key=lambda c: c["ms"])
    biggest = max(calls, key=lambda c: c["bytes"])

    def describe(c: dict) -> str:
        q = dict(c["params"])
        if "t0_ns" in q:
            w = q.pop("t1_ns") - q.pop("t0_ns")
            q["window"] = f"1/{span / w:.0f} of the span" if w < span else "the whole span"
        return ", ".join(f"{k}={v}" for k, v in q.items()) or "(no parameters)"

    res = {
        "route": name, "path": path.rsplit("/", 1)[-1],
        "calls": len(calls), "p50_ms": pct(ms, 0.50), "p95_ms": pct(ms, 0.95), "max_ms": ms[-1],
        "max_bytes": biggest["bytes"], "min_bytes": min(c["bytes"] for c in calls),
        "slowest": {"ms": slowest["ms"], "bytes": slowest["bytes"], "params": slowest["params"],
                    "what": describe(slowest)},
        "biggest": {"ms": biggest["ms"], "bytes": biggest["bytes"], "params": biggest["params"],
                    "what": describe(biggest)},
        "each": [{"ms": round(c["ms"], 2), "bytes": c["bytes"], "what": describe(c)} for c in calls],
    }
    res["pass_p95"] = res["p95_ms"] <= TARGET_P95_MS
    res["pass_bytes"] = res["max_bytes"] <= TARGET_BYTES
    return res


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    paths = inputs()
    ingest_s = None
    aid = None
    if "--reuse" in argv and DB.exists():
        store = Store(DB)
        rows = store.db.execute("SELECT id FROM analyses").fetchall()
        store.close()
        aid = rows[0][0] if len(rows) == 1 else None
    if aid is None:
        aid, ingest_s = build(paths)
    db_bytes = DB.stat().st_size + (Path(str(DB) + ".wal").stat().st_size if Path(str(DB) + ".wal").exists() else 0)

    store = Store(DB)
    client = TestClient(create_app(store))
    info = client.get(f"/api/analyses/{aid}").json()
    events = sum(s["events"] for s in info["sources"])
    t_min, t_max = info["t_min_ns"], info["t_max_ns"]
    span = t_max - t_min
    results = []
    for name, path, params in routes(aid, t_min, t_max):
        print(f"measuring {name}...", file=sys.stderr, flush=True)
        results.append(measure(client, name, path, params, span))
    client.close()
    store.close()

    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    summary = {
        "machine": machine, "analysis_id": aid, "calls_per_route": CALLS, "warmup_calls": WARMUP, "seed": SEED,
        "sources": [{k: s.get(k) for k in ("filename", "format", "lines", "events", "bytes")} for s in info["sources"]],
        "events": events, "span_ns": span, "ingest_seconds": ingest_s,
        "db_bytes": db_bytes, "db_mib_per_million_events": db_bytes / 2**20 / (events / 1e6),
        "targets": {"p95_ms": TARGET_P95_MS, "max_bytes": TARGET_BYTES}, "routes": results,
    }
    (OUT / "api.json").write_text(json.dumps(summary, indent=1))

    print(f"\n## API latency on a large analysis ({machine})\n")
    print(f"analysis: {', '.join(s['filename'] for s in info['sources'])}: {events:,} events, "
          f"span {span / 1e9:.1f} s" + (f", ingested in {ingest_s:.1f} s" if ingest_s else " (reused)"))
    print(f"DuckDB file: {db_bytes / 2**20:.0f} MiB = {summary['db_mib_per_million_events']:.1f} MiB per million "
          f"events\n")
    print(f"{CALLS} calls per route after {WARMUP} warm-up calls; targets: p95 <= {TARGET_P95_MS:.0f} ms, "
          f"JSON <= {TARGET_BYTES / 1e6:.0f} MB\n")
    print("| route | p50 ms | p95 ms | max ms | max JSON bytes | p95 | JSON |")
    print("|---|---:|---:|---:|---:|---|---|")
    for r in results:
        print(f"| {r['route']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['max_ms']:.1f} | {r['max_bytes']:,} | "
              f"{'PASS' if r['pass_p95'] else 'MISS'} | {'PASS' if r['pass_bytes'] else 'MISS'} |")
    print("\nworst cases:")
    for r in results:
        s, b = r["slowest"], r["biggest"]
        print(f"- {r['route']}: slowest {s['ms']:.1f} ms ({s['what']}); "
              f"largest {b['bytes']:,} B ({b['what']})")
    print("\nflamegraph: the analysis has no offcputime source; the call is measured all the same "
          "(an empty graph).", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
