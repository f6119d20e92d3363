"""Writes blkparse text as real disks produce it, for `make bench` (seeded: same arguments, same bytes).

    python bench/gen_blkparse.py OUT --requests N [--seed S]

Three devices, each request on one of them, with what the public samples (shared/samples-public/blkparse-text/)
show of each kind of disk:

* sda (8,0), a partitioned SATA disk under BFQ (40 % of requests): every request starts with its partition remap
  `A … <- (8,1) …` (every sample taken on a partition: takeoverjp, liuzel01, oxdeadmeat), then Q G I D C; the
  scheduler's `m N bfq…` messages on 40 % of them (the samples, taken under none/mq-deadline, have none; a BFQ trace
  logs insert/dispatch/completion messages per request, so this is a low estimate); plugs: a P before a run of ~8
  requests and its `U N [comm] n` after (liuzel01: P and U 1.3 % of lines each);
* sdb (8,16), LVM over a partition (30 %): two remaps per request, `A … <- (253,0) …` onto 8,17 then `A … <- (8,17)
  …` onto 8,16 (liuzel01's LVM: A = 28 % of its lines, two per request; oxdeadmeat's dm-crypt on NVMe: 35 %);
* nvme0n1 (259,0), multi-queue on 8 CPUs, no scheduler (30 %): `A … <- (259,3) …`, Q G P U D C with no I, the plug
  and unplug around each request and D and C on the CPU that queued it (takeoverjp's NVMe: 7 lines per request,
  each 14.3 %).

Over all of them: back merges (a second bio Q + M: 5 % of requests; samples 0.5–7.8 % M lines), front merges
(F: 0.2 %; zzunny97 has a few), splits (`X … / …` then both halves G I D C: 1 %; zzunny97: X 0.9 % of lines),
requeues (D R D: 0.05 %; zzunny97: 1 R in 28 868 lines) and failed completions ([-5]: 0.01 %).
"""

from __future__ import annotations

import argparse
import heapq
import sys

import numpy as np

BATCH = 50_000
COMMS = [
    ("postgres", 2210),
    ("kworker/u16:2", 311),
    ("java", 18233),
    ("xfsaild/sda1", 804),
    ("fio", 4711),
    ("jbd2/dm-0-8", 617),
    ("(null)", 21279),
]
RWBS = ["R", "W", "WS", "RA", "RM", "WM", "WFS", "RS"]


