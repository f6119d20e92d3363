"""Writes a large synthetic `trace-cmd report` of a function_graph capture recorded with `-T`, for benchmarks.

    python bench/gen_funcgraph.py OUT [--lines 5000000] [--seed 1]
    python bench/gen_funcgraph.py OUT --parse      # parse OUT with parsers.funcgraph, print lines/s

What `trace-cmd record -p function_graph -e sched_switch -e sched_waking -e irq -e block -T` then `trace-cmd report`
prints, in trace-cmd's own forms (FORMATS.md 3.3): `cpus=8`, then per line `comm-pid [cpu] s.us: event: text`.
Tasks (comms with '/', ':', '-' and spaces) run on 8 CPUs and migrate; each runs syscall call trees (entries,
leaves with durations, exits with the marks + ! # * @ $), and what a real capture holds besides:

* **Sleeps**: a task leaves its CPU inside `schedule() { __schedule() {` (sched_switch in the plugin form, after a
  sched_waking of the next task by the current one), and on its return prints `finish_task_switch();` and the exits
  of those calls, whose durations hold the time it slept (the waits the analysis derives).
* **Interrupts**: a hard interrupt lands anywhere in a call tree, nested at the current depth as the kernel's entry
  code is traced: the local timer (`asm_sysvec_apic_timer_interrupt` → `__sysvec_apic_timer_interrupt` →
  `hrtimer_interrupt` → `tick_sched_timer`) or a device's (`asm_common_interrupt` → `handle_edge_irq` →
  `handle_irq_event` with `irq_handler_entry` / `irq_handler_exit` events around the driver's handler), and on the
  way out `irq_exit_rcu` → `__do_softirq` with `softirq_entry` / `softirq_exit`. Proportions: the langraph capture
  (shared/samples-public/trace-cmd-report/derived-langraph-report-sched-softirq-kstack.txt, 4 CPUs, a busy desktop
  and sshd) has 267 `irq_handler_entry` and 5,595 `softirq_entry` for 2,255 `sched_switch`, i.e. 0.12 device
  interrupts and 2.5 softirqs per switch; the timer interrupt is not an event there (it is a sysvec), so it is drawn
  from the HZ=250 tick: one per 4 ms of a busy CPU, ~1.5 per switch at this generator's ~2.7 ms slices. Here: a
  timer interrupt with probability 1.5 and a device one 0.12 per slice, a softirq after 2 of 3 timer ticks and
  after every device interrupt (≈ 1.1 per switch: this capture has no network load, where langraph's softirqs are
  mostly NET_RX and RCU). The tracefs `trace` file marks an interrupt with `==========>` / `<==========` lines
  (funcgraph-irqs); trace-cmd's function_graph plugin has no such lines (its only options are tailprint and depth),
  so a report shows the interrupt as the entry code's calls, as written here. The markers themselves are parsed (and
  ignored) as the tracefs samples' other lines are; `tests/test_funcgraph.py` checks them.
* **Nested page faults**: a fault taken by the kernel while it copies to or from user memory nests
  `asm_exc_page_fault` → `exc_page_fault` → `do_user_addr_fault` → `handle_mm_fault` → `__handle_mm_fault` under
  `_copy_to_user` / `copy_page_to_iter` (and faults in user mode at depth 0). In langraph's `-T` stacks, 6,095 of
  20,700 go through `asm_exc_page_fault` (29 %): one in three syscall trees here takes a fault, 1 in 4 of them a
  major one that sleeps in `folio_wait_bit_common` (the page-cache read the analysis shows as a page wait).
* **`-T` stacks**: trace-cmd's `-T` sets the `stacktrace` option, which records a kernel stack after every trace
  *event* and never after function_graph's own entries and exits (they are committed without one). langraph: 20,700
  `kernel_stack: <stack trace >` for 20,700 other events (every one), 293,932 `=> frame (addr)` lines, 14.2 frames per
  stack. Here each sched_switch / sched_waking / irq / softirq / block / print event is followed by its stack: the
  task's open calls innermost first, the event's own frames on top (`__schedule`, `try_to_wake_up`...) and the
  syscall entry at the bottom, so the stack agrees with the call tree it was taken in.
* **Lost events**: when trace-cmd's reader falls behind, a CPU's ring buffer overwrites pages and the report says
  `CPU:N [K EVENTS DROPPED]` before that CPU's next event (the tracefs file says `CPU:N [LOST K EVENTS]`). The
  packt sample's header (ftrace-funcgraph/packt-lkd-pingreport-condensed-latency-overrun.txt) shows 455,643 of
  572,368 entries kept (20 % lost) on a 6-CPU function_graph capture. Losses come in bursts, a page or more at a
  time; here one drop per ~300,000 lines (a few per GiB) of 200–20,000 events. What the gap held is gone: the
  current task's innermost 1–3 open calls lose their exits (their later lines are at the depth the kernel really
  was), which the parser keeps as partial calls, never invented ones.
* Print markers (`tracing_mark_write`) and `block_rq_issue` events, each at 1 in 200 steps of a task.

Every call that is not cut by a drop is closed by its task; `generate` returns the lines written and the calls left
without an exit (open at the end or cut by a drop).
"""

