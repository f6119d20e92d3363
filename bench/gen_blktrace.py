"""A blktrace capture for the benchmark: the per-CPU files `NAME.blktrace.<cpu>` of a seeded synthetic workload.

    python bench/gen_blktrace.py DIR --requests N [--cpus 4] [--name bench]

Each request is Q G I D on the CPU of its process and C on the next CPU (completions come from another CPU's
interrupt), 4 KiB at a sector of its own, reads and writes; its queue and service times are drawn from exponentials
(20 us, 100 us), so requests overlap and the per-CPU files interleave in time. Each file starts with a process
notify record for every process (names come from notify records, as in a real capture). Records are version 7,
little-endian, written with numpy a million at a time.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

HEADER = np.dtype(
    [
        ("magic", "<u4"),
        ("sequence", "<u4"),
        ("time", "<u8"),
        ("sector", "<u8"),
        ("bytes", "<u4"),
        ("action", "<u4"),
        ("pid", "<u4"),
        ("device", "<u4"),
        ("cpu", "<u4"),
        ("error", "<u2"),
        ("pdu_len", "<u2"),
    ]
)
assert HEADER.itemsize == 48
MAGIC = 0x65617407
DEVICE = 8 << 20 | 16
TC = {"read": 1 << 16, "write": 2 << 16, "queue": 1 << 20, "issue": 1 << 22, "complete": 1 << 23, "fs": 1 << 24}
ACTIONS = {
    "Q": 1 | TC["queue"],
    "G": 4 | TC["queue"],
    "I": 12 | TC["queue"],
    "D": 7 | TC["issue"],
    "C": 8 | TC["complete"],
}
PROCESS = 0x04000000
PIDS = np.array([1201, 1202, 1203, 1204, 1377, 2210, 2211, 4096], dtype=np.uint32)
COMMS = [b"fio", b"fio", b"fio", b"fio", b"postgres", b"kworker/u16:2", b"kworker/u16:3", b"jbd2/sdb1-8"]
BLOCK = 1_000_000


def events(first: int, n: int, cpus: int, rng: np.random.Generator) -> dict[int, np.ndarray]:
    """Requests first..first+n-1 as records, per CPU (not yet sorted nor numbered)."""
    k = np.arange(first, first + n, dtype=np.uint64)
    t0 = k * 2000 + rng.integers(0, 1500, n).astype(np.uint64)
    who = rng.integers(0, len(PIDS), n)
    pid, cpu = PIDS[who], (who % cpus).astype(np.uint32)
    write = rng.random(n) < 0.6
    rw = np.where(write, TC["write"], TC["read"]).astype(np.uint32)
    d = t0 + 600 + rng.exponential(20_000, n).astype(np.uint64)
    c = d + 5_000 + rng.exponential(100_000, n).astype(np.uint64)
    times = {"Q": t0, "G": t0 + 150, "I": t0 + 300, "D": d, "C": c}
    out: dict[int, list[np.ndarray]] = {}
    for act, t in times.items():
        rec = np.zeros(n, HEADER)
        rec["magic"] = MAGIC
        rec["time"] = t
        rec["sector"] = 1_000_000 + k * 8
        rec["bytes"] = 4096
        rec["action"] = ACTIONS[act] | rw
        rec["pid"] = 0 if act == "C" else pid
        rec["device"] = DEVICE
        rec["cpu"] = (cpu + 1) % cpus if act == "C" else cpu
        for c_ in range(cpus):
            out.setdefault(c_, []).append(rec[rec["cpu"] == c_])
    return {c_: np.concatenate(parts) for c_, parts in out.items()}


def notify_records(cpu: int) -> bytes:
    out = bytearray()
    for pid, comm in zip(PIDS, COMMS):
        rec = np.zeros(1, HEADER)
        rec["magic"], rec["action"], rec["pid"], rec["device"], rec["cpu"], rec["pdu_len"] = (
            MAGIC,
            PROCESS,
            pid,
            DEVICE,
            cpu,
            16,
        )
        out += rec.tobytes() + comm.ljust(16, b"\0")
    return bytes(out)


def generate(directory: Path, requests: int, cpus: int = 4, name: str = "bench") -> list[Path]:
    """Writes the set; returns its files. Records are sorted by time within each file; a block's records may
    reach past the next block's first times (a long service time), so blocks overlap by a margin kept aside."""
    rng = np.random.default_rng(7)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{name}.blktrace.{c}" for c in range(cpus)]
    files = [open(p, "wb") for p in paths]
    seq = [1] * cpus
    held: dict[int, np.ndarray] = {c: np.zeros(0, HEADER) for c in range(cpus)}
    try:
        for c, f in enumerate(files):
            f.write(notify_records(c))
        for first in range(0, requests, BLOCK):
            n = min(BLOCK, requests - first)
            block = events(first, n, cpus, rng)
            last = first + n == requests
            cut = np.uint64((first + n) * 2000)  # later blocks start after this: what is earlier is final
            for c in range(cpus):
                recs = np.concatenate([held[c], block.get(c, np.zeros(0, HEADER))])
                recs = recs[np.argsort(recs["time"], kind="stable")]
                final = recs if last else recs[recs["time"] < cut]
                held[c] = recs[len(final) :]
                final["sequence"] = np.arange(seq[c], seq[c] + len(final), dtype=np.uint32)
                seq[c] += len(final)
                files[c].write(final.tobytes())
    finally:
        for f in files:
            f.close()
    return paths


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--cpus", type=int, default=4)
    ap.add_argument("--name", default="bench")
    a = ap.parse_args()
    generate(a.dir, a.requests, a.cpus, a.name)
