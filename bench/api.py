"""API latency on a large analysis (run by `make bench` after the ingests; alone: `python -m bench.api`).

Builds ONE analysis holding the three generated inputs of bench.inputs (a blkparse trace of 2 M requests,
~10.46 M events; a trace-cmd report of 10 M function_graph/sched lines; a bcc offcputime dump of 100 k
records, ~20 k distinct kernel stacks, so that `flamegraph` builds a real graph) into bench-out/api.duckdb, then
calls the routes the UI uses through FastAPI's TestClient (in process: no network, but routing, validation,
the queries and JSON serialisation are all measured): 2 warm-up calls, then 50 measured calls per route. The app
is started as `stallscope serve` starts it, so it warms the caches of the analysis in the background
(backend/warm.py); the calls begin once that is done, and its time per step is reported (what the first calls
built before it). The first call of each route is also reported ("first call").
Windows are drawn from a seeded random generator: zoom levels log-uniform from the whole span down to
1/10000 of it, at random positions inside the span.

Reports p50/p95/max latency (ms) and the largest JSON body (bytes) per route against the targets
(p95 <= 100 ms, JSON <= 1 MB), and the DuckDB file size per million events. Results: stdout (markdown)
and bench-out/api.json. Environment: BENCH_API_CALLS (50) and the sizes of bench.inputs.

`--reuse` keeps an existing bench-out/api.duckdb (skips the ingest) when it holds one analysis.
"""

from __future__ import annotations

import json
import math
import os
import random
import resource
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message=".*httpx.*")  # starlette's TestClient deprecation notice: noise here
from fastapi.testclient import TestClient  # noqa: E402

from backend.app import create_app  # noqa: E402
from backend.cache import AnalysisCache  # noqa: E402
from backend.queries import first_views  # noqa: E402
from backend.store import InputFile, Store  # noqa: E402
from bench import inputs as bench_inputs  # noqa: E402
from bench.inputs import OUT  # noqa: E402

CALLS = int(os.environ.get("BENCH_API_CALLS", "50"))
WARMUP = 2
SEED = 6
MAX_ZOOM = 10_000  # the narrowest window is 1/MAX_ZOOM of the span
TARGET_P95_MS = 100.0
TARGET_BYTES = 1_000_000
DB = OUT / "api.duckdb"


def inputs() -> list[Path]:
    return [bench_inputs.blkparse(), bench_inputs.funcgraph(), bench_inputs.offcpu()]


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(paths: list[Path]) -> tuple[str, float, dict]:
    """One analysis of all the files, in a fresh bench-out/api.duckdb; returns its id, the ingest seconds and the
    share of its last step, the first views (queries/first_views.py, after the commit): its seconds, CPU seconds and
    the process' peak RSS before and after it, beside the whole ingest's."""
    for p in (DB, Path(str(DB) + ".wal")):
        p.unlink(missing_ok=True)
    store = Store(DB)
    files = [open(p, "rb") for p in paths]
    fv: dict = {}
    try:
        print(f"ingesting {', '.join(p.name for p in paths)} into {DB}...", file=sys.stderr, flush=True)
        c0, t0 = _cpu_s(), time.perf_counter()
        created = store.ingest(
            [InputFile(p.name, f, p.stat().st_size) for p, f in zip(paths, files)], name="bench: api latency"
        )
        # the first views, as an upload computes them once the ingest has committed (first_views.precompute)
        c1, t1, fv["peak_before_mib"] = _cpu_s(), time.perf_counter(), _peak_mib()
        fv["steps"] = first_views.precompute(store.db, AnalysisCache(), created["id"])
        fv.update(seconds=time.perf_counter() - t1, cpu_s=_cpu_s() - c1, peak_after_mib=_peak_mib())
        seconds = time.perf_counter() - t0
        fv.update(ingest_seconds=seconds, ingest_cpu_s=_cpu_s() - c0)
    finally:
        for f in files:
            f.close()
        store.close()  # checkpoints: the file size below is the data, not a WAL
    if "seconds" in fv:
        print(
            f"first views: {fv['seconds']:.1f} s ({fv['cpu_s']:.1f} s CPU) of the ingest's {seconds:.1f} s"
            f" ({fv['ingest_cpu_s']:.1f} s CPU): CPU x{fv['ingest_cpu_s'] / (fv['ingest_cpu_s'] - fv['cpu_s']):.3f};"
            f" peak RSS {fv['peak_before_mib']:.0f} MiB before them, {fv['peak_after_mib']:.0f} MiB after",
            file=sys.stderr,
            flush=True,
        )
    return created["id"], seconds, fv


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
        (
            "timeline (random window, width_px=1200)",
            f"{base}/timeline",
            lambda rng, i: {**window(rng, t_min, t_max), "width_px": 1200},
        ),
        (
            "heatmap i2d (half with a random window)",
            f"{base}/heatmap",
            lambda rng, i: {"metric": "i2d", **(window(rng, t_min, t_max) if i % 2 else {})},
        ),
        ("requests order=i2d limit=100", f"{base}/requests", lambda rng, i: {"order": "i2d", "limit": 100}),
        ("dispatch-summary", f"{base}/dispatch-summary", lambda rng, i: {}),
        ("waits limit=100", f"{base}/waits", lambda rng, i: {"limit": 100}),
        ("chains limit=50", f"{base}/chains", lambda rng, i: {"limit": 50}),
        ("flamegraph", f"{base}/flamegraph", lambda rng, i: {}),
    ]