from __future__ import annotations

import argparse
import random
import zlib

FUNCS = [
    "vfs_read",
    "vfs_write",
    "xfs_file_read_iter",
    "xfs_ilock",
    "down_write",
    "down_read",
    "mutex_lock",
    "_raw_spin_lock",
    "kmem_cache_alloc",
    "submit_bio",
    "blk_mq_submit_bio",
    "xfs_iomap_write_unwritten",
    "filemap_read",
    "ext4_bread",
    "rcu_read_lock_held",
    "e1000_clean [e1000]",
    "_copy_to_user",
    "copy_page_to_iter",
    "generic_perform_write",
    "xfs_trans_alloc",
]
SYSCALLS = [
    "__x64_sys_read",
    "__x64_sys_write",
    "__x64_sys_pread64",
    "__x64_sys_futex",
    "__x64_sys_fsync",
    "__x64_sys_openat",
    "__x64_sys_epoll_wait",
    "__x64_sys_io_submit",
]
LEAVES = [
    "_cond_resched",
    "find_vma",
    "ktime_get",
    "idle_cpu",
    "update_curr",
    "__msecs_to_jiffies",
    "xfs_bmbt_get_all",
    "_raw_spin_unlock_irqrestore",
]
COMMS = ["kworker/u8:1", "file_writer", "flush-8:0", "V8 WorkerThread", "rs:main Q:Reg", "xfslogd/7", "postgres"]
DEVICE_IRQS = [
    (35, "nvme0q2", "nvme_irq"),
    (36, "nvme0q3", "nvme_irq"),
    (24, "ahci[0000:00:1f.2]", "ahci_single_level_irq_intr"),
    (41, "eth0-TxRx-1", "e1000_intr [e1000]"),
]
SOFTIRQS = [
    (1, "TIMER", "run_timer_softirq"),
    (7, "SCHED", "run_rebalance_domains"),
    (9, "RCU", "rcu_core_si"),
    (4, "BLOCK", "blk_done_softirq"),
]
TIMER_IRQ = [
    "asm_sysvec_apic_timer_interrupt",
    "sysvec_apic_timer_interrupt",
    "__sysvec_apic_timer_interrupt",
    "hrtimer_interrupt",
    "__hrtimer_run_queues",
    "tick_sched_timer",
]
DEVICE_IRQ = ["asm_common_interrupt", "common_interrupt", "__common_interrupt", "handle_edge_irq", "handle_irq_event"]
FAULT = ["asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault", "__handle_mm_fault"]
SYSCALL_BOTTOM = ["do_syscall_64", "entry_SYSCALL_64_after_hwframe"]


def mark(us: float) -> str:
    for lim, m in ((1e6, "$"), (1e5, "@"), (1e4, "*"), (1e3, "#"), (100, "!"), (10, "+")):
        if us > lim:
            return m + " "
    return "  "


def addr(name: str) -> str:
    return f"ffffffff{(0xA8800000 + (zlib.crc32(name.encode()) & 0xFFFFFF) * 16) & 0xFFFFFFFF:08x}"


