"""Reads under ingest load (issue 24): 6 uploaders and 30 readers for 60 s against `stallscope serve` on 127.0.0.1.

    python -m bench.load [--seconds 60] [--uploaders 6] [--readers 30] [--repo PATH] [--rounds N]

A fresh server (its own database under bench-out/) gets the incident demo (three sources) as the readers' analysis.
Then, for --seconds, each uploader POSTs samples/incident.trace-cmd-report.txt + incident.blkparse.txt again and
again (a 503 waits for its Retry-After, capped at 1 s), while each reader GETs the analysis page's routes in turn
(the analysis, timeline, requests, dispatch summary, latency over time, heatmap, chains). Reported: GET p50/p95/max,
GETs done, uploads done and refused. --repo runs the server of another checkout (e.g. a worktree of 15aff2a, with
its C extensions built) to measure it in the same run; --rounds N alternates the servers N times (this one first in
odd rounds, last in even ones). Before each measurement the CPU check of bench.run (SHA-256 MB/s) and the load
average are recorded: the machine is shared. `make bench` runs it as its part `load`. Only loopback addresses are used; every loop ends by time.
Results: stdout (markdown) and bench-out/load.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from bench import inputs
from bench.inputs import OUT
from bench.server import free_port

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
UPLOAD = ["incident.trace-cmd-report.txt", "incident.blkparse.txt"]
DEMO = ["incident.blkparse.txt", "incident.trace-cmd-report.txt", "incident.offcputime.txt"]


def multipart(paths: list[Path]) -> tuple[bytes, str]:
    b = uuid.uuid4().hex
    parts = [f"--{b}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nbench load\r\n".encode()]
    for p in paths:
        parts.append(f"--{b}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{p.name}\"\r\n"
                     f"Content-Type: text/plain\r\n\r\n".encode() + p.read_bytes() + b"\r\n")
    parts.append(f"--{b}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={b}"


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
    proc = subprocess.Popen([sys.executable, "-m", "backend.cli", "serve", "--db", str(db), "--host", "127.0.0.1",
                             "--port", str(port)], cwd=repo, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
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


def measure(repo: Path, seconds: float, uploaders: int, readers: int) -> dict:
    db = (OUT / "load.duckdb").resolve()  # the server runs in its own checkout
    for p in (db, Path(f"{db}.wal")):
        p.unlink(missing_ok=True)
    port = free_port()
    check = inputs.cpu_check()
    proc = serve(repo, db, port, OUT / "load.log")
    try:
        status, created, _ = post(port, *multipart([SAMPLES / n for n in DEMO]))
        assert status == 201, (status, created)
        a = f"/api/analyses/{created['id']}"
        routes = [a, f"{a}/timeline?width_px=1200", f"{a}/requests?order=i2d&limit=100", f"{a}/dispatch-summary",
                  f"{a}/latency-over-time?buckets=400", f"{a}/heatmap?metric=wait", f"{a}/chains?limit=50"]
        body, ctype = multipart([SAMPLES / n for n in UPLOAD])
        stop = time.monotonic() + seconds
        lat: list[float] = []
        errors: list[int] = []
        ups = {"done": 0, "refused": 0, "failed": 0}
        lock = threading.Lock()

        def upload_loop():
            while time.monotonic() < stop:
                st, _, retry = post(port, body, ctype)
                with lock:
                    ups["done" if st == 201 else "refused" if st == 503 else "failed"] += 1
                if st == 503:
                    time.sleep(min(float(retry or 1), 1.0))

        def read_loop(k: int):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            i = k
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                c.request("GET", routes[i % len(routes)])
                r = c.getresponse()
                r.read()
                dt = time.perf_counter() - t0
                with lock:
                    lat.append(dt)
                    if r.status != 200:
                        errors.append(r.status)
                i += 1
            c.close()

        threads = [threading.Thread(target=upload_loop) for _ in range(uploaders)]
        threads += [threading.Thread(target=read_loop, args=(k,)) for k in range(readers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        proc.terminate()
        proc.wait(60)
    lat.sort()

    def q(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")

    return {"repo": str(repo), "commit": subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                                                       capture_output=True, text=True).stdout.strip(),
            "seconds": seconds, "uploaders": uploaders, "readers": readers, "gets": len(lat),
            "get_p50_ms": q(0.5), "get_p95_ms": q(0.95), "get_max_ms": q(1.0) if lat else None,
            "get_errors": len(errors), "uploads": ups, "cpu_check_mb_s": check, "load_average": inputs.loadavg()}


def table(results: list[dict]) -> str:
    rows = ["| server | GETs | GET p50 | GET p95 | GET max | uploads done / 503 / failed | CPU check | load |",
            "|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in results:
        u = r["uploads"]
        rows.append(f"| {r['commit']} ({r['repo']}) | {r['gets']} | {r['get_p50_ms']:.0f} ms | "
                    f"**{r['get_p95_ms']:.0f} ms** | {r['get_max_ms']:.0f} ms | {u['done']} / {u['refused']} / "
                    f"{u['failed']} | {r.get('cpu_check_mb_s', float('nan')):.0f} MB/s | "
                    f"{r.get('load_average', float('nan')):.1f} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--uploaders", type=int, default=6)
    ap.add_argument("--readers", type=int, default=30)
    ap.add_argument("--repo", action="append", type=Path, help="another checkout's server, measured too")
    ap.add_argument("--rounds", type=int, default=1, help="measure the servers this many times, alternating")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    repos = [REPO, *(args.repo or [])]
    results = [measure(repo, args.seconds, args.uploaders, args.readers)
               for k in range(args.rounds) for repo in (repos if k % 2 == 0 else repos[::-1])]
    (OUT / "load.json").write_text(json.dumps(results, indent=1))
    print(f"\n## Reads under ingest: {args.uploaders} uploaders, {args.readers} readers, {args.seconds:g} s\n")
    print(table(results), flush=True)


if __name__ == "__main__":
    main()
