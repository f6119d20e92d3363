"""Reads under ingest (issues 24, 34): 6 uploaders and 30 readers for 60 s against `stallscope serve` on 127.0.0.1.

    python -m bench.load [--seconds 60] [--uploaders 6] [--readers 30] [--repo PATH] [--rounds N] [--one-page]

A fresh server (its own database under bench-out/) first gets one analysis per reader, uploaded from a rotation of
real captures (the incident demo, the cfq starvation demo, the ext4/jbd2 seed, the lab's trace.dat recordings with
their blktrace sets), so no two readers read the same analysis. Then, for --seconds, each uploader POSTs
samples/incident.trace-cmd-report.txt + incident.blkparse.txt again and again (a 503 waits for its Retry-After,
capped at 1 s), while each reader GETs its own analysis page's routes in turn (the analysis, timeline, requests,
dispatch summary, latency over time, waits and I2D heatmaps, chains, waits), each over a random window of the
analysis' span (seeded per reader: the same windows at every run), so few answers are kept bodies: the reads run.
Before that, the same readers alone for --seconds / 2: the idle baseline of the same reads, in the same run.
--one-page: issue 24's load instead (every reader on one analysis, the whole span, the same page again and again).
Reported: GET p50/p95/p99/max under load and idle, GETs done, uploads done and refused; per route, p50/p95/max
beside the uploaders (which routes make the tail). --repo runs the server of
another checkout (e.g. a worktree of an older commit, with its C extensions built) to measure it in the same run;
--rounds N alternates the servers N times (this one first in odd rounds, last in even ones). Before each measurement
the CPU check of bench.run (SHA-256 MB/s) and the load average are recorded: the machine is shared. `make bench`
runs it as its part `load`. Only loopback addresses are used; every loop ends by time.
Results: stdout (markdown) and bench-out/load.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from bench import inputs
from bench.inputs import OUT
from bench.server import PART_END, free_port, multipart_frame

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
UPLOAD = ["incident.trace-cmd-report.txt", "incident.blkparse.txt"]
DEMO = ["incident.blkparse.txt", "incident.trace-cmd-report.txt", "incident.offcputime.txt"]
LAB = SAMPLES / "real"


def reader_captures() -> list[list[Path]]:
    """The captures the readers' analyses are uploaded from, in rotation: the demos, a seed excerpt, and each lab
    recording that has a trace.dat (with every layer's blktrace set), when trace-cmd can read it."""
    found = [
        [SAMPLES / n for n in DEMO],
        [SAMPLES / "demo-cfq-starvation.blkparse.txt"],
        [
            SAMPLES / n
            for n in (
                "ext4-jbd2-commit.trace-cmd-report.txt",
                "ext4-jbd2-commit.blkparse.txt",
                "ext4-jbd2-commit.offwaketime.txt",
            )
        ],
    ]
    if shutil.which("trace-cmd"):
        for rec in sorted(LAB.glob("*/trace.dat")):
            found.append([rec, *sorted((rec.parent / "blktrace").glob("*.blktrace.*"))])
    return found


def windowed_routes(a: str, span: tuple[int, int] | None) -> list[str]:
    """An analysis page's routes; {w} is where a window's t0_ns/t1_ns go."""
    w = "{w}" if span else ""
    return [
        a,
        f"{a}/timeline?width_px=1200{w}",
        f"{a}/requests?order=i2d&limit=100{w}",
        f"{a}/dispatch-summary?by=device{w}",
        f"{a}/latency-over-time?buckets=400{w}",
        f"{a}/heatmap?metric=wait{w}",
        f"{a}/heatmap?metric=i2d{w}",
        f"{a}/chains?limit=50{w}",
        f"{a}/waits?limit=100{w}",
    ]


def route_name(page: str, url: str) -> str:
    """A page route's name in the per-route table: its path and fixed parameters after the analysis' path."""
    return url[len(page) :].replace("{w}", "").lstrip("/") or "(the analysis)"


def random_window(rng: random.Random, span: tuple[int, int]) -> str:
    """A window of 1-100 % of the span, anywhere in it (ns)."""
    lo, hi = span
    width = max(1, int((hi - lo) * rng.uniform(0.01, 1.0)))
    t0 = lo + int(rng.uniform(0, max(0, hi - lo - width)))
    return f"&t0_ns={t0}&t1_ns={t0 + width}"


def multipart(paths: list[Path]) -> tuple[bytes, str]:
    b = uuid.uuid4().hex
    heads, tail = multipart_frame(b, "bench load", paths, "text/plain")
    body = b"".join(h + p.read_bytes() + PART_END for h, p in zip(heads, paths)) + tail
    return body, f"multipart/form-data; boundary={b}"


def post(port: int, body: bytes, ctype: str) -> tuple[int, dict, str | None]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        c.request("POST", "/api/analyses", body=body, headers={"Content-Type": ctype})
        r = c.getresponse()
        data = r.read()
        return r.status, (json.loads(data) if data[:1] == b"{" else {}), r.getheader("Retry-After")
    finally:
        c.close()


def serve(repo: Path, db: Path, port: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "backend.cli", "serve", "--db", str(db), "--host", "127.0.0.1", "--port", str(port)],
        cwd=repo,
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited ({proc.returncode}); see {log}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/api/locks")
            if c.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the server did not start; see {log}")


def upload_analysis(port: int, paths: list[Path]) -> tuple[str, tuple[int, int] | None]:
    """Uploads one capture; its API path and its span on the analysis timeline (None: no times)."""
    while True:
        status, created, retry = post(port, *multipart(paths))
        if status != 503:
            break
        time.sleep(min(float(retry or 1), 1.0))
    assert status == 201, (status, created, [p.name for p in paths])
    a = f"/api/analyses/{created['id']}"
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        c.request("GET", a)
        detail = json.loads(c.getresponse().read())
    finally:
        c.close()
    lo, hi = detail.get("t_min_ns"), detail.get("t_max_ns")
    return a, ((lo, hi) if lo is not None and hi is not None and hi > lo else None)


def read_for(
    port: int,
    seconds: float,
    pages: list[tuple[str, tuple[int, int] | None]],
    one_page: bool,
    uploaders: int,
    upload: tuple[bytes, str],
) -> dict:
    """Each reader (one per page) GETs its page's routes for `seconds`, beside `uploaders` uploading."""
    stop = time.monotonic() + seconds
    lat: list[float] = []
    by_route: dict[str, list[float]] = {}
    errors: list[int] = []
    ups = {"done": 0, "refused": 0, "failed": 0}
    lock = threading.Lock()

    def upload_loop():
        while time.monotonic() < stop:
            st, _, retry = post(port, *upload)
            with lock:
                ups["done" if st == 201 else "refused" if st == 503 else "failed"] += 1
            if st == 503:
                time.sleep(min(float(retry or 1), 1.0))

    def read_loop(k: int, page: str, span: tuple[int, int] | None):
        rng = random.Random(k)
        routes = windowed_routes(page, None if one_page else span)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        i = k
        while time.monotonic() < stop:
            url = routes[i % len(routes)]
            name = route_name(page, url)
            if "{w}" in url:
                url = url.replace("{w}", random_window(rng, span))
            t0 = time.perf_counter()
            c.request("GET", url)
            r = c.getresponse()
            r.read()
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                by_route.setdefault(name, []).append(dt)
                if r.status != 200:
                    errors.append(r.status)
            i += 1
        c.close()

    threads = [threading.Thread(target=upload_loop) for _ in range(uploaders)]
    threads += [threading.Thread(target=read_loop, args=(k, *page)) for k, page in enumerate(pages)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lat.sort()

    def q(p, values=lat):
        return values[min(len(values) - 1, int(p * len(values)))] * 1000 if values else float("nan")

    routes = {}
    for name, values in by_route.items():
        values.sort()
        routes[name] = {
            "gets": len(values),
            "p50_ms": q(0.5, values),
            "p95_ms": q(0.95, values),
            "max_ms": q(1.0, values),
        }

    return {
        "gets": len(lat),
        "get_p50_ms": q(0.5),
        "get_p95_ms": q(0.95),
        "get_p99_ms": q(0.99),
        "get_max_ms": q(1.0) if lat else None,
        "get_errors": len(errors),
        "routes": routes,
        "error_statuses": sorted(set(errors)),
        "uploads": ups,
    }


def measure(repo: Path, seconds: float, uploaders: int, readers: int, one_page: bool = False) -> dict:
    db = (OUT / "load.duckdb").resolve()  # the server runs in its own checkout
    for p in (db, Path(f"{db}.wal")):
        p.unlink(missing_ok=True)
    port = free_port()
    check = inputs.cpu_check()
    proc = serve(repo, db, port, OUT / "load.log")
    try:
        captures = reader_captures()
        t_setup = time.perf_counter()
        n = 1 if one_page else readers
        made = [upload_analysis(port, captures[k % len(captures)]) for k in range(n)]
        pages = made * readers if one_page else made
        setup_s = time.perf_counter() - t_setup
        upload = multipart([SAMPLES / n for n in UPLOAD])
        idle = read_for(port, seconds / 2, pages[:readers], one_page, 0, upload)
        loaded = read_for(port, seconds, pages[:readers], one_page, uploaders, upload)
    finally:
        proc.terminate()
        proc.wait(60)
    return {
        "repo": str(repo),
        "commit": subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "seconds": seconds,
        "uploaders": uploaders,
        "readers": readers,
        "readers_on": "one page" if one_page else "own analysis, random windows",
        "analyses": len(made),
        "setup_s": setup_s,
        **loaded,
        "idle": idle,
        "cpu_check_mb_s": check,
        "load_average": inputs.loadavg(),
    }


def table(results: list[dict]) -> str:
    rows = [
        "| server | readers on | GETs | GET p50 | GET p95 | GET p99 | GET max | idle p95 (same reads, no uploads)"
        " | p95 / idle p95 | uploads done / 503 / failed | non-200 | CPU check | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in results:
        u, idle = r["uploads"], r.get("idle") or {}
        idle_p95 = idle.get("get_p95_ms", float("nan"))
        rows.append(
            f"| {r['commit']} ({r['repo']}) | {r.get('readers_on', 'one page')} | {r['gets']} | "
            f"{r['get_p50_ms']:.0f} ms | **{r['get_p95_ms']:.0f} ms** | {r.get('get_p99_ms', float('nan')):.0f} ms"
            f" | {r['get_max_ms']:.0f} ms | {idle_p95:.0f} ms | {r['get_p95_ms'] / idle_p95:.2f}x | "
            f"{u['done']} / {u['refused']} / {u['failed']} | {r['get_errors']} | "
            f"{r.get('cpu_check_mb_s', float('nan')):.0f} MB/s | {r.get('load_average', float('nan')):.1f} |"
        )
    return "\n".join(rows)


def route_table(results: list[dict]) -> str:
    """Per route, each server's GET p50 / p95 beside the uploaders (what makes the tail)."""
    names = sorted({n for r in results for n in r.get("routes", {})})
    rows = [
        "| route | " + " | ".join(f"{r['commit']} p50 / p95 / max" for r in results) + " |",
        "|---|" + "---:|" * len(results),
    ]
    for n in names:
        cells = []
        for r in results:
            x = r.get("routes", {}).get(n)
            cells.append(f"{x['p50_ms']:.0f} / {x['p95_ms']:.0f} / {x['max_ms']:.0f} ms" if x else "")
        rows.append(f"| `{n}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--uploaders", type=int, default=6)
    ap.add_argument("--readers", type=int, default=30)
    ap.add_argument("--repo", action="append", type=Path, help="another checkout's server, measured too")
    ap.add_argument("--rounds", type=int, default=1, help="measure the servers this many times, alternating")
    ap.add_argument("--one-page", action="store_true", help="issue 24's load: every reader on one analysis' page")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    repos = [REPO, *(args.repo or [])]
    results = [
        measure(repo, args.seconds, args.uploaders, args.readers, args.one_page)
        for k in range(args.rounds)
        for repo in (repos if k % 2 == 0 else repos[::-1])
    ]
    (OUT / "load.json").write_text(json.dumps(results, indent=1))
    print(f"\n## Reads under ingest: {args.uploaders} uploaders, {args.readers} readers, {args.seconds:g} s\n")
    print(table(results), flush=True)
    print("\nPer route, beside the uploaders:\n")
    print(route_table(results), flush=True)


if __name__ == "__main__":
    main()
