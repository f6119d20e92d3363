"""The views of the largest uploads: bench/api.py's routes, measured on each analysis of the given databases (run by
bench/server.py on the analyses its largest uploads made; alone: `python -m bench.bigapi DB...`).

The app is started as `stallscope serve` starts it (its warm-up of the newest analyses done first, timed), then per
analysis 2 warm-up calls and BENCH_API_CALLS (50) measured calls per route, in process through FastAPI's TestClient
(routing, validation, queries, JSON; no network), against the same targets: p95 <= 100 ms, <= 1 MB per answer.
Routes with nothing to show for a format answer too (a blkparse analysis has no waits; none has a flame graph).
Prints a markdown table per analysis; the results are returned as JSON on the last line of stdout.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message=".*httpx.*")
from fastapi.testclient import TestClient  # noqa: E402

from backend.app import create_app  # noqa: E402
from backend.store import Store  # noqa: E402
from bench import api, inputs  # noqa: E402


def measure_db(db: Path) -> list[dict]:
    out = []
    store = Store(db)
    try:
        ids = [r[0] for r in store.db.execute("SELECT id FROM analyses ORDER BY created_at").fetchall()]
        with TestClient(create_app(store), base_url="http://127.0.0.1") as client:
            t0 = time.perf_counter()
            client.app.state.warmer.wait()
            warm = time.perf_counter() - t0
            for aid in ids:
                info = client.get(f"/api/analyses/{aid}").json()
                t_min, t_max = info["t_min_ns"], info["t_max_ns"]
                load0, check = inputs.loadavg(), inputs.cpu_check()
                todo = api.routes(aid, t_min, t_max)
                if any(s["format"] == "ftrace" for s in info["sources"]):  # the heatmaps a trace of calls opens on
                    base = f"/api/analyses/{aid}/heatmap"
                    todo += [
                        (
                            f"heatmap {m} (half with a random window)",
                            base,
                            lambda rng, i, m=m: {"metric": m, **(api.window(rng, t_min, t_max) if i % 2 else {})},
                        )
                        for m in ("wait",)
                    ]
                routes = [api.measure(client, name, path, params, t_max - t_min) for name, path, params in todo]
                for r in routes:
                    r.pop("each")
                out.append(
                    {
                        "db": db.name,
                        "db_bytes": db.stat().st_size,
                        "analysis_id": aid,
                        "sources": [
                            {k: s.get(k) for k in ("filename", "format", "lines", "events", "bytes")}
                            for s in info["sources"]
                        ],
                        "warm_up_seconds": warm,
                        "routes": routes,
                        "load": [load0, inputs.loadavg()],
                        "cpu_check_mb_s": check,
                    }
                )
    finally:
        store.close()
    return out


def main(argv: list[str]) -> int:
    results = [r for db in argv for r in measure_db(Path(db))]
    for r in results:
        s = r["sources"][0]
        print(
            f"\n{s['filename']} ({s['format']}, {s['bytes'] / 2**30:.2f} GiB, {s['events']:,} events; database "
            f"{r['db_bytes'] / 2**30:.2f} GiB; warm-up {r['warm_up_seconds']:.1f} s; CPU check "
            f"{r['cpu_check_mb_s']:.0f} MB/s; load {r['load'][0]:.1f}-{r['load'][1]:.1f}):\n"
        )
        print(api.table({"routes": r["routes"]}))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