def pct(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    return sorted_values[max(0, math.ceil(p * len(sorted_values)) - 1)]


def measure(client: TestClient, name: str, path: str, params, span: int) -> dict:
    rng = random.Random(f"{SEED}:{name}")
    calls, first = [], None
    for i in range(WARMUP + CALLS):
        q = params(rng, i)
        t0 = time.perf_counter()
        r = client.get(path, params=q)
        ms = (time.perf_counter() - t0) * 1000
        if r.status_code != 200:
            raise SystemExit(f"GET {path} {q} -> {r.status_code}: {r.text[:300]}")
        if i == 0:  # the route's first call in this process: before anything it keeps in memory is built
            first = {"ms": ms, "bytes": len(r.content), "params": q}
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
        "route": name,
        "path": path.rsplit("/", 1)[-1],
        "first_ms": first["ms"],
        "first": {**first, "what": describe(first)},
        "calls": len(calls),
        "p50_ms": pct(ms, 0.50),
        "p95_ms": pct(ms, 0.95),
        "max_ms": ms[-1],
        "max_bytes": biggest["bytes"],
        "min_bytes": min(c["bytes"] for c in calls),
        "slowest": {
            "ms": slowest["ms"],
            "bytes": slowest["bytes"],
            "params": slowest["params"],
            "what": describe(slowest),
        },
        "biggest": {
            "ms": biggest["ms"],
            "bytes": biggest["bytes"],
            "params": biggest["params"],
            "what": describe(biggest),
        },
        "each": [{"ms": round(c["ms"], 2), "bytes": c["bytes"], "what": describe(c)} for c in calls],
    }
    res["pass_p95"] = res["p95_ms"] <= TARGET_P95_MS
    res["pass_bytes"] = res["max_bytes"] <= TARGET_BYTES
    return res


def reusable(paths: list[Path]) -> str | None:
    """The id of the one analysis in an existing bench-out/api.duckdb, if it was built from these files."""
    if not DB.exists():
        return None
    store = Store(DB)
    try:
        rows = store.db.execute("SELECT id FROM analyses").fetchall()
        names = {r[0] for r in store.db.execute("SELECT filename FROM sources").fetchall()}
    finally:
        store.close()
    return rows[0][0] if len(rows) == 1 and names == {p.name for p in paths} else None


