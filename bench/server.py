"""Peak server memory while it ingests an upload of >= 1 GiB (run by `make bench`; alone: `python -m bench.server`).

For each generated file (a blkparse trace of BENCH_SERVER_REQUESTS requests, 1.02 GiB by default, and the
function_graph report of bench.inputs, 1.28 GiB at 10 M lines), a fresh `stallscope serve` is started on a free
loopback port with its own database (bench-out/server.duckdb), and the file is POSTed to /api/analyses as
multipart `files`, streamed from disk in 1 MiB chunks (the client never holds it in memory). Meanwhile the
server's resident set (VmRSS of /proc/PID/status) is sampled every 20 ms and its progress polled; at the end
VmHWM (the kernel's own peak) is read. Reported: upload and total seconds, the ingest's phases, peak RSS
(VmHWM and the sampled maximum) against the target (<= 2 GiB). The server is stopped at the end, whatever
happens. Results: stdout (markdown) and bench-out/server.json.
"""
from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from bench import inputs
from bench.inputs import OUT

TARGET_PEAK_BYTES = 2 << 30
CHUNK = 1 << 20
SAMPLE_S = 0.02
START_TIMEOUT_S = 120
REQUEST_TIMEOUT_S = 1800
DB = OUT / "server.duckdb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status_kib(pid: int, field: str) -> int | None:
    try:
        for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
            if ln.startswith(field + ":"):
                return int(ln.split()[1])
    except (OSError, ValueError):
        return None
    return None


@contextmanager
def serve(db: Path, port: int, log: Path):
    """`stallscope serve --db db --port port` on 127.0.0.1; yields the process once /api/analyses answers.
    Always stopped (SIGINT, then SIGKILL after 30 s) on the way out."""
    exe = Path(sys.executable).with_name("stallscope")
    cmd = [str(exe), "serve", "--db", str(db), "--host", "127.0.0.1", "--port", str(port)]
    logf = open(log, "w")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env={**os.environ, "STALLSCOPE_MAX_UPLOAD":
                                                                              str(8 << 30)})
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"stallscope serve exited with code {proc.returncode}; see {log}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/api/analyses")
                ok = c.getresponse().status == 200
                c.close()
                if ok:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"stallscope serve did not answer within {START_TIMEOUT_S} s; see {log}")
            time.sleep(0.2)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
        logf.close()


class Sampler(threading.Thread):
    """Samples the server's VmRSS and its ingest progress until stopped."""

    def __init__(self, pid: int, port: int, token: str):
        super().__init__(daemon=True)
        self.pid, self.port, self.token = pid, port, token
        self.stop = threading.Event()
        self.max_rss_kib = 0
        self.samples = 0
        self.rss_at_phase: dict[str, int] = {}
        self.phase_started: dict[str, float] = {}
        self.t0 = time.perf_counter()

    def run(self) -> None:
        conn = None
        last_poll = 0.0
        while not self.stop.wait(SAMPLE_S):
            rss = _status_kib(self.pid, "VmRSS")
            if rss is not None:
                self.samples += 1
                self.max_rss_kib = max(self.max_rss_kib, rss)
            now = time.perf_counter()
            if now - last_poll >= 0.25:  # ingest phases, from the progress the UI polls too
                last_poll = now
                try:
                    conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                    conn.request("GET", f"/api/progress/{self.token}")
                    r = conn.getresponse()
                    body = r.read()
                    if r.status == 200:
                        phase = json.loads(body).get("phase")
                        if phase and phase not in self.phase_started:
                            self.phase_started[phase] = now - self.t0
                        if phase and rss is not None:
                            self.rss_at_phase[phase] = max(self.rss_at_phase.get(phase, 0), rss)
                except (OSError, http.client.HTTPException, ValueError):
                    if conn is not None:
                        conn.close()
                    conn = None
        if conn is not None:
            conn.close()


