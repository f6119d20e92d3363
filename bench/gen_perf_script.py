"""Writes `perf script` text of a scheduler and block capture with call chains, for benchmarks (seeded: same arguments,
same bytes).

    python bench/gen_perf_script.py OUT [--lines 10000000] [--seed 1]

What `perf record -e sched:sched_switch -e sched:sched_waking -e sched:sched_wakeup -e block:block_rq_insert -e
block:block_rq_issue -e block:block_rq_complete -e block:block_bio_queue -g -a` then `perf script` (default fields)
prints, in the proportions of the lab's largest recording (samples/real/writeback-reads-buffered/perf.script.txt.gz:
2.24 M lines, 36,804 events): sched_switch 36 % of the events, sched_waking and sched_wakeup 21 % each, the four block
events 5 % each; every event followed by its call chain, kernel frames first (`ffffffff8b2528c8 __schedule+0x4f8
([kernel.kallsyms])`), then user frames (`85f16 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)`, `2020202020202020
[unknown] ([unknown])`: perf's unwinding of a frame-pointer-less stack), and a blank line. Chains of the recording: 59
frames on average (median 23, at most 127: perf's limit), 43 of them user frames; here 8-20 kernel frames and, for 60 %
of the events, 1-107 user frames (an average of ~59 lines per event, ~47 bytes per line).
"""

from __future__ import annotations

import argparse
import random

COMMS = [
    ("postgres", 2210),
    ("kworker/u16:2", 311),
    ("java", 18233),
    ("xfsaild/sda1", 804),
    ("fio", 4711),
    ("jbd2/dm-0-8", 617),
    ("rs:main Q:Reg", 901),
    ("swapper/1", 0),
]
KERNEL = {
    "sched_switch": ["__traceiter_sched_switch", "__schedule", "schedule"],
    "sched_waking": ["__traceiter_sched_waking", "try_to_wake_up"],
    "sched_wakeup": ["__traceiter_sched_wakeup", "ttwu_do_wakeup", "try_to_wake_up"],
    "block_rq_insert": ["__traceiter_block_rq_insert", "dd_insert_requests", "blk_mq_flush_plug_list"],
    "block_rq_issue": ["__traceiter_block_rq_issue", "blk_mq_start_request", "virtio_queue_rq"],
    "block_rq_complete": ["__traceiter_block_rq_complete", "blk_update_request", "blk_mq_end_request"],
    "block_bio_queue": ["__traceiter_block_bio_queue", "submit_bio_noacct_nocheck", "submit_bio"],
}
KERNEL_BELOW = [
    "io_schedule",
    "folio_wait_bit_common",
    "filemap_get_pages",
    "filemap_read",
    "xfs_file_buffered_read",
    "xfs_file_read_iter",
    "vfs_read",
    "ksys_read",
    "futex_wait_queue",
    "futex_wait",
    "do_futex",
    "__x64_sys_futex",
    "rcu_gp_kthread",
    "kthread",
    "ret_from_fork",
    "ext4_buffered_write_iter",
    "generic_perform_write",
    "vfs_write",
    "ksys_write",
    "do_syscall_64",
    "entry_SYSCALL_64_after_hwframe",
]
USER = [
    ("[unknown]", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
    ("write", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
    ("pread64", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
    ("PostgresMain", "/usr/lib/postgresql/15/bin/postgres"),
    ("[unknown]", "/usr/bin/perf"),
    ("[unknown]", "[unknown]"),
]
EVENTS = (
    ["sched_switch"] * 36
    + ["sched_waking"] * 21
    + ["sched_wakeup"] * 21
    + ["block_rq_insert"] * 5
    + ["block_rq_issue"] * 5
    + ["block_rq_complete"] * 5
    + ["block_bio_queue"] * 5
)
STATES = ["S", "D", "R", "R+", "I"]


def event_text(name: str, rng: random.Random, sector: int) -> str:
    other, opid = rng.choice(COMMS)
    if name == "sched_switch":
        return (
            f"prev_comm={rng.choice(COMMS)[0]} prev_pid={rng.randrange(1, 40000)} prev_prio=120 "
            f"prev_state={rng.choice(STATES)} ==> next_comm={other} next_pid={opid} next_prio=120"
        )
    if name in ("sched_waking", "sched_wakeup"):
        return f"comm={other} pid={opid} prio=120 target_cpu={rng.randrange(8):03d}"
    if name == "block_rq_complete":
        return f"254,0 WS () {sector} + 8 [0]"
    if name == "block_bio_queue":
        return f"254,0 WS {sector} + 8 [{other}]"
    return f"254,0 WS 4096 () {sector} + 8 [{other}]"


def generate(out: str, lines: int, seed: int = 1) -> int:
    """Writes at least `lines` lines (whole events); returns how many."""
    rng = random.Random(seed)
    t_us, written, sector = 80_000_000, 0, 319_470_344
    buf: list[str] = []
    with open(out, "w") as f:
        while written < lines:
            name = rng.choice(EVENTS)
            comm, pid = rng.choice(COMMS)
            t_us += rng.randrange(1, 400)
            if name == "block_rq_insert":
                sector += 8 * rng.randrange(1, 64)
            buf.append(
                f"{comm:>16} {pid:>6} [{rng.randrange(8):03d}] {t_us // 1_000_000:6d}.{t_us % 1_000_000:06d}: "
                f"{'sched' if name.startswith('sched') else 'block'}:{name}: {event_text(name, rng, sector)}\n"
            )
            frames = KERNEL[name] + rng.sample(KERNEL_BELOW, rng.randrange(5, 18))
            for sym in frames:
                addr = 0xFFFFFFFF80000000 + rng.randrange(1 << 30)
                buf.append(f"\t{addr:016x} {sym}+0x{rng.randrange(16, 4096):x} ([kernel.kallsyms])\n")
            n = len(frames) + 2
            if rng.random() < 0.6:
                for _ in range(rng.randrange(1, 108)):
                    sym, dso = rng.choice(USER)
                    if dso == "[unknown]":
                        buf.append("\t2020202020202020 [unknown] ([unknown])\n")
                    else:
                        off = f"+0x{rng.randrange(16, 512):x}" if sym != "[unknown]" else ""
                        buf.append(f"\t{rng.randrange(1 << 20, 1 << 44):16x} {sym}{off} ({dso})\n")
                    n += 1
            buf.append("\n")
            written += n
            if len(buf) > 50_000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
    return written


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(f"{generate(a.out, a.lines, a.seed):,} lines written to {a.out}")