class Writer:
    """The report's lines of one capture: a task's calls (its stack of open calls), events with their `-T` stack."""

    def __init__(self, rnd: random.Random):
        self.rnd = rnd
        self.buf: list[str] = []
        self.n = 0
        self.ts = 100_000_000_000  # ns

    def tick(self, lo: int = 100, hi: int = 3000) -> str:
        self.ts += self.rnd.randint(lo, hi)
        return f"{self.ts // 1_000_000_000}.{self.ts % 1_000_000_000 // 1000:06d}"

    @staticmethod
    def head(t: dict) -> str:
        return f"{t['comm']:>16}-{t['pid']:<5} [{t['cpu']:03d}] "

    def enter(self, t: dict, f: str) -> None:
        st = t["stack"]
        stamp = self.tick()
        st.append((f, self.ts))
        self.buf.append(
            f"{self.head(t)}{stamp}: funcgraph_entry:                   |  {'  ' * (len(st) - 1)}{f}() {{\n"
        )
        self.n += 1

    def leave(self, t: dict) -> None:
        st = t["stack"]
        f, t0 = st.pop()
        stamp = self.tick()
        us = (self.ts - t0) / 1000
        self.buf.append(f"{self.head(t)}{stamp}: funcgraph_exit:       {mark(us)}{us:8.3f} us |  {'  ' * len(st)}}}\n")
        self.n += 1

    def leaf(self, t: dict, f: str, us: float | None = None) -> None:
        us = self.rnd.randint(50, 5000) / 1000 if us is None else us
        self.buf.append(
            f"{self.head(t)}{self.tick()}: funcgraph_entry:      {mark(us)}{us:8.3f} us |  "
            f"{'  ' * len(t['stack'])}{f}();\n"
        )
        self.ts += int(us * 1000)
        self.n += 1

    def event(self, t: dict, name: str, text: str, top: list[str]) -> None:
        """An event and the kernel stack `-T` records after it: `top` (innermost first), the open calls, the
        syscall entry when the task is in one."""
        h = self.head(t)
        stamp = self.tick(50, 400)
        frames = top + [f for f, _ in reversed(t["stack"])]
        if t["stack"] and t["stack"][0][0].startswith("__x64_sys"):
            frames += SYSCALL_BOTTOM
        self.buf.append(f"{h}{stamp}: {name + ':':<21} {text}\n{h}{stamp}: kernel_stack:         <stack trace >\n")
        self.buf.extend(f"=> {f.split(' ')[0]} ({addr(f)})\n" for f in frames)
        self.n += 2 + len(frames)

    def nest(self, t: dict, chain: list[str], inner) -> None:
        for f in chain:
            self.enter(t, f)
        inner()
        for _ in chain:
            self.leave(t)

    def timer_irq(self, t: dict) -> None:
        def inner():
            self.leaf(t, "tick_sched_handle")
            self.leaf(t, "update_process_times", self.rnd.randint(800, 4000) / 1000)

        self.nest(t, TIMER_IRQ, inner)

    def device_irq(self, t: dict) -> None:
        irq, name, handler = self.rnd.choice(DEVICE_IRQS)

        def inner():
            self.event(t, "irq_handler_entry", f"irq={irq} name={name}", ["__handle_irq_event_percpu"])
            self.leaf(t, handler, self.rnd.randint(1000, 12000) / 1000)
            self.event(t, "irq_handler_exit", f"irq={irq} ret=handled", ["__handle_irq_event_percpu"])

        self.nest(t, DEVICE_IRQ, inner)

    def softirq(self, t: dict) -> None:
        vec, action, fn = self.rnd.choice(SOFTIRQS)

        def inner():
            self.event(t, "softirq_entry", f"vec={vec} [action={action}]", ["__do_softirq"])
            self.leaf(t, fn, self.rnd.randint(500, 30000) / 1000)
            self.event(t, "softirq_exit", f"vec={vec} [action={action}]", ["__do_softirq"])

        self.nest(t, ["irq_exit_rcu", "__do_softirq"], inner)

    def interrupt(self, t: dict, timer: bool) -> None:
        if timer:
            self.timer_irq(t)
            if self.rnd.random() < 2 / 3:
                self.softirq(t)
        else:
            self.device_irq(t)
            self.softirq(t)

    def page_fault(self, t: dict) -> None:
        def inner():
            if self.rnd.random() < 0.25:  # major: reads the page in and waits for it
                self.enter(t, "filemap_fault")
                self.leaf(t, "page_cache_ra_unbounded", self.rnd.randint(5000, 40000) / 1000)
                self.leaf(t, "folio_wait_bit_common", self.rnd.randint(80_000, 3_000_000) / 1000)
                self.leave(t)
            else:
                self.leaf(
                    t,
                    self.rnd.choice(["do_anonymous_page", "filemap_map_pages", "do_wp_page"]),
                    self.rnd.randint(300, 6000) / 1000,
                )

        self.nest(t, FAULT, inner)


