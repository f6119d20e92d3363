"""`make bench`: ingest speed and peak memory on generated traces: a blkparse trace of one million
requests, and a trace-cmd report of five million function_graph/sched lines.

Each ingest runs in a fresh process; peak memory is that process' maximum resident set size.
Results go to stdout as a table and to bench-out/results.json. Then bench.api (in a fresh process of its
own) measures the API's latency on one analysis holding both traces (bench-out/api.json).
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

OUT = Path("bench-out")
REQUESTS = int(os.environ.get("BENCH_REQUESTS", "1000000"))
FG_LINES = int(os.environ.get("BENCH_FUNCGRAPH_LINES", "5000000"))


def generate(path: Path, cmd: list[str]) -> None:
    if path.exists():
        return
    print(f"generating {path}...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, *cmd], check=True)


def run_measured(cmd: list[str]) -> tuple[dict, float, int]:
    """Runs cmd; returns its JSON output, wall seconds and that process' own peak RSS (KiB)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    return json.loads(out), wall, usage.ru_maxrss


def ingest(path: Path, runs: int = 3) -> dict:
    best = None
    for i in range(runs):
        db = OUT / f"bench-{i}.duckdb"
        for p in (db, Path(str(db) + ".wal")):
            p.unlink(missing_ok=True)
        result, wall, rss_kib = run_measured([sys.executable, "-m", "bench.ingest", str(path), str(db)])
        result.update(process_seconds=wall, peak_rss_mib=rss_kib / 1024, db_mib=db.stat().st_size / 2**20)
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    return best


def report(title: str, trace: Path, r: dict) -> list[str]:
    lines_s = r["lines"] / r["seconds"]
    table = [
        ("machine", f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"),
        ("input", f"{trace.name}: {r['lines']:,} lines, {r['bytes'] / 2**20:.0f} MiB"),
        ("ingest (file to committed tables)", f"{r['seconds']:.2f} s = {lines_s / 1e6:.2f} M lines/s, "
                                              f"{r['bytes'] / 2**20 / r['seconds']:.0f} MiB/s"),
        ("whole process (with interpreter start)", f"{r['process_seconds']:.2f} s = "
                                                   f"{r['lines'] / r['process_seconds'] / 1e6:.2f} M lines/s"),
        ("peak memory (max RSS)", f"{r['peak_rss_mib']:.0f} MiB"),
        ("DuckDB file", f"{r['db_mib']:.0f} MiB = {r['db_mib'] / (r['events'] / 1e6):.1f} MiB per million events"),
    ]
    width = max(len(k) for k, _ in table)
    return [f"\n## {title} (best of 3)\n"] + [f"| {k.ljust(width)} | {v} |" for k, v in table]


def main() -> int:
    OUT.mkdir(exist_ok=True)
    blk = OUT / f"blkparse-{REQUESTS}.txt"
    generate(blk, ["-m", "samples.gen_blkparse", "--requests", str(REQUESTS), "--out", str(blk)])
    fg = OUT / f"funcgraph-{FG_LINES}.txt"
    generate(fg, ["bench/gen_funcgraph.py", str(fg), "--lines", str(FG_LINES)])
    results = {}
    for title, key, trace in (("blkparse ingest", "blkparse", blk),
                              ("ftrace function_graph ingest (calls, waits and chains derived)", "ftrace", fg)):
        results[key] = ingest(trace)
        print("\n".join(report(title, trace, results[key])), flush=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=1))
    subprocess.run([sys.executable, "-m", "bench.api"], check=True)  # API latency on both traces, in one analysis
    return 0


if __name__ == "__main__":
    sys.exit(main())
