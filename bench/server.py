"""Uploads through the server: drop to view against the bare transfer, and peak memory (run by `make bench`; alone:
`python -m bench.server`).

For each size of BENCH_SERVER_GIB (default 1, 2.5 and 5 GiB), one capture of each format of `--formats` (default
all, made by bench/inputs.py): blkparse text of bench/gen_blkparse.py (remaps, LVM, NVMe, BFQ messages, merges,
splits, requeues), a function_graph report (bench/gen_funcgraph.py), a function_graph trace.dat
(bench/gen_tracedat.py), a blktrace per-CPU set (bench/gen_blktrace.py: its 4 files in one upload, in interleaved
4 MiB pieces as the browser sends them to a server that reads pieces: multipart_parts) and perf script
text with call chains (bench/gen_perf_script.py). Each capture's files are one multipart upload: the same bytes are
first POSTed to an endpoint that only reads them (bench/sink.py, same uvicorn), then to /api/analyses of a fresh
`stallscope serve` with its own database (bench-out/server.duckdb), streamed from disk in 1 MiB chunks, then to the
sink again. Drop to view: from the first byte sent to the answer of GET
/api/analyses/{id} after the 201; its ratio to the faster bare transfer (target <= 1.25), and when the last byte
was sent and the rows were staged (the ingest's `deriving` phase began: what is left after it needs the whole
trace). Meanwhile the server's
VmRSS is sampled every 20 ms and its progress polled; at the end VmHWM (the kernel's own peak) is read (target <= 1
GiB whatever the size). Also the database's size (the disk an upload uses) and the CPU check. The servers are
stopped at the end, whatever happens. Results: stdout (markdown) and bench-out/server.json.

    python -m bench.server [--formats blkparse,funcgraph,tracedat,blktrace,perf] [--link-mbit 1000]
    python -m bench.server --ab base=/tmp/wt-base new=. [--rounds 3] [--link-mbit 1000] [--formats ...]

compares checkouts (git worktrees with their C extensions built; the first is the reference) in one run: each round
every upload is measured with each checkout's server in turn, the order turning every round; the table gives each
one's ratio, drop to view and server CPU time, and its drop to view over the reference's in the same round
(bench-out/server-ab.json), with the last byte sent -> staged -> viewable seconds. `--link-mbit N` sends every
upload, the bare transfer's too, no faster than a link of N Mbit/s (a machine on the network rather than loopback,
where the bare transfer of 1 GiB takes ~0.5 s).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from bench import inputs
from bench.inputs import OUT
from parsers.blktrace import PER_CPU

TARGET_PEAK_BYTES = 1 << 30  # issue 27: <= 1 GiB whatever the upload's size
RATIO_TARGET = 1.25  # drop to view / bare transfer
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
def serve(db: Path, port: int, log: Path, cmd: list[str] | None = None, code: Path | None = None):
    """`stallscope serve --db db --port port` on 127.0.0.1 (or `cmd`; with `code`, a checkout of this repository,
    that checkout's server: `python -m backend.cli serve` in its directory); yields the process once /api/analyses
    answers. Always stopped (SIGINT, then SIGKILL after 30 s) on the way out."""
    exe = Path(sys.executable).with_name("stallscope")
    args = ["serve", "--db", str(db.resolve()), "--host", "127.0.0.1", "--port", str(port)]
    cmd = cmd or ([sys.executable, "-m", "backend.cli", *args] if code else [str(exe), *args])
    logf = open(log, "w")
    # the default upload limit (STALLSCOPE_MAX_UPLOAD, 8 GiB) must take the 5 GiB uploads: it is not raised here
    env = {k: v for k, v in os.environ.items() if k != "STALLSCOPE_MAX_UPLOAD"}
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, cwd=code, env=env)
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


PART_END = b"\r\n"  # after each file's bytes


def multipart_frame(boundary: str, name: str, paths: list[Path], content_type: str) -> tuple[list[bytes], bytes]:
    """The multipart/form-data framing of an upload named `name` holding the files `paths`, each whole: the bytes
    before each file (the first also with the `name` field) and the body's last bytes. The body: each head, its file's
    bytes and PART_END, in turn, then the tail."""
    heads = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{p.name}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n".encode()
        for p in paths
    ]
    heads[0] = f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n{name}\r\n'.encode() + heads[0]
    return heads, f"--{boundary}--\r\n".encode()


PIECE_BYTES = 4 << 20  # a piece of a blktrace set's member, as the browser sends it (frontend/src/api/upload.ts)


def piece_order(sizes: list[int], piece_bytes: int = PIECE_BYTES) -> list[tuple[int, int, int]]:
    """(file's index, offset, length) of each piece of files of these sizes, in the order the browser sends them
    (frontend/src/api/upload.ts, interleavedPieces): the first piece of every file, then one more piece of each in
    turn, until each is sent. An empty file is one empty piece."""
    counts = [max(1, -(-size // piece_bytes)) for size in sizes]
    return [
        (i, k * piece_bytes, min(piece_bytes, size - k * piece_bytes))
        for k in range(max(counts, default=0))
        for i, size in enumerate(sizes)
        if k < counts[i]
    ]


def takes_pieces(code: Path | None) -> bool:
    """Whether a checkout's server reads files sent in pieces (parts named `chunk`, backend/api/upload_body.py): its
    browser then sends a blktrace set so, and so does upload(); an older one gets each file whole."""
    body = (code or Path(__file__).resolve().parents[1]) / "backend" / "api" / "upload_body.py"
    return 'PIECE_FIELD = b"chunk"' in body.read_text()


def multipart_parts(
    boundary: str, name: str, paths: list[Path], content_type: str, pieces: bool = False
) -> tuple[list[tuple[bytes, Path, int, int]], bytes]:
    """An upload's parts as the browser sends them: (head, file, offset, length) of each part, then the body's last
    bytes; the body is each head, those bytes of the file and PART_END, in turn, then the tail. With `pieces`, the
    files of blktrace per-CPU sets (parsers/blktrace.py's PER_CPU) are sent in interleaved pieces (`chunk` parts,
    piece_order) after the other files, each whole (`files`); without, every file whole."""
    whole = [p for p in paths if not (pieces and PER_CPU.match(p.name))]
    pieced = [p for p in paths if pieces and PER_CPU.match(p.name)]
    if whole:
        heads, tail = multipart_frame(boundary, name, whole, content_type)
        parts = [(h, p, 0, p.stat().st_size) for h, p in zip(heads, whole)]
    else:
        parts, tail = [], f"--{boundary}--\r\n".encode()
    for i, at, n in piece_order([p.stat().st_size for p in pieced]):
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="chunk"; filename="{pieced[i].name}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n".encode()
        )
        parts.append((head, pieced[i], at, n))
    if not whole:  # the name field first, as multipart_frame puts it
        head, p, at, n = parts[0]
        name_field = f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n{name}\r\n'.encode()
        parts[0] = (name_field + head, p, at, n)
    return parts, tail


def upload(
    port: int,
    paths: list[Path],
    token: str,
    url: str | None = None,
    link_mbit: float = 0,
    pieces: bool = False,
) -> tuple[int, dict, float, float]:
    """POSTs the files of one capture (one, or a blktrace set's per-CPU files) in one body, streamed from disk (to
    /api/analyses, or `url`): each whole (`files` parts), or with `pieces` a set's files interleaved as the browser
    sends them (multipart_parts). Returns (status, JSON body, seconds until the last byte was sent, seconds until the
    response). `link_mbit`: the bytes are sent no faster than a link of that many Mbit/s would carry them (each 1 MiB
    chunk waits for its time), as from a machine on the network rather than over loopback; 0: as fast as loopback
    takes them."""
    boundary = uuid.uuid4().hex
    parts, tail = multipart_parts(boundary, "bench: server memory", paths, "application/octet-stream", pieces)
    size = sum(len(head) + n + len(PART_END) for head, _, _, n in parts) + len(tail)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    t0 = time.perf_counter()
    conn.putrequest("POST", url or f"/api/analyses?progress={token}")
    conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
    conn.putheader("Content-Length", str(size))
    conn.endheaders()
    pace = link_mbit * 1e6 / 8  # bytes per second, 0: unpaced
    sent_bytes = 0
    files = {p: open(p, "rb") for p in dict.fromkeys(p for _, p, _, _ in parts)}
    try:
        for head, path, at, n in parts:
            conn.send(head)
            sent_bytes += len(head)
            f = files[path]
            f.seek(at)
            while n and (chunk := f.read(min(CHUNK, n))):
                if pace:
                    time.sleep(max(0.0, t0 + sent_bytes / pace - time.perf_counter()))
                conn.send(chunk)
                sent_bytes += len(chunk)
                n -= len(chunk)
            conn.send(PART_END)
    finally:
        for f in files.values():
            f.close()
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


def bare_transfer(paths: list[Path], link_mbit: float = 0, pieces: bool = False) -> float:
    """Seconds from the first byte sent to the answer of an endpoint that only reads the body (bench.sink), for the
    same multipart upload of paths (the same bytes: whole, or with `pieces`, as upload() sends them)."""
    port = free_port()
    cmd = [sys.executable, "-m", "bench.sink", "--port", str(port)]
    with serve(DB, port, OUT / "sink.log", cmd):
        for path in paths:
            inputs.cached(path)
        status, body, _, total = upload(port, paths, "", url="/sink", link_mbit=link_mbit, pieces=pieces)
    if status != 200:
        raise SystemExit(f"bare transfer of {label(paths)} -> HTTP {status}: {json.dumps(body)[:500]}")
    return total


def viewable(port: int, analysis_id: str) -> None:
    """Waits until the analysis answers (its page's first request)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    conn.request("GET", f"/api/analyses/{analysis_id}")
    r = conn.getresponse()
    r.read()
    conn.close()
    if r.status != 200:
        raise SystemExit(f"GET /api/analyses/{analysis_id} -> HTTP {r.status}")


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def label(paths: list[Path]) -> str:
    """What the tables call a capture: its file's name, or a set's (its directory's name and its files' count)."""
    return paths[0].name if len(paths) == 1 else f"{paths[0].parent.name} ({len(paths)} files)"


def measure(paths: list[Path], code: Path | None = None, link_mbit: float = 0) -> dict:
    """One capture (its files, one upload): the bare transfer, the upload to a fresh server (drop to view, peak
    memory, the server's CPU time), the bare transfer again; the ratio is taken against the faster bare transfer.
    `code`: the checkout whose server runs (serve()). `link_mbit`: every transfer paced as upload() says."""
    pieces = takes_pieces(code)  # a blktrace set sent as that checkout's browser sends it
    bare = [bare_transfer(paths, link_mbit, pieces)]
    size = sum(p.stat().st_size for p in paths)
    for p in (DB, Path(str(DB) + ".wal")):
        p.unlink(missing_ok=True)
    port = free_port()
    token = secrets.token_hex(8)
    load0 = inputs.loadavg()
    check, steal = inputs.cpu_check(), inputs.steal_seconds()
    print(
        f"uploading {label(paths)} ({size / 2**30:.2f} GiB) to a fresh server on 127.0.0.1:{port}...",
        file=sys.stderr,
        flush=True,
    )
    with serve(DB, port, OUT / "server.log", code=code) as proc:
        idle_kib = _status_kib(proc.pid, "VmRSS") or 0
        for path in paths:
            inputs.cached(path)
        sampler = Sampler(proc.pid, port, token)
        cpu0 = cpu_seconds(proc.pid)
        try:
            t0 = sampler.t0 = time.perf_counter()  # the phases' times from the first byte sent
            sampler.start()
            status, body, sent_s, total_s = upload(port, paths, token, link_mbit=link_mbit, pieces=pieces)
            if status == 201:
                viewable(port, body["id"])
            view_s = time.perf_counter() - t0
        finally:
            sampler.stop.set()
            sampler.join(10)
        cpu_s = cpu_seconds(proc.pid) - cpu0
        hwm_kib = _status_kib(proc.pid, "VmHWM") or 0
        after_kib = _status_kib(proc.pid, "VmRSS") or 0
        db_bytes = sum(p.stat().st_size for p in (DB, Path(str(DB) + ".wal")) if p.exists())
    steal = inputs.steal_seconds() - steal
    if status != 201:
        raise SystemExit(f"upload of {label(paths)} -> HTTP {status}: {json.dumps(body)[:500]}")
    bare.append(bare_transfer(paths, link_mbit, pieces))
    src = body["sources"][0]
    peak = max(hwm_kib, sampler.max_rss_kib) * 1024
    return {
        "file": label(paths),
        "files": len(paths),
        "sent_in_pieces": pieces and any(PER_CPU.match(p.name) for p in paths),
        "link_mbit": link_mbit,
        "bytes": size,
        "format": src["format"],
        "lines": src["lines"],
        "events": src["events"],
        "upload_seconds": sent_s,
        "total_seconds": total_s,
        "view_seconds": view_s,
        "staged_seconds": sampler.phase_started.get("deriving"),
        "bare_seconds": bare,
        "ratio": view_s / min(bare),
        "pass_ratio": view_s <= RATIO_TARGET * min(bare),
        "phases_started_s": sampler.phase_started,
        "rss_mib_by_phase": {k: v / 1024 for k, v in sampler.rss_at_phase.items()},
        "idle_rss_mib": idle_kib / 1024,
        "vmhwm_mib": hwm_kib / 1024,
        "sampled_max_rss_mib": sampler.max_rss_kib / 1024,
        "rss_after_mib": after_kib / 1024,
        "samples": sampler.samples,
        "peak_mib": peak / 2**20,
        "pass": peak <= TARGET_PEAK_BYTES,
        "load_before": load0,
        "load_after": inputs.loadavg(),
        "cpu_check_mb_s": check,
        "steal_seconds": steal,
        "db_bytes": db_bytes,
        "server_cpu_seconds": cpu_s,
    }


def table(result: dict) -> str:
    rows = [
        "| file | format | size | lines | bare transfer s (before, after) | drop to view s | **ratio** "
        f"(≤ {RATIO_TARGET}) | last byte sent → staged → viewable s | server CPU s | lines/s | peak RSS (VmHWM) | ≤ 1 GiB | database | CPU check MB/s; steal s |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---|",
    ]
    for r in result["runs"]:
        rows.append(
            f"| {r['file']} | {r['format']} | {r['bytes'] / 2**30:.2f} GiB | {r['lines']:,} | "
            f"{' / '.join(f'{b:.2f}' for b in r['bare_seconds'])} | {r['view_seconds']:.2f} | "
            f"**{r['ratio']:.2f}×** {'PASS' if r['pass_ratio'] else 'MISS'} | {timings(r)} | "
            f"{r['server_cpu_seconds']:.2f} | {r['lines'] / r['view_seconds'] / 1e6:.2f} M | **{r['peak_mib']:.0f} MiB** | "
            f"{'PASS' if r['pass'] else 'MISS'} | {r['db_bytes'] / 2**30:.2f} GiB | "
            f"{r['cpu_check_mb_s']:.0f}; {r['steal_seconds']:.1f} |"
        )
    return "\n".join(rows) + (
        "\n\nBare transfer: the same multipart bytes POSTed by the same client to an endpoint that only reads them"
        " (bench/sink.py, served by the same uvicorn), just before and just after the upload; the ratio is taken"
        " against the faster. Drop to view: from the first byte sent to the answer of GET /api/analyses/{id} after"
        " the 201; staged: the ingest's `deriving` phase first seen (its progress is polled every 0.25 s). Peak RSS:"
        " the server process' VmHWM (its resident set sampled every 20 ms agrees)."
    )


def timings(r: dict) -> str:
    """Last byte sent -> staged -> viewable, seconds from the first byte sent."""
    staged = r.get("staged_seconds")
    return f"{r['upload_seconds']:.2f} → {'?' if staged is None else format(staged, '.2f')} → {r['view_seconds']:.2f}"


# the uploads' formats (--formats): each makes the files of one capture of about `gib` GiB
CAPTURES = {
    "blkparse": lambda gib: [inputs.blkparse_real(inputs.requests_for_gib(gib))],
    "funcgraph": lambda gib: [inputs.funcgraph(inputs.fg_lines_for_gib(gib))],
    "tracedat": lambda gib: [inputs.tracedat_for_gib(gib)],
    "blktrace": inputs.blktrace_for_gib,
    "perf": lambda gib: [inputs.perf_script_for_gib(gib)],
}


def server_files(formats: list[str] | None = None) -> list[tuple[str, list[Path]]]:
    """The uploads: for each size in BENCH_SERVER_GIB (GiB, default 1), a capture of each of `formats` (default
    all, CAPTURES) of about that size: (its format's name in CAPTURES, its files)."""
    return [(fmt, CAPTURES[fmt](gib)) for gib in inputs.SERVER_GIB for fmt in formats or CAPTURES]


def ab(checkouts: dict[str, Path], rounds: int, link_mbit: float = 0, formats: list[str] | None = None) -> dict:
    """Checkouts compared in one run: each round, for each upload, measure() with each checkout's server, the
    checkouts' order turning by one every round (none always first after a pause or last in a busy minute)."""
    names = list(checkouts)
    runs = []
    for k in range(rounds):
        order = names[k % len(names) :] + names[: k % len(names)]
        for capture, f in server_files(formats):
            for name in order:
                print(f"round {k + 1} of {rounds}: {label(f)} with {name}...", file=sys.stderr, flush=True)
                runs.append(
                    {"checkout": name, "round": k, "capture": capture, **measure(f, checkouts[name], link_mbit)}
                )
    return {
        "machine": inputs.machine(),
        "checkouts": {n: str(p) for n, p in checkouts.items()},
        "rounds": rounds,
        "link_mbit": link_mbit,
        "runs": runs,
    }


def ab_table(result: dict) -> str:
    """Per upload and checkout: the medians of the ratio, of drop to view and of the server's CPU time; then each
    checkout's median of its per-round ratios to the reference's (the first checkout) on the same file."""
    names = list(result["checkouts"])
    ref = names[0]
    rows = [
        "| file | checkout | drop to view / bare transfer, median (each round) | drop to view s, median | "
        "last byte sent → staged → viewable s (each round) | "
        f"server CPU s, median | × {ref}'s drop to view (per round, median) | peak RSS max | load | CPU check MB/s |",
        "|---|---|---:|---:|---|---:|---:|---:|---|---|",
    ]
    files = list(dict.fromkeys(r["file"] for r in result["runs"]))
    for f in files:
        for name in names:
            mine = [r for r in result["runs"] if r["file"] == f and r["checkout"] == name]
            refs = {r["round"]: r for r in result["runs"] if r["file"] == f and r["checkout"] == ref}
            per_round = [r["view_seconds"] / refs[r["round"]]["view_seconds"] for r in mine if r["round"] in refs]
            rows.append(
                f"| {f} | {name} | **{statistics.median(r['ratio'] for r in mine):.2f}×** "
                f"({', '.join(format(r['ratio'], '.2f') for r in mine)}) | "
                f"{statistics.median(r['view_seconds'] for r in mine):.2f} | "
                f"{'; '.join(timings(r) for r in mine)} | "
                f"{statistics.median(r['server_cpu_seconds'] for r in mine):.2f} | "
                f"{statistics.median(per_round):.2f} | {max(r['peak_mib'] for r in mine):.0f} MiB | "
                f"{min(r['load_before'] for r in mine):.1f}–{max(r['load_after'] for r in mine):.1f} | "
                f"{', '.join(format(r['cpu_check_mb_s'], '.0f') for r in mine)} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--ab",
        nargs="+",
        metavar="NAME=CHECKOUT",
        help="compare checkouts of this repository (worktrees with their C extensions built; the first "
        "is the reference), interleaved in one run",
    )
    ap.add_argument("--rounds", type=int, default=3, help="--ab: rounds")
    ap.add_argument(
        "--formats",
        default=",".join(CAPTURES),
        help=f"the formats uploaded, comma-separated (default all: {','.join(CAPTURES)})",
    )
    ap.add_argument(
        "--link-mbit",
        type=float,
        default=0,
        help="send every upload (the bare transfer's too) no faster than a link of this many Mbit/s, "
        "e.g. 1000 for a gigabit LAN (default: loopback, unpaced)",
    )
    a = ap.parse_args(argv)
    formats = [f.strip() for f in a.formats.split(",") if f.strip()]
    if unknown := [f for f in formats if f not in CAPTURES]:
        ap.error(f"unknown format(s) {', '.join(unknown)}: choose from {', '.join(CAPTURES)}")
    OUT.mkdir(exist_ok=True)
    if a.ab:
        checkouts = {n: Path(p).resolve() for n, p in (x.split("=", 1) for x in a.ab)}
        try:
            result = ab(checkouts, a.rounds, a.link_mbit, formats)
        finally:
            for p in (DB, Path(str(DB) + ".wal")):
                p.unlink(missing_ok=True)
        (OUT / "server-ab.json").write_text(json.dumps(result, indent=1))
        link = f"a {a.link_mbit:g} Mbit/s link" if a.link_mbit else "loopback"
        print(f"\n## Upload A/B: drop to view, interleaved checkouts ({link})\n")
        print(ab_table(result))
        return 0
    runs, kept = [], []
    files = server_files(formats)
    try:
        for k, (capture, f) in enumerate(files):
            runs.append({"capture": capture, **measure(f, link_mbit=a.link_mbit)})
            print(table({"runs": runs[-1:]}).split("\n\n")[0], file=sys.stderr, flush=True)
            if k >= len(files) - len(formats) and DB.exists():  # the largest uploads' analyses: views measured below
                kept.append(OUT / f"server-largest-{capture}.duckdb")
                for src, dst in ((DB, kept[-1]), (Path(str(DB) + ".wal"), Path(str(kept[-1]) + ".wal"))):
                    if src.exists():
                        src.replace(dst)
                    else:
                        dst.unlink(missing_ok=True)
        views = largest_views(kept)
    finally:
        for p in (DB, Path(str(DB) + ".wal"), *kept, *(Path(str(k) + ".wal") for k in kept)):
            p.unlink(missing_ok=True)
    result = {
        "machine": inputs.machine(),
        "target_peak_bytes": TARGET_PEAK_BYTES,
        "ratio_target": RATIO_TARGET,
        "runs": runs,
        "largest_views": views,
    }
    (OUT / "server.json").write_text(json.dumps(result, indent=1))
    link = f"a {a.link_mbit:g} Mbit/s link" if a.link_mbit else "loopback"
    print(f"\n## Upload: drop to view against the bare transfer ({link}), and server memory\n")
    print(table(result))
    print("\n### Peak memory by upload size (the server's VmHWM; target ≤ 1 GiB whatever the size)\n")
    print(peak_table(result))
    print("\n### The largest uploads' views (bench/api.py's routes on their analyses)\n")
    print(views["text"])
    return 0


def largest_views(dbs: list[Path]) -> dict:
    """bench/bigapi.py on the databases, in a process of its own: its tables, and its results."""
    if not dbs:
        return {"text": "(no analysis kept)", "results": []}
    print(f"measuring the views of {', '.join(d.name for d in dbs)}...", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, "-m", "bench.bigapi", *map(str, dbs)], stdout=subprocess.PIPE, text=True)
    if done.returncode:  # the uploads' figures are kept all the same; bench.bigapi said why on stderr
        return {"text": f"**FAILED**: bench.bigapi exited with code {done.returncode} (see its output)", "results": []}
    out = done.stdout.rstrip("\n").rsplit("\n", 1)
    return {"text": out[0].strip(), "results": json.loads(out[1])}


def peak_table(result: dict) -> str:
    """A row per format, a column per upload size: peak RSS, and the database's size per GiB of input."""
    runs = result["runs"]
    sizes = sorted({round(r["bytes"] / 2**30, 2) for r in runs})
    rows = [
        "| format | " + " | ".join(f"{g:g} GiB: peak RSS" for g in sizes) + " | flat (largest / smallest) | "
        "database per GiB of input |",
        "|---|" + "---:|" * len(sizes) + "---:|---:|",
    ]
    for fmt in dict.fromkeys(r.get("capture", r["format"]) for r in runs):
        mine = {round(r["bytes"] / 2**30, 2): r for r in runs if r.get("capture", r["format"]) == fmt}
        cells = [
            f"**{mine[g]['peak_mib']:.0f} MiB** {'PASS' if mine[g]['pass'] else 'MISS'}" if g in mine else ""
            for g in sizes
        ]
        lo, hi = mine[min(mine)], mine[max(mine)]
        per_gib = sum(r["db_bytes"] for r in mine.values()) / sum(r["bytes"] for r in mine.values())
        flat = f"{hi['peak_mib'] / lo['peak_mib']:.2f}×" if len(mine) > 1 else "— (one size)"
        rows.append(f"| {fmt} | {' | '.join(cells)} | {flat} | {per_gib:.2f} GiB |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
