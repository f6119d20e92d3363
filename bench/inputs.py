"""The generated inputs of `make bench`, their sizes (environment variables scale them down) and the machine.

Every file is written once into bench-out/ by a seeded generator (same sizes, same bytes) and reused after.

    BENCH_REQUESTS         blkparse requests (default 2,000,000: ~10.46 M events)
    BENCH_FUNCGRAPH_LINES  trace-cmd report lines of a function_graph capture with `-T` stacks, interrupts, page
                           faults and dropped events (default 16,000,000: 1.32 GiB, ~7.9 M events)
    BENCH_OFFCPU_RECORDS   bcc offcputime records (default 100,000: ~20 k distinct kernel stacks, 3.2 M lines)
    BENCH_SERVER_REQUESTS  blkparse requests of the file uploaded to the server (default 2,850,000: 1.02 GiB)
    BENCH_SERVER_GIB       the server part's upload sizes, GiB (default "1,2.5,5"): per size a capture of each
                           format of bench/server.py's --formats, made by its generator: a blkparse file of
                           bench/gen_blkparse.py (remaps, LVM, NVMe, BFQ messages...), a function_graph report, a
                           trace.dat, a blktrace per-CPU set and perf script text
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

OUT = Path("bench-out")
REQUESTS = int(os.environ.get("BENCH_REQUESTS", "2000000"))
FG_LINES = int(os.environ.get("BENCH_FUNCGRAPH_LINES", "16000000"))
OFFCPU_RECORDS = int(os.environ.get("BENCH_OFFCPU_RECORDS", "100000"))
SERVER_REQUESTS = int(os.environ.get("BENCH_SERVER_REQUESTS", "2850000"))
SERVER_GIB = [float(g) for g in os.environ.get("BENCH_SERVER_GIB", "1,2.5,5").split(",") if g.strip()]
BLK_REAL_REQUESTS_PER_GIB = 2_045_000  # bench/gen_blkparse.py: ~525 bytes per request
FG_LINES_PER_GIB = 12_160_000  # bench/gen_funcgraph.py: ~88 bytes per line (a third of them -T stack frames)
TRACEDAT_ROUNDS_PER_GIB = 437_000  # bench/gen_tracedat.py: ~2,455 bytes per round of 69 events
BLKTRACE_REQUESTS_PER_GIB = 4_470_000  # bench/gen_blktrace.py: ~240 bytes per request (5 records) on 4 CPUs
PERF_LINES_PER_GIB = 17_730_000  # bench/gen_perf_script.py: ~60.5 bytes per line


def generate(path: Path, cmd: list[str]) -> Path:
    """Runs the generator `cmd` (arguments of the Python interpreter) unless `path` exists; written to a
    temporary name first, so an interrupted run never leaves a truncated input behind."""
    if path.exists():
        return path
    OUT.mkdir(exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    print(f"generating {path}...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, *[str(tmp) if c == str(path) else c for c in cmd]], check=True)
    tmp.rename(path)
    return path


def blkparse(requests: int = REQUESTS) -> Path:
    p = OUT / f"blkparse-{requests}.txt"
    return generate(p, ["-m", "samples.gen_blkparse", "--requests", str(requests), "--out", str(p)])


def blkparse_real(requests: int) -> Path:
    """blkparse text as real disks write it (bench/gen_blkparse.py)."""
    p = OUT / f"blkparse-real-{requests}.txt"
    return generate(p, ["bench/gen_blkparse.py", str(p), "--requests", str(requests)])


def requests_for_gib(gib: float) -> int:
    return int(gib * BLK_REAL_REQUESTS_PER_GIB)


def fg_lines_for_gib(gib: float) -> int:
    return int(gib * FG_LINES_PER_GIB)


def funcgraph(lines: int = FG_LINES) -> Path:
    """A function_graph capture's report as real ones are (bench/gen_funcgraph.py; `-real-` since it writes
    interrupts, page faults, `-T` stacks and drops: the older files without them are not reused)."""
    p = OUT / f"funcgraph-real-{lines}.txt"
    return generate(p, ["bench/gen_funcgraph.py", str(p), "--lines", str(lines)])


def tracedat_for_gib(gib: float) -> Path:
    """A function_graph trace.dat of about `gib` GiB (bench/gen_tracedat.py: calls, switches, wake-ups on 4 CPUs;
    written from memory, ~7 GiB of it per GiB made)."""
    rounds = int(gib * TRACEDAT_ROUNDS_PER_GIB)
    p = OUT / f"function-graph-{rounds}.dat"
    return generate(p, ["-m", "bench.gen_tracedat", str(p), "--rounds", str(rounds)])


def blktrace_for_gib(gib: float) -> list[Path]:
    """The files of a blktrace per-CPU set of about `gib` GiB in all (bench/gen_blktrace.py, 4 CPUs), one
    capture."""
    requests = int(gib * BLKTRACE_REQUESTS_PER_GIB)
    d = OUT / f"blktrace-{requests}"
    generate(d, ["bench/gen_blktrace.py", str(d), "--requests", str(requests)])
    return sorted(d.glob("*.blktrace.*"))


def perf_script_for_gib(gib: float) -> Path:
    """`perf script` text of a scheduler and block capture with call chains (bench/gen_perf_script.py)."""
    lines = int(gib * PERF_LINES_PER_GIB)
    p = OUT / f"perf-script-{lines}.txt"
    return generate(p, ["bench/gen_perf_script.py", str(p), "--lines", str(lines)])


def offcpu(records: int = OFFCPU_RECORDS) -> Path:
    p = OUT / f"offcputime-{records}.txt"
    return generate(p, ["bench/gen_offcpu.py", str(p), "--records", str(records)])


def run_measured(cmd: list[str]) -> tuple[dict, float, int, float]:
    """Runs cmd; returns its JSON output, wall seconds, that process' own peak RSS (KiB: the VmHWM it reports as
    `vmhwm_kib`, bench/ingest.py; else wait4's ru_maxrss, which is at least this process' own peak when it started
    the child) and CPU seconds."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    result = json.loads(out)
    return result, wall, result.get("vmhwm_kib") or usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def machine() -> dict:
    """What the figures were measured on."""
    cpu = "?"
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        mem = int(Path("/proc/meminfo").read_text().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import duckdb

        duck = duckdb.__version__
    except ImportError:
        duck = "?"
    return {
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "mem_gib": round(mem / 2**30, 1),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "python": platform.python_version(),
        "duckdb": duck,
    }


def machine_line(m: dict | None = None) -> str:
    m = m or machine()
    return (
        f"{m['arch']}, {m['cpu']}, {m['nproc']} cores (nproc), {m['mem_gib']} GiB, Linux {m['kernel']}, "
        f"Python {m['python']}, DuckDB {m['duckdb']}"
    )


def cached(path: Path) -> None:
    """Reads the file once, so that a run reads it from the page cache, as the server reads an upload it has just
    written to its spool file. Between runs this VM's memory reclaim (DAMON) can evict a cold input: the run then
    measured the disk too (the 10 M-line function_graph ingest ~1 s slower, 2 s more system CPU)."""
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def cpu_check() -> float:
    """How fast this machine's CPU is right now: MB/s of SHA-256 over 32 MiB, the best of three (~0.1 s). This VM's
    speed changes from minute to minute (the same ingest took 13.5 or 18 s of CPU within the hour): the check, taken
    just before each ingest run, says which minute the run had."""
    data = bytes(32 << 20)
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        hashlib.sha256(data).digest()
        best = max(best, len(data) / 1e6 / (time.perf_counter() - t0))
    return best


def steal_seconds() -> float:
    """CPU time the hypervisor gave to others so far (/proc/stat: all CPUs, seconds)."""
    try:
        return int(Path("/proc/stat").read_text().split("\n", 1)[0].split()[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")