def upload(port: int, path: Path, token: str) -> tuple[int, dict, float, float]:
    """POSTs path as multipart `files`, streamed from disk; returns (status, JSON body, seconds until the last
    byte was sent, seconds until the response)."""
    boundary = uuid.uuid4().hex
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nbench: server memory\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{path.name}\"\r\n"
            f"Content-Type: text/plain\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    size = path.stat().st_size
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    t0 = time.perf_counter()
    conn.putrequest("POST", f"/api/analyses?progress={token}")
    conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
    conn.putheader("Content-Length", str(len(head) + size + len(tail)))
    conn.endheaders()
    conn.send(head)
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            conn.send(chunk)
    conn.send(tail)
    sent = time.perf_counter() - t0
    r = conn.getresponse()
    body = r.read()
    total = time.perf_counter() - t0
    conn.close()
    try:
        data = json.loads(body)
    except ValueError:
        data = {"raw": body[:500].decode("utf-8", "replace")}
    return r.status, data, sent, total


def measure(path: Path) -> dict:
    for p in (DB, Path(str(DB) + ".wal")):
        p.unlink(missing_ok=True)
    port = free_port()
    token = secrets.token_hex(8)
    load0 = inputs.loadavg()
    print(f"uploading {path} ({path.stat().st_size / 2**30:.2f} GiB) to a fresh server on 127.0.0.1:{port}...",
          file=sys.stderr, flush=True)
    with serve(DB, port, OUT / "server.log") as proc:
        idle_kib = _status_kib(proc.pid, "VmRSS") or 0
        sampler = Sampler(proc.pid, port, token)
        sampler.start()
        try:
            status, body, sent_s, total_s = upload(port, path, token)
        finally:
            sampler.stop.set()
            sampler.join(10)
        hwm_kib = _status_kib(proc.pid, "VmHWM") or 0
        after_kib = _status_kib(proc.pid, "VmRSS") or 0
    if status != 201:
        raise SystemExit(f"upload of {path} -> HTTP {status}: {json.dumps(body)[:500]}")
    src = body["sources"][0]
    peak = max(hwm_kib, sampler.max_rss_kib) * 1024
    return {
        "file": path.name, "bytes": path.stat().st_size, "format": src["format"], "lines": src["lines"],
        "events": src["events"], "upload_seconds": sent_s, "total_seconds": total_s,
        "phases_started_s": sampler.phase_started, "rss_mib_by_phase": {k: v / 1024 for k, v in
                                                                      sampler.rss_at_phase.items()},
        "idle_rss_mib": idle_kib / 1024, "vmhwm_mib": hwm_kib / 1024, "sampled_max_rss_mib": sampler.max_rss_kib / 1024,
        "rss_after_mib": after_kib / 1024, "samples": sampler.samples, "peak_mib": peak / 2**20,
        "pass": peak <= TARGET_PEAK_BYTES, "load_before": load0, "load_after": inputs.loadavg(),
    }


def table(result: dict) -> str:
    rows = ["| file | format | size | lines | upload s | total s (upload + ingest) | idle RSS | peak RSS (VmHWM) "
            "| ≤ 2 GiB |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in result["runs"]:
        rows.append(f"| {r['file']} | {r['format']} | {r['bytes'] / 2**30:.2f} GiB | {r['lines']:,} | "
                    f"{r['upload_seconds']:.1f} | {r['total_seconds']:.1f} | {r['idle_rss_mib']:.0f} MiB | "
                    f"**{r['peak_mib']:.0f} MiB** | {'PASS' if r['pass'] else 'MISS'} |")
    return "\n".join(rows)


def main() -> int:
    OUT.mkdir(exist_ok=True)
    files = [inputs.blkparse(inputs.SERVER_REQUESTS), inputs.funcgraph()]
    runs = []
    try:
        for f in files:
            runs.append(measure(f))
    finally:
        for p in (DB, Path(str(DB) + ".wal")):
            p.unlink(missing_ok=True)
    result = {"machine": inputs.machine(), "target_peak_bytes": TARGET_PEAK_BYTES, "runs": runs}
    (OUT / "server.json").write_text(json.dumps(result, indent=1))
    small = [r["file"] for r in runs if r["bytes"] < 1 << 30]
    print("\n## Server memory while ingesting an upload of >= 1 GiB\n")
    print(table(result))
    if small:
        print(f"\n(scaled down: {', '.join(small)} smaller than 1 GiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