def requests(n: int, seed: int):
    """Yields batches of events (t, dev, cpu, pid, action, rwbs, tail), requests in Q order."""
    rng = np.random.default_rng(seed)
    t = 1_000_000_000  # the first request 1 s in: its remaps come before it
    for start in range(0, n, BATCH):
        m = min(BATCH, n - start)
        gaps = rng.exponential(25_000, m).astype(np.int64) + 200
        q = t + np.cumsum(gaps)
        t = int(q[-1])
        disk = rng.choice(3, m, p=[0.4, 0.3, 0.3])
        cpu = rng.integers(0, 8, m)
        who = rng.integers(0, len(COMMS), m)
        rw = rng.integers(0, len(RWBS), m)
        sector = rng.integers(1 << 22, 1 << 31, m) // 8 * 8  # past every partition start
        nsect = rng.choice([8, 16, 64, 256, 1024], m, p=[0.55, 0.2, 0.15, 0.07, 0.03])
        i2d = (rng.lognormal(0, 1.0, m) * 80_000).astype(np.int64)
        d2c = (rng.lognormal(0, 0.7, m) * 400_000).astype(np.int64) + 20_000
        r = rng.random((m, 6))
        events = []
        for k in range(m):
            comm, pid = COMMS[who[k]]
            c, d, s, ln, rwbs = int(cpu[k]), int(disk[k]), int(sector[k]), int(nsect[k]), RWBS[rw[k]]
            tq = int(q[k])
            ev = events.append
            if d == 0:
                dev, dc = (8, 0), c if k % 3 else (c + 1) % 8
                ev((tq - 120, dev, c, pid, "A", rwbs, f"{s} + {ln} <- (8,1) {s - 2048}"))
            elif d == 1:
                dev, dc = (8, 16), c if k % 2 else (c + 1) % 8
                ev((tq - 260, dev, c, pid, "A", rwbs, f"{s - 1050624} + {ln} <- (253,0) {s - 3147776}"))
                ev((tq - 130, dev, c, pid, "A", rwbs, f"{s} + {ln} <- (8,17) {s - 1050624}"))
            else:
                dev, dc = (259, 0), c
                ev((tq - 110, dev, c, pid, "A", rwbs, f"{s} + {ln} <- (259,3) {s - 2549760}"))
            tail = f"{s} + {ln} [{comm}]"
            ev((tq, dev, c, pid, "Q", rwbs, tail))
            full, first = ln, (s, ln)  # the request's extent; its first bio's (G's)
            if r[k, 0] < 0.05:  # back merge of the next bio
                ev((tq + 900, dev, c, pid, "Q", rwbs, f"{s + ln} + {ln} [{comm}]"))
                ev((tq + 1000, dev, c, pid, "M", rwbs, f"{s + ln} + {ln} [{comm}]"))
                full = 2 * ln
            elif r[k, 0] < 0.052:  # front merge
                ev((tq + 900, dev, c, pid, "Q", rwbs, f"{s - 8} + 8 [{comm}]"))
                ev((tq + 1000, dev, c, pid, "F", rwbs, f"{s - 8} + 8 [{comm}]"))
                s, full = s - 8, ln + 8
            tg = tq + 300 + (k % 7) * 40
            halves = [(s, full)]
            gets = [first]
            if r[k, 1] < 0.01 and full == ln and ln >= 16:  # split (zzunny97: Q, X, then each half's G I D C)
                cut = s + ln // 2 // 8 * 8
                ev((tq + 200, dev, c, pid, "X", rwbs, f"{s} / {cut} [{comm}]"))
                halves = gets = [(s, cut - s), (cut, s + ln - cut)]
            td = tg + 2_000 + int(i2d[k])
            for h, (hs, hl) in enumerate(halves):
                g = tg + 400 * h
                ev((g, dev, c, pid, "G", rwbs, f"{gets[h][0]} + {gets[h][1]} [{comm}]"))
                if d == 2:
                    ev((g + 150, dev, c, pid, "P", "N", f"[{comm}]"))
                    ev((g + 300, dev, c, pid, "U", "N", f"[{comm}] 1"))
                    dc = c
                else:
                    if d == 0 and k % 8 == 0:
                        ev((g + 100, dev, c, pid, "P", "N", f"[{comm}]"))
                    ev((g + 1_000, dev, c, pid, "I", rwbs, f"{hs} + {hl} [{comm}]"))
                    if d == 0 and k % 8 == 7:
                        ev((g + 1_200, dev, c, pid, "U", "N", f"[{comm}] 8"))
                    if d == 0 and r[k, 2] < 0.4:
                        q_ = "S" if "S" in rwbs or rwbs.startswith("R") else "A"
                        ev((g + 1_100, dev, c, 0, "m", "N", f"bfq{pid}{q_} insert_request"))
                        if r[k, 2] < 0.15:
                            ev((td - 50, dev, dc, 0, "m", "N", f"bfq{pid}{q_} dispatched a request"))
                tdh = td + 700 * h
                if r[k, 3] < 0.0005:  # requeue
                    ev((tdh, dev, dc, pid, "D", rwbs, f"{hs} + {hl} [{comm}]"))
                    ev((tdh + 4_000, dev, dc, 0, "R", rwbs, f"{hs} + {hl} [0]"))
                    tdh += 30_000
                ev((tdh, dev, dc, pid if d == 2 else 0, "D", rwbs, f"{hs} + {hl} [{comm}]"))
                err = -5 if r[k, 4] < 0.0001 else 0
                ev((tdh + int(d2c[k]), dev, dc, 0, "C", rwbs, f"{hs} + {hl} [{err}]"))
        yield events, t


def generate(n: int, seed: int = 11):
    """Yields text blocks, events in time order (each batch's events merged with those still pending)."""
    pending: list = []
    seq: dict = {}
    for events, last_q in requests(n, seed):
        for e in events:
            heapq.heappush(pending, e)
        horizon = last_q - 200_000_000  # no request's event lands 0.2 s before its Q + its lifetime
        out = []
        while pending and (pending[0][0] < horizon):
            out.append(line(heapq.heappop(pending), seq))
        yield "".join(out)
    out = []
    while pending:
        out.append(line(heapq.heappop(pending), seq))
    yield "".join(out)


def line(e, seq: dict) -> str:
    t, dev, cpu, pid, act, rwbs, tail = e
    if act == "m":
        sq = 0
    else:
        key = (dev, cpu)
        sq = seq[key] = seq.get(key, 0) + 1
    return "%3d,%-3d %2d %8d %5d.%09d %5d %2s %3s %s\n" % (
        dev[0],
        dev[1],
        cpu,
        sq,
        t // 1_000_000_000,
        t % 1_000_000_000,
        pid,
        act,
        rwbs,
        tail,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args(argv)
    with open(a.out, "w") as out:
        for block in generate(a.requests, a.seed):
            out.write(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
