"""Writes a large synthetic `trace-cmd report` file with function_graph events, for parser benchmarks.

    python bench/gen_funcgraph.py OUT [--lines 5000000] [--seed 1]
    python bench/gen_funcgraph.py OUT --parse      # parse OUT with parsers.funcgraph, print lines/s

Several tasks (comms with '/', ':', '-' and spaces) run on 8 CPUs and migrate; each runs random call
trees (entries, leaves with durations, exits with marks + ! # * @ $) and is switched out in the middle of
calls (sched_switch in the plugin form, sched_wakeup/sched_waking), with occasional print markers and
block events. Every call opened is closed later by its task, so the rebuilt tree is consistent.
"""
from __future__ import annotations

import argparse
import random

FUNCS = ["vfs_read", "vfs_write", "xfs_file_read_iter", "xfs_ilock", "down_write", "down_read", "mutex_lock",
         "_raw_spin_lock", "kmem_cache_alloc", "schedule", "__schedule", "finish_task_switch", "submit_bio",
         "blk_mq_submit_bio", "xfs_iomap_write_unwritten", "filemap_fault", "handle_mm_fault", "ext4_bread",
         "rcu_read_lock_held", "e1000_clean [e1000]"]
LEAVES = ["_cond_resched", "find_vma", "ktime_get", "idle_cpu", "update_curr", "__msecs_to_jiffies",
          "xfs_bmbt_get_all", "_raw_spin_unlock_irqrestore"]
COMMS = ["kworker/u8:1", "file_writer", "flush-8:0", "V8 WorkerThread", "rs:main Q:Reg", "xfslogd/7", "postgres"]


def mark(us: float) -> str:
    for lim, m in ((1e6, "$"), (1e5, "@"), (1e4, "*"), (1e3, "#"), (100, "!"), (10, "+")):
        if us > lim:
            return m + " "
    return "  "


def generate(out, lines: int, seed: int = 1) -> tuple[int, int]:
    """Writes about `lines` event lines to the text stream `out`; returns (lines written, calls left open)."""
    rnd = random.Random(seed)
    tasks = [{"comm": c, "pid": 1000 + i * 37, "stack": [], "cpu": i % 8} for i, c in enumerate(COMMS * 3)]
    for i, t in enumerate(tasks):
        t["pid"] += i
    ts = 100_000_000_000  # ns
    n = 0
    buf: list[str] = []
    cur = 0
    while n < lines:
        t = tasks[cur]
        cpu = t["cpu"]
        head = f"{t['comm']:>16}-{t['pid']:<5} [{cpu:03d}] "
        for _ in range(rnd.randint(20, 200)):
            ts += rnd.randint(100, 3000)
            stamp = f"{ts // 1_000_000_000}.{ts % 1_000_000_000 // 1000:06d}"
            r = rnd.random()
            st = t["stack"]
            if r < 0.35 and len(st) < 30:
                f = rnd.choice(FUNCS)
                st.append((f, ts))
                buf.append(f"{head}{stamp}: funcgraph_entry:                   |  {'  ' * (len(st) - 1)}{f}() {{\n")
            elif r < 0.65 and st:
                f, t0 = st.pop()
                us = (ts - t0) / 1000
                buf.append(f"{head}{stamp}: funcgraph_exit:       {mark(us)}{us:8.3f} us |  {'  ' * len(st)}}}\n")
            elif r < 0.97:
                us = rnd.randint(50, 5000) / 1000
                buf.append(f"{head}{stamp}: funcgraph_entry:      {mark(us)}{us:8.3f} us |  {'  ' * len(st)}"
                           f"{rnd.choice(LEAVES)}();\n")
            elif r < 0.985:
                buf.append(f"{head}{stamp}: print:                tracing_mark_write: op {n} start\n")
            else:
                buf.append(f"{head}{stamp}: block_rq_issue:       8,0 WS 4096 () {rnd.randint(0, 1 << 30)} + 8 "
                           f"[{t['comm']}]\n")
            n += 1
        # switch to another task; it may migrate to this CPU
        nxt = rnd.randrange(len(tasks))
        if nxt == cur:
            nxt = (cur + 1) % len(tasks)
        u = tasks[nxt]
        ts += rnd.randint(100, 3000)
        stamp = f"{ts // 1_000_000_000}.{ts % 1_000_000_000 // 1000:06d}"
        buf.append(f"{head}{stamp}: sched_waking:         comm={u['comm']} pid={u['pid']} prio=120 target_cpu={cpu:03d}\n")
        buf.append(f"{head}{stamp}: sched_switch:         {t['comm']}:{t['pid']} [120] {rnd.choice('SDR')} ==> "
                   f"{u['comm']}:{u['pid']} [120]\n")
        n += 2
        u["cpu"] = cpu if rnd.random() < 0.5 else u["cpu"]
        t["cpu"] = rnd.randrange(8)
        cur = nxt
        if len(buf) > 100_000:
            out.write("".join(buf))
            buf.clear()
    out.write("".join(buf))
    return n, sum(len(t["stack"]) for t in tasks)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--parse", action="store_true", help="parse OUT (an existing file) and report the speed")
    a = ap.parse_args()
    if a.parse:
        import time

        from parsers import funcgraph
        from parsers.common import ParseReport

        rep = ParseReport(a.out)
        rows: dict[str, int] = {}
        t0 = time.perf_counter()
        with open(a.out, "rb") as f:
            for name, batch in funcgraph.parse(f, rep):
                rows[name] = rows.get(name, 0) + batch.num_rows
        dt = time.perf_counter() - t0
        print(f"{rep.lines} lines, {rep.bytes_read / 1e6:.0f} MB in {dt:.2f} s: {rep.lines / dt:,.0f} lines/s, "
              f"{rep.bytes_read / dt / 1e6:.0f} MB/s; rows {rows}; skipped {rep.skipped}")
        return
    with open(a.out, "w") as f:
        f.write("cpus=8\n")
        n, open_calls = generate(f, a.lines, a.seed)
    print(f"{a.out}: {n + 1} lines, {open_calls} calls open at the end")


if __name__ == "__main__":
    main()
