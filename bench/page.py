"""Analysis page ready in headless Chromium (run by `make bench` after bench.api; alone: `python -m bench.page`).

Serves the API benchmark's analysis (bench-out/api.duckdb, built by bench.api) and the built frontend
(frontend/dist: `make bench` builds it first) with `stallscope serve` on a free loopback port, then runs
bench/page.mjs (Playwright's playwright-core, Debian's /usr/bin/chromium) BENCH_PAGE_RUNS times (default 7),
each run a cold page (a fresh browser context) per tab:

  timeline   ?tab=timeline: the timeline chart drawn (the whole analysis, the window a first visit shows)
  dispatch   ?tab=dispatch: the latency chart and the latency heatmap drawn, the dispatch summary and the
             requests tables filled
  stalls     /a/<id> as linked (the default tab for an analysis with ftrace): the chain list filled and the
             stalls heatmap drawn
  offcpu     ?tab=offcpu: the flame graph drawn

Times are from navigation start. Target: <= 2 s for the page with its timeline, heatmap and summary drawn
(the timeline and dispatch tabs). Reports first (cold server), p50, max per tab and p50 per part; the server
is stopped at the end. Results: stdout (markdown) and bench-out/page.json (the raw runs: bench-out/page-raw.json).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from bench import inputs
from bench.inputs import OUT
from bench.server import free_port, serve

RUNS = int(os.environ.get("BENCH_PAGE_RUNS", "7"))
TARGET_MS = 2000.0
TARGET_TABS = ("timeline", "dispatch")  # where the timeline, heatmap and summary are
DB = OUT / "api.duckdb"
NODE_TIMEOUT_S = 1800


def pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[max(0, math.ceil(p * len(v)) - 1)]


def summarize(raw: dict) -> dict:
    tabs = {}
    for tab, runs in raw["tabs"].items():
        ready = [r["ready"] for r in runs if "ready" in r]
        parts: dict[str, list[float]] = {}
        for r in runs:
            for name, ms in r["parts"].items():
                parts.setdefault(name, []).append(ms)
        api: dict[str, list[float]] = {}
        for r in runs:
            for a in r.get("api", []):
                api.setdefault(a["path"], []).append(a["end"] - a["start"])
        t = {
            "url": runs[0]["url"],
            "runs": len(runs),
            "ready_runs": len(ready),
            "failed": [{"missing": r.get("missing"), "error": r.get("error")} for r in runs if "ready" not in r],
            "first_ms": runs[0].get("ready"),
            "p50_ms": pct(ready, 0.5) if ready else None,
            "max_ms": max(ready) if ready else None,
            "all_ms": [r.get("ready") for r in runs],
            "parts_p50_ms": {k: pct(v, 0.5) for k, v in parts.items()},
            "api_p50_ms": {k: pct(v, 0.5) for k, v in api.items()},
            "api_done_p50_ms": pct([max(a["end"] for a in r["api"]) for r in runs if r.get("api")], 0.5)
            if any(r.get("api") for r in runs)
            else None,
            "dom_content_loaded_p50_ms": pct([r["domContentLoaded"] for r in runs if r.get("domContentLoaded")], 0.5)
            if any(r.get("domContentLoaded") for r in runs)
            else None,
        }
        t["target"] = tab in TARGET_TABS
        t["pass_p50"] = t["p50_ms"] is not None and t["p50_ms"] <= TARGET_MS and not t["failed"]
        t["pass_max"] = t["max_ms"] is not None and t["max_ms"] <= TARGET_MS and not t["failed"]
        tabs[tab] = t
    return tabs


def table(result: dict) -> str:
    rows = [
        "| tab (what is drawn) | first ms | p50 ms | max ms | p50 per part (ms) | slowest API call, p50 "
        "| last API response, p50 | p50 ≤ 2 s | max ≤ 2 s |",
        "|---|---:|---:|---:|---|---|---:|---|---|",
    ]

    def f(v):
        return "—" if v is None else f"{v:.0f}"

    for tab, t in result["tabs"].items():
        parts = ", ".join(f"{k} {v:.0f}" for k, v in t["parts_p50_ms"].items())
        verdict = (lambda ok: "PASS" if ok else "MISS") if t["target"] else (lambda ok: f"({'pass' if ok else 'miss'})")
        fail = f" ({len(t['failed'])} of {t['runs']} never ready)" if t["failed"] else ""
        api = max(t["api_p50_ms"].items(), key=lambda kv: kv[1], default=None)
        api = f"`{api[0]}` {api[1]:.0f} ms" if api else "—"
        rows.append(
            f"| {tab}{fail} | {f(t['first_ms'])} | {f(t['p50_ms'])} | {f(t['max_ms'])} | {parts} | {api} | "
            f"{f(t['api_done_p50_ms'])} | {verdict(t['pass_p50'])} | {verdict(t['pass_max'])} |"
        )
    return "\n".join(rows)


def analysis_id() -> str:
    api = OUT / "api.json"
    if api.exists():
        return json.loads(api.read_text())["analysis_id"]
    raise SystemExit(f"{api} is missing: run `python -m bench.api` first (it builds {DB})")


def main() -> int:
    if not DB.exists():
        raise SystemExit(f"{DB} is missing: run `python -m bench.api` first")
    dist = Path("frontend/dist/index.html")
    if not dist.exists():
        raise SystemExit("frontend/dist is missing: run `npm run build` (make bench does)")
    aid = analysis_id()
    port = free_port()
    raw_path = OUT / "page-raw.json"
    raw_path.unlink(missing_ok=True)
    load0 = inputs.loadavg()
    print(f"page ready: {RUNS} cold loads per tab of http://127.0.0.1:{port}/a/{aid}...", file=sys.stderr, flush=True)
    with serve(DB, port, OUT / "page-server.log"):
        subprocess.run(
            ["node", "bench/page.mjs", f"http://127.0.0.1:{port}", aid, str(RUNS), str(raw_path)],
            check=True,
            timeout=NODE_TIMEOUT_S,
        )
    raw = json.loads(raw_path.read_text())
    result = {
        "machine": inputs.machine(),
        "browser": raw["browser"],
        "analysis_id": aid,
        "runs": RUNS,
        "target_ms": TARGET_MS,
        "tabs": summarize(raw),
        "load_before": load0,
        "load_after": inputs.loadavg(),
    }
    (OUT / "page.json").write_text(json.dumps(result, indent=1))
    print(f"\n## Analysis page ready in headless Chromium ({raw['browser']}, {RUNS} cold loads per tab)\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