def table(summary: dict) -> str:
    rows = [
        "| route | first call ms | p50 ms | p95 ms | max ms | max JSON bytes | p95 ≤ 100 ms | JSON ≤ 1 MB |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in summary["routes"]:
        rows.append(
            f"| `{r['route']}` | {r['first_ms']:.0f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | "
            f"{r['max_ms']:.1f} | {r['max_bytes']:,} | {'PASS' if r['pass_p95'] else '**MISS**'} | "
            f"{'PASS' if r['pass_bytes'] else '**MISS**'} |"
        )
    return "\n".join(rows)


def describe_analysis(summary: dict) -> str:
    srcs = ", ".join(
        f"{s['filename']} ({s['format']}: {s['lines']:,} lines, {s['events']:,} events)" for s in summary["sources"]
    )
    ingest = summary["ingest_seconds"]
    return (
        f"analysis: {srcs}; {summary['events']:,} events in all, span {summary['span_ns'] / 1e9:.1f} s"
        + (f", ingested in {ingest:.1f} s" if ingest else " (reused)")
        + f". DuckDB file: {summary['db_bytes'] / 2**20:.0f} MiB = "
        f"{summary['db_mib_per_million_events']:.1f} MiB per million events"
    )


def warm_line(summary: dict) -> str:
    w = summary.get("warm_up") or {}
    steps = ", ".join(f"{k} {v * 1000:.0f}" for k, v in (w.get("steps") or {}).items()) or "nothing warmed"
    return (
        f"The app's warm-up after its start (backend/warm.py) took {w.get('seconds', 0):.1f} s before the first"
        f" call (ms per step: {steps})."
    )


def worst_cases(summary: dict) -> str:
    out = []
    for r in summary["routes"]:
        s, b = r["slowest"], r["biggest"]
        out.append(f"- {r['route']}: slowest {s['ms']:.1f} ms ({s['what']}); largest {b['bytes']:,} B ({b['what']})")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    paths = inputs()
    ingest_s, first = None, None
    aid = reusable(paths) if "--reuse" in argv else None
    if aid is None:
        aid, ingest_s, first = build(paths)
    wal = Path(str(DB) + ".wal")
    db_bytes = DB.stat().st_size + (wal.stat().st_size if wal.exists() else 0)

    load0 = bench_inputs.loadavg()
    store = Store(DB)
    with TestClient(create_app(store), base_url="http://127.0.0.1") as client:  # started (lifespan): the warm-up runs
        t0 = time.perf_counter()
        client.app.state.warmer.wait()
        warm_up = {"seconds": time.perf_counter() - t0, "steps": client.app.state.warmer.warmed.get(aid)}
        info = client.get(f"/api/analyses/{aid}").json()
        events = sum(s["events"] for s in info["sources"])
        t_min, t_max = info["t_min_ns"], info["t_max_ns"]
        span = t_max - t_min
        results = []
        for name, path, params in routes(aid, t_min, t_max):
            print(f"measuring {name}...", file=sys.stderr, flush=True)
            results.append(measure(client, name, path, params, span))
    store.close()

    summary = {
        "machine": bench_inputs.machine(),
        "analysis_id": aid,
        "calls_per_route": CALLS,
        "warmup_calls": WARMUP,
        "seed": SEED,
        "max_zoom": MAX_ZOOM,
        "sources": [{k: s.get(k) for k in ("filename", "format", "lines", "events", "bytes")} for s in info["sources"]],
        "events": events,
        "span_ns": span,
        "ingest_seconds": ingest_s,
        "first_views": first,
        "db_bytes": db_bytes,
        "db_mib_per_million_events": db_bytes / 2**20 / (events / 1e6),
        "targets": {"p95_ms": TARGET_P95_MS, "max_bytes": TARGET_BYTES},
        "warm_up": warm_up,
        "routes": results,
        "load_before": load0,
        "load_after": bench_inputs.loadavg(),
    }
    (OUT / "api.json").write_text(json.dumps(summary, indent=1))

    print(f"\n## API latency on a large analysis ({CALLS} calls per route after {WARMUP} warm-up calls)\n")
    print(describe_analysis(summary) + "\n")
    print(warm_line(summary) + "\n")
    print(table(summary))
    print("\nworst cases:\n" + worst_cases(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