def generate(out, lines: int, seed: int = 1) -> tuple[int, int]:
    """Writes about `lines` lines to the text stream `out`; returns (lines written, calls left without an exit)."""
    rnd = random.Random(seed)
    w = Writer(rnd)
    tasks = [{"comm": c, "pid": 1000 + i * 37 + i, "stack": [], "cpu": i % 8} for i, c in enumerate(COMMS * 3)]
    cut = 0
    next_drop = rnd.randint(100_000, 500_000)
    cur = 0
    while w.n < lines:
        t = tasks[cur]
        if t["stack"] and t["stack"][-1][0] == "__schedule":  # back from a sleep
            w.leaf(t, "finish_task_switch")
            w.leave(t)
            w.leave(t)
        steps = rnd.randint(20, 200)
        kinds = [True] * sum(rnd.random() < 0.5 for _ in range(3)) + [False] * (rnd.random() < 0.12)
        irq_at = sorted((rnd.randrange(steps), timer) for timer in kinds)  # ~1.5 ticks, 0.12 device irqs a slice
        for i in range(steps):
            while irq_at and irq_at[0][0] == i:
                w.interrupt(t, irq_at.pop(0)[1])
            st = t["stack"]
            r = rnd.random()
            if not st and r < 0.35:
                w.enter(t, rnd.choice(SYSCALLS))
                if rnd.random() < 0.06:  # a fault in user mode, before the next syscall
                    w.leave(t)
                    w.page_fault(t)
            elif r < 0.35 and len(st) < 10:
                w.enter(t, rnd.choice(FUNCS))
                if st[-1][0] in ("_copy_to_user", "copy_page_to_iter") and rnd.random() < 0.6:
                    w.page_fault(t)
            elif r < 0.65 and st:
                w.leave(t)
            elif r < 0.99:
                w.leaf(t, rnd.choice(LEAVES))
            elif r < 0.995:
                w.event(t, "print", f"tracing_mark_write: op {w.n} start", ["tracing_mark_write", "vfs_write"])
            else:
                sector = rnd.randint(0, 1 << 30)
                w.event(
                    t,
                    "block_rq_issue",
                    f"8,0 WS 4096 () {sector} + 8 [{t['comm']}]",
                    ["blk_mq_start_request", "nvme_queue_rq", "blk_mq_dispatch_rq_list"],
                )
            if w.n >= next_drop:
                next_drop = w.n + rnd.randint(100_000, 500_000)
                lost = min(len(st), rnd.randint(1, 3))
                del st[len(st) - lost :]
                cut += lost
                w.buf.append(f"CPU:{t['cpu']} [{rnd.randint(200, 20000)} EVENTS DROPPED]\n")
                w.n += 1
        # switch to another task, woken by this one; this one sleeps inside schedule() (or is preempted)
        nxt = rnd.randrange(len(tasks))
        if nxt == cur:
            nxt = (cur + 1) % len(tasks)
        u = tasks[nxt]
        w.event(
            t,
            "sched_waking",
            f"comm={u['comm']} pid={u['pid']} prio=120 target_cpu={t['cpu']:03d}",
            ["try_to_wake_up", "wake_up_q", "futex_wake"],
        )
        w.enter(t, "schedule")
        w.enter(t, "__schedule")
        w.event(
            t, "sched_switch", f"{t['comm']}:{t['pid']} [120] {rnd.choice('SDR')} ==> {u['comm']}:{u['pid']} [120]", []
        )
        u["cpu"] = t["cpu"] if rnd.random() < 0.5 else u["cpu"]
        t["cpu"] = rnd.randrange(8)
        cur = nxt
        if len(w.buf) > 100_000:
            out.write("".join(w.buf))
            w.buf.clear()
    out.write("".join(w.buf))
    return w.n, cut + sum(len(t["stack"]) for t in tasks)


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
        print(
            f"{rep.lines} lines, {rep.bytes_read / 1e6:.0f} MB in {dt:.2f} s: {rep.lines / dt:,.0f} lines/s, "
            f"{rep.bytes_read / dt / 1e6:.0f} MB/s; rows {rows}; skipped {rep.skipped}"
        )
        return
    with open(a.out, "w") as f:
        f.write("cpus=8\n")
        n, open_calls = generate(f, a.lines, a.seed)
    print(f"{a.out}: {n + 1} lines, {open_calls} calls left without an exit")


if __name__ == "__main__":
    main()
