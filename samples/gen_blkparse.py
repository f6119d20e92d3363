"""Writes a synthetic, reproducible blkparse text trace of a CFQ dispatch-starvation incident.

What it simulates (after the seed report in shared/seed-excerpts/README.md): a database (`postgres`,
O_DIRECT sync reads and writes) keeps CFQ's sync queue busy; `kworker` flushes and `xfsaild/sda1`
metadata writes sit in async queues. At --stall-at seconds one xfsaild metadata write (WM, remapped
from the partition 8,1) is inserted and dispatched only --stall-s seconds later, while the scheduler
logs its queue losing the slice to the sync queue by preemption (`m N cfq... / preempt`).
Also present: back merges (M), plugs/unplugs (P/U), one requeue (R), one failed completion ([5]).

    python -m samples.gen_blkparse --requests 5000 --out samples/demo-cfq-starvation.blkparse.txt
    python -m samples.gen_blkparse --requests 1000000 --out big.txt      # ~6 M lines, for make bench
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

PROCS = [  # comm, pid, rwbs choices, share, I->D median (ns), async?
    ("postgres", 2210, ("RS", "WS"), 0.55, 60_000, False),
    ("kworker/u16:2", 311, ("W",), 0.25, 2_000_000, True),
    ("dd", 4711, ("R", "RA"), 0.15, 150_000, False),
    ("xfsaild/sda1", 804, ("WM",), 0.05, 1_500_000, True),
]
PART_START = 2048  # sda1 starts at sector 2048: the remap 8,1 -> 8,0 adds it


def generate(n: int, seed: int = 7, stall_at: float = 12.0, stall_s: float = 15.626265317):
    rng = np.random.default_rng(seed)
    span_ns = max(int(stall_at * 1e9 + stall_s * 1e9 + 5e9), n * 30_000)
    q = np.sort(rng.integers(0, span_ns, n))
    shares = np.array([p[3] for p in PROCS])
    proc = rng.choice(len(PROCS), n, p=shares / shares.sum())
    i2d_med = np.array([p[4] for p in PROCS])[proc]
    q2g = rng.integers(200, 1_000, n)
    g2i = rng.integers(500, 25_000, n)
    i2d = (rng.lognormal(0, 0.8, n) * i2d_med).astype(np.int64)
    d2c = (rng.lognormal(0, 0.6, n) * 900_000).astype(np.int64) + 50_000
    sector = rng.integers(1, 1 << 30, n) // 8 * 8
    nsect = rng.choice([8, 16, 64, 256], n, p=[0.6, 0.2, 0.15, 0.05])
    merged = np.array([PROCS[p][5] for p in proc]) & (rng.random(n) < 0.15)
    cpu = rng.integers(0, 2, n)
    stall = int(np.searchsorted(q, int(stall_at * 1e9)))
    proc[stall] = 3
    i2d[stall] = int(stall_s * 1e9)
    merged[stall] = False
    requeue = (stall + n // 3) % n
    failed = (stall + n // 2) % n

    ev = []  # (t, cpu, pid, action, rwbs, tail)
    for k in range(n):
        comm, pid, rws, _, _, _ = PROCS[proc[k]]
        rw = rws[k % len(rws)]
        t, c, s, ln = int(q[k]), int(cpu[k]), int(sector[k]), int(nsect[k])
        g, i = t + int(q2g[k]), t + int(q2g[k]) + int(g2i[k])
        d = i + int(i2d[k])
        done = d + int(d2c[k])
        full = ln * 2 if merged[k] else ln
        if proc[k] == 3:
            ev.append((t - 76, c, pid, "A", rw, f"{s} + {ln} <- (8,1) {s - PART_START}"))
        ev.append((t, c, pid, "Q", rw, f"{s} + {ln} [{comm}]"))
        ev.append((g, c, pid, "G", rw, f"{s} + {ln} [{comm}]"))
        if merged[k]:
            ev.append((g + 100, c, pid, "P", "N", f"[{comm}]"))
            ev.append((g + 300, c, pid, "Q", rw, f"{s + ln} + {ln} [{comm}]"))
            ev.append((g + 400, c, pid, "M", rw, f"{s + ln} + {ln} [{comm}]"))
            ev.append((g + 500, c, pid, "U", "N", f"[{comm}] 1"))
        ev.append((i, c, pid, "I", rw, f"{s} + {ln} [{comm}]"))
        dc = 1 - c if k % 3 == 0 else c
        if k == requeue:
            ev.append((d, dc, pid, "D", rw, f"{s} + {full} [{comm}]"))
            ev.append((d + 5_000, dc, 0, "R", rw, f"{s} + {full} [0]"))
            d += 40_000
            done += 40_000
        ev.append((d, dc, pid if not PROCS[proc[k]][5] else 0, "D", rw, f"{s} + {full} [{comm}]"))
        err = 5 if k == failed else 0
        ev.append((done, dc, 0, "C", rw, f"{s} + {full} [{err}]"))

    # the scheduler's log while the metadata write waits: its async queue keeps losing the slice
    t_stall = int(q[stall])
    for j, t in enumerate(range(t_stall + 25_000_000, t_stall + int(stall_s * 1e9), 250_000_000)):
        for dt, msg in ((0, "cfq2210SN / insert_request"), (440, "cfq2210SN / add_to_rr"),
                        (1065, "cfq2210SN / preempt"), (1419, "cfq804A / slice expired t=1"),
                        (1776, f"cfq804A / resid={40 - j % 40}"),
                        (2879, "cfq804A / sl_used=1 disp=0 charge=0 iops=1 sect=0")):
            ev.append((t + dt, 1, 0, "m", "N", msg))

    ev.sort(key=lambda e: e[0])
    t0 = ev[0][0]
    seq = [0, 0]
    out = []
    for t, c, pid, act, rw, tail in ev:
        if act == "m":
            sq = 0
        else:
            seq[c] += 1
            sq = seq[c]
        t -= t0
        out.append("%3d,%-3d %2d %8d %5d.%09d %5d %2s %3s %s\n" % (8, 0, c, sq, t // 1_000_000_000,
                                                                   t % 1_000_000_000, pid, act, rw, tail))
        if len(out) >= 65536:
            yield "".join(out)
            out = []
    yield "".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="-")
    args = ap.parse_args(argv)
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    for block in generate(args.requests, args.seed):
        out.write(block)
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
