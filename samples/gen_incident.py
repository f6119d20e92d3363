"""Writes one synthetic incident captured three ways: a blktrace (blkparse text), a `trace-cmd report` of the
same seconds and an offcputime dump of the same run. Deterministic (seeded): the files are what `build()`
returns.

    python -m samples.gen_incident            # writes the three files below into samples/
    python -m samples.gen_incident --out DIR

The incident (after the seed reports in shared/seed-excerpts/README.md): on sda, a database (`postgres`, two
backends doing sync O_DIRECT 8 KiB reads and writes) keeps CFQ's sync queues busy. `flush-8:0` writes back
the dirty pages of an application's log file (preallocated: unwritten extents); each completed write queues
an unwritten-extent conversion on `xfsconvertd/0`. While the last write of the 9.04 s writeback pass is in
the disk, `xfsaild/sda1` locks the file's bmap btree buffer (`xfs_buf_lock`) and submits its metadata write
(WM 141698288 + 8, remapped from sda1, inserted at 9.062 s): CFQ starves the async queue for seconds (its `m`
messages show the queue losing its slice to the database's sync queues by preemption). The conversion of that
last writeback write takes the file's inode lock (`xfs_ilock`, exclusive) and sleeps in `xfs_buf_lock` → `down`
behind the starved write. `file_reader` faults on a page of the file and sleeps in `xfs_ilock` (`down_read`), then the
app, `file_writer`, calls write() (trace_marker `write start`) and sleeps in `xfs_ilock` (`down_write`).
When the database goes quiet for a moment (12.77 s), CFQ's idle timer lets `kblockd/0` dispatch the metadata
write (12.781 s); its completion interrupt queues the buffer's I/O completion on `xfslogd/0`, which runs
`xfs_buf_iodone_work` → `xfs_buf_unlock` → `up` and wakes `xfsconvertd/0`; the conversion commits and
`xfs_iunlock` wakes `file_reader` (the first waiter, a reader), whose `xfs_iunlock` wakes `file_writer`
(`write done`): its write stalled 2.304 s.

Files (in samples/):
* incident.blkparse.txt: blkparse default text of sda (8,0) for 24 s, times from the start of the trace (0.0):
  remaps (A) from sda1 for every bio, plugs/unplugs and back merges for the flusher, D from the submitter,
  from the completion interrupt (`[swapper]`) or from `kblockd/0`, C in interrupt context on CPU 0.
* incident.trace-cmd-report.txt: `trace-cmd report` of 4.3 s around the stall (8.94 s to 13.24 s of the
  blktrace): function_graph (funcgraph_entry/funcgraph_exit), sched_switch and sched_wakeup (the old kernel
  text form of the seed excerpt: `task prev:pid [prio] (S) ==> next:pid [prio]`, `task comm:pid [prio]
  success=1 [007]`), `print` markers (`00000000 write start`) and block_rq_insert/issue/complete (kernel text
  form without the ioprio triple, the same dev/sector/size as the blktrace) for every request in the window.
  It starts mid-flight like a real capture: calls entered before it show only their exits.
  Its clock is `mono` (CLOCK_MONOTONIC, the clock of blktrace's timestamps), named by the user's comment line
  `# trace clock: mono` above trace-cmd's `cpus=4`; times are seconds since boot with µs resolution:
      ftrace time = blktrace time + OFFSET_NS (5237.418062913 s)
  Block events are written a few hundred ns apart from blktrace's own record of the same tracepoint.
* incident.offcputime.txt: bcc offcputime (multi-line, user + kernel stacks) of the first 24 s of the blktrace:
  per task and stack the µs off CPU, each interval truncated to µs as bcc does, summed (so the app's
  `xfs_ilock` stack totals its stall, to within 1 µs of the trace's switch-out/switch-in).

Chain the analysis should find (waits of the trace): file_writer (3271) 2.304 s in `xfs_ilock via down_write`,
woken by file_reader (3274), which waited 2.352 s in `xfs_ilock via down_read`, woken by xfsconvertd/0 (421),
which waited 3.722 s in `xfs_buf_lock via down` and was woken by xfslogd/0 (419) in the I/O completion
`xfs_buf_iodone_work`; once the trace is aligned to the blktrace, that completion is the metadata write,
which spent 3.718 s between insert (I) and dispatch (D). Both ilock waiters' inferred holder is xfsconvertd/0
(its `xfs_ilock` returned at 9.064 s and its `xfs_iunlock` comes only after the buffer's completion); the
buffer's is xfsaild/sda1. (The rw-semaphore wakes its waiters in turn, so the app's link to the holder goes
through the first waiter: each is `woken_by` the one before; the inferred holder is the same task.)

What is simplified: names follow the seed report's kernel (2.6.3x: xfsconvertd/N, xfslogd/N, flush-8:0,
kblockd/0, `swapper`, rwsem_down_*_failed) while the trace clock `mono` only exists in later kernels;
function_graph is written for the story's code paths, the database's and the reader's I/O paths, the
completion interrupts and a little background (events/N, trace-cmd, xfsaild's idle pushes), not for every
kernel function; the disk serves one request at a time; CFQ is reduced to sync-first dispatch with an 8 ms
idle window before async requests, and its messages to the starvation episode; network and timer interrupts
appear only as the wake-ups they cause (the timer interrupt's calls are shown for file_writer's wake-ups only).
"""
from __future__ import annotations

import argparse
import bisect
import heapq
import random
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parent
BLK = "incident.blkparse.txt"
TRACE = "incident.trace-cmd-report.txt"
OFFCPU = "incident.offcputime.txt"
SEED = 5
OFFSET_NS = 5_237_418_062_913  # ftrace (mono clock) time = blktrace time + OFFSET_NS

US, MS, SEC = 1_000, 1_000_000, 1_000_000_000
PART_START = 2048  # sda1 starts at sector 2048 of sda: the remap 8,1 -> 8,0 adds it
WM_SECTOR = 141_698_288  # the starved metadata write (as in the seed report), on sda
# Times of the simulation, in ns; the blktrace counts from its first event, 9.1 ms in (build() shifts them).
FLUSH_PASSES = (4_050 * MS, 9_050 * MS, 14_050 * MS, 19_050 * MS)  # flush-8:0's kupdate passes
STORY_PASS = 1  # the pass whose last write's conversion blocks
READER_T = 10_443_712 * US  # file_reader faults on a page of the log file
WRITER_T = 10_491_337 * US  # file_writer's write() (it writes every WRITER_PERIOD)
WRITER_PERIOD = 1_500 * MS
PAUSE_T = 12_780 * MS  # the database sends no new I/O for PAUSE_NS ...
PAUSE_NS = 42 * MS
RELEASE_NS = 6 * MS  # ... and RELEASE_NS into that pause CFQ lets its async queue dispatch again
IDLE_WINDOW = 8 * MS  # CFQ's slice_idle: async requests wait this long after a sync completion
END_T = 24 * SEC  # the workload stops; offcputime ran this long from the blktrace's start
W0, W1 = 8_950 * MS, 13_250 * MS  # trace-cmd's capture
GUARD = 1_500  # ns between two bursts on one CPU


@dataclass(frozen=True)
class Task:
    comm: str
    pid: int
    cpu: int


PG = (Task("postgres", 2210, 2), Task("postgres", 2214, 3))
WRITER = Task("file_writer", 3271, 1)
READER = Task("file_reader", 3274, 2)
FLUSH = Task("flush-8:0", 498, 3)
AILD = Task("xfsaild/sda1", 804, 1)
CONV = Task("xfsconvertd/0", 421, 0)
LOGD = Task("xfslogd/0", 419, 0)
KBLOCKD = Task("kblockd/0", 187, 0)
EVENTS = tuple(Task(f"events/{c}", 11 + c, c) for c in range(4))
TRACECMD = tuple(Task("trace-cmd", 5102 + c, c) for c in range(4))
IDLE = tuple(Task("<idle>", 0, c) for c in range(4))

# off-CPU stacks (offcputime: kernel frames leaf first, then user frames leaf first)
_SYSW = ["vfs_write", "sys_write", "system_call_fastpath"]
STACKS = {
    "pg_read": (["finish_task_switch", "schedule", "io_schedule", "__blockdev_direct_IO", "xfs_vm_direct_IO",
                 "generic_file_aio_read", "xfs_read", "xfs_file_aio_read", "do_sync_read", "vfs_read", "sys_pread64",
                 "system_call_fastpath"],
                ["__pread_nocancel", "FileRead", "mdread", "ReadBuffer_common", "ExecScan", "PortalRun",
                 "PostgresMain", "main"]),
    "pg_write": (["finish_task_switch", "schedule", "io_schedule", "__blockdev_direct_IO", "xfs_vm_direct_IO",
                  "generic_file_direct_write", "xfs_write", "xfs_file_aio_write", "do_sync_write", "vfs_write",
                  "sys_pwrite64", "system_call_fastpath"],
                 ["__pwrite_nocancel", "FileWrite", "mdwrite", "FlushBuffer", "BufferAlloc", "ReadBuffer_common",
                  "PostgresMain", "main"]),
    "pg_recv": (["finish_task_switch", "schedule", "schedule_timeout", "sk_wait_data", "tcp_recvmsg", "sock_recvmsg",
                 "sys_recvfrom", "system_call_fastpath"],
                ["__libc_recv", "secure_read", "pq_recvbuf", "pq_getbyte", "PostgresMain", "main"]),
    "fw_stall": (["finish_task_switch", "schedule", "rwsem_down_write_failed", "call_rwsem_down_write_failed",
                  "down_write", "xfs_ilock", "xfs_write", "xfs_file_aio_write", "do_sync_write", *_SYSW],
                 ["__write_nocancel", "log_append", "main", "__libc_start_main"]),
    "fw_sleep": (["finish_task_switch", "schedule", "do_nanosleep", "hrtimer_nanosleep", "sys_clock_nanosleep",
                  "system_call_fastpath"],
                 ["clock_nanosleep", "main", "__libc_start_main"]),
    "fr_ilock": (["finish_task_switch", "schedule", "rwsem_down_read_failed", "call_rwsem_down_read_failed",
                  "down_read", "xfs_ilock", "xfs_ilock_map_shared", "xfs_iomap", "__xfs_get_blocks", "xfs_get_blocks",
                  "do_mpage_readpage", "mpage_readpages", "xfs_vm_readpages", "__do_page_cache_readahead", "ra_submit",
                  "ondemand_readahead", "page_cache_sync_readahead", "filemap_fault", "__do_fault", "handle_mm_fault",
                  "do_page_fault", "page_fault"],
                 ["scan_records", "main", "__libc_start_main"]),
    "fr_page": (["finish_task_switch", "schedule", "io_schedule", "sync_page", "__wait_on_bit_lock", "__lock_page",
                 "filemap_fault", "__do_fault", "handle_mm_fault", "do_page_fault", "page_fault"],
                ["scan_records", "main", "__libc_start_main"]),
    "fr_sleep": (["finish_task_switch", "schedule", "do_nanosleep", "hrtimer_nanosleep", "sys_nanosleep",
                  "system_call_fastpath"],
                 ["__nanosleep_nocancel", "main", "__libc_start_main"]),
    "conv_buf": (["finish_task_switch", "schedule", "schedule_timeout", "__down", "down", "xfs_buf_lock",
                  "_xfs_buf_find", "xfs_buf_get_flags", "xfs_buf_read_flags", "xfs_trans_read_buf",
                  "xfs_btree_read_buf_block", "xfs_btree_lookup_get_block", "xfs_btree_lookup", "xfs_bmbt_lookup_eq",
                  "xfs_bmap_add_extent_unwritten_real", "xfs_bmap_add_extent", "xfs_bmapi",
                  "xfs_iomap_write_unwritten", "xfs_end_bio_unwritten", "worker_thread", "kthread", "kernel_thread"],
                 []),
    "wq_idle": (["finish_task_switch", "schedule", "worker_thread", "kthread", "kernel_thread"], []),
    "flush_idle": (["finish_task_switch", "schedule", "schedule_timeout", "bdi_writeback_task", "bdi_start_fn",
                    "kthread", "kernel_thread"], []),
    "aild_idle": (["finish_task_switch", "schedule", "schedule_timeout", "xfsaild", "kthread", "kernel_thread"], []),
    "tc_sleep": (["finish_task_switch", "schedule", "do_nanosleep", "hrtimer_nanosleep", "sys_nanosleep",
                  "system_call_fastpath"],
                 ["__nanosleep_nocancel", "usleep", "trace_stream_read", "tracecmd_create_recorder", "main"]),
}


@dataclass
class Req:
    task: Task  # who submitted it
    rwbs: str
    sector: int  # on sda
    nsect: int  # whole request (after merges)
    i: int = 0
    d: int | None = None
    c: int | None = None
    service: int = 0
    sync: bool = True
    story: str = ""  # "pass_last" | "wm"
    done: object = None  # callback(sim, t, idle) -> t, inside the completion interrupt


@dataclass
class Sim:
    rng: random.Random
    heap: list = field(default_factory=list)
    blk: list = field(default_factory=list)  # (t, order, cpu, pid, action, rwbs, tail)
    ft: list = field(default_factory=list)  # (t, order, cpu, label, body)
    busy: list = field(default_factory=lambda: [[] for _ in range(4)])
    stacks: dict = field(default_factory=dict)
    off: dict = field(default_factory=dict)
    offcpu: list = field(default_factory=list)  # (task, key, t_out, t_in)
    cur: Req | None = None
    sync_q: deque = field(default_factory=deque)
    async_q: deque = field(default_factory=deque)
    timer: int | None = None
    last_c: int = 0
    starve_from: int | None = None
    vt: int = 1_948_520_448
    resid: int = 40
    story: dict = field(default_factory=dict)
    n: int = 0
    heap_t: int = 0
    aild_end: int = 0

    # ---- helpers ----
    def u(self, a: int, b: int) -> int:
        return self.rng.randint(a, b)

    def at(self, t: int, fn, *args) -> None:
        self.n += 1
        heapq.heappush(self.heap, (t, self.n, fn, args))

    def place(self, c: int, t: int, length: int) -> int:
        """The first start >= t where [start, start + length] is free on CPU c."""
        iv = self.busy[c]
        i = max(0, bisect.bisect_left(iv, (t, t)) - 1)
        while i < len(iv):
            a, b = iv[i]
            if b + GUARD <= t:
                i += 1
                continue
            if a >= t + length + GUARD:
                break
            t = max(t, b + GUARD)
            i += 1
        return t

    def take(self, c: int, a: int, b: int) -> None:
        iv = self.busy[c]
        i = bisect.bisect_left(iv, (a, b))
        if (i and iv[i - 1][1] + GUARD > a) or (i < len(iv) and b + GUARD > iv[i][0]):
            raise AssertionError(f"CPU {c}: [{a}, {b}] overlaps {iv[max(0, i - 1):i + 1]}")
        iv.insert(i, (a, b))

    def _stk(self, who: Task) -> list:
        return self.stacks.setdefault((who.pid, who.cpu) if who.pid == 0 else who.pid, [])

    def emit(self, t: int, who: Task, body: str) -> None:
        self.n += 1
        self.ft.append((t, self.n, who.cpu, f"{who.comm}-{who.pid}", body))

    def enter(self, who: Task, t: int, *funcs: str) -> int:
        st = self._stk(who)
        for f in funcs:
            self.emit(t, who, f"funcgraph_entry:                   |  {'  ' * len(st)}{f}() {{")
            st.append((f, t))
            t += self.u(90, 260)
        return t

    def leaf(self, who: Task, t: int, func: str, dur: int) -> int:
        st = self._stk(who)
        self.emit(t, who, f"funcgraph_entry:      {_dur(dur)} |  {'  ' * len(st)}{func}();")
        return t + dur + self.u(60, 200)

    def leave(self, who: Task, t: int, n: int = 1) -> int:
        st = self._stk(who)
        for _ in range(n):
            f, t0 = st.pop()
            self.emit(t, who, f"funcgraph_exit:       {_dur(t - t0)} |  {'  ' * len(st)}}}")
            t += self.u(70, 210)
        return t

    def push(self, who: Task, *funcs: str, t: int) -> None:
        """Calls a task is inside of since before anything was traced (no lines)."""
        self._stk(who).extend((f, t) for f in funcs)

    def event(self, who: Task, t: int, name: str, text: str) -> None:
        self.emit(t, who, f"{name + ':':<21} {text}")

    def wakeup(self, waker: Task, t: int, woken: Task) -> None:
        self.event(waker, t, "sched_wakeup", f"task {woken.comm}:{woken.pid} [120] success=1 [{woken.cpu:03d}]")

    def switch(self, c: int, t: int, prev: Task | None, state: str, nxt: Task | None) -> None:
        p, q = prev or IDLE[c], nxt or IDLE[c]
        pn, qn = ("swapper" if x.pid == 0 else x.comm for x in (p, q))
        self.event(p, t, "sched_switch", f"task {pn}:{p.pid} [120] ({state}) ==> {qn}:{q.pid} [120]")
        if prev is None and nxt is not None:
            self._in(nxt, t)

    def sleep(self, task: Task, t: int, state: str, key: str, nxt: Task | None = None) -> None:
        self.switch(task.cpu, t, task, state, nxt)
        self.off[task.pid] = (t, key)
        if nxt is not None:
            self._in(nxt, t)

    def _in(self, task: Task, t: int) -> None:
        if task.pid in self.off:
            t_out, key = self.off.pop(task.pid)
            self.offcpu.append((task, key, t_out, t))

    def run(self, task: Task, t: int) -> None:
        """Switch-in from the idle task."""
        self.switch(task.cpu, t, None, "R", task)

    def blk_line(self, t: int, cpu: int, pid: int, action: str, rwbs: str, tail: str) -> None:
        self.n += 1
        self.blk.append((t, self.n, cpu, pid, action, rwbs, tail))

    def ft_block(self, who: Task, t: int, name: str, r: Req, size: int | None = None) -> int:
        """A block tracepoint event in the trace: a few hundred ns off blktrace's record of it."""
        n = size or r.nsect
        j = t + self.u(-400, 900)
        if name == "block_rq_complete":
            text = f"8,0 {r.rwbs} () {r.sector} + {n} [0]"
        else:
            text = f"8,0 {r.rwbs} {n * 512} () {r.sector} + {n} [{'swapper' if who.pid == 0 else who.comm}]"
        self.event(who, j, name, text)
        return max(t, j) + self.u(400, 900)


def _dur(ns: int) -> str:
    us, rem = divmod(ns, 1000)
    mark = "$" if ns > SEC else "#" if ns > MS else "!" if ns > 100 * US else "+" if ns > 10 * US else " "
    num = f"{us}.{rem:03d}" if us < 1_000_000 else str(us)
    return f"{mark} {num:>8} us"


# ---- the block device and CFQ ------------------------------------------------------------------

def starving(sim: Sim, t: int) -> bool:
    return sim.starve_from is not None and sim.starve_from <= t < PAUSE_T + RELEASE_NS


def submit(sim: Sim, r: Req, who: Task, t: int, bios: list[tuple[int, int]] | None = None) -> int:
    """A request enters the block layer from `who` at t: A Q G I (and M for further bios); returns the time
    after its insert. The dispatch decision is taken at the insert (an event)."""
    bios = bios or [(r.sector, r.nsect)]
    c, pid, comm = who.cpu, who.pid, who.comm
    s0, n0 = bios[0]
    sim.blk_line(t, c, pid, "A", r.rwbs, f"{s0} + {n0} <- (8,1) {s0 - PART_START}")
    t += sim.u(60, 110)
    sim.blk_line(t, c, pid, "Q", r.rwbs, f"{s0} + {n0} [{comm}]")
    t += sim.u(300, 900)
    sim.blk_line(t, c, pid, "G", r.rwbs, f"{s0} + {n0} [{comm}]")
    t += sim.u(1_800, 6_500)
    r.i = t
    sim.blk_line(t, c, pid, "I", r.rwbs, f"{s0} + {n0} [{comm}]")
    t = sim.ft_block(who, t, "block_rq_insert", r, n0)
    for s, n in bios[1:]:
        sim.blk_line(t, c, pid, "A", r.rwbs, f"{s} + {n} <- (8,1) {s - PART_START}")
        t += sim.u(60, 110)
        sim.blk_line(t, c, pid, "Q", r.rwbs, f"{s} + {n} [{comm}]")
        t += sim.u(250, 600)
        sim.blk_line(t, c, pid, "M", r.rwbs, f"{s} + {n} [{comm}]")
        t += sim.u(700, 1_600)
    if r.sync and starving(sim, r.i) and sim.cur is None:
        _preempt_messages(sim, r, c)
    return t


def _preempt_messages(sim: Sim, r: Req, cpu: int) -> None:
    """CFQ's log while its async queue starves: a sync insert preempts the async queue before it dispatched."""
    q = f"cfq{r.task.pid}SN"
    t = r.i + sim.u(300, 600)
    sim.resid = sim.resid - 1 if sim.resid > 1 else 40
    sim.vt += sim.u(2_000_000, 9_000_000)
    for dt, msg in ((0, f"{q} / insert_request"), (440, f"{q} / add_to_rr"), (1065, f"{q} / preempt"),
                    (1419, "cfq498A / slice expired t=1"), (1776, f"cfq498A / resid={sim.resid}"),
                    (2361, f"/ served: vt={sim.vt} min_vt={sim.vt}"),
                    (2879, "cfq498A / sl_used=1 disp=0 charge=0 iops=1 sect=0")):
        sim.blk_line(t + dt, cpu, 0, "m", "N", msg)


def try_dispatch_at_insert(sim: Sim, r: Req, who: Task, t: int) -> int:
    """At the insert: dispatch at once from the submitter if the disk is idle and CFQ allows it; else queue."""
    if sim.cur is None and (r.sync or (not starving(sim, r.i) and sim.timer is None and not sim.sync_q)):
        if r.sync:
            sim.timer = None
        return dispatch(sim, r, who, t + sim.u(1_200, 3_000))
    (sim.sync_q if r.sync else sim.async_q).append(r)
    return t


def dispatch(sim: Sim, r: Req, who: Task, t: int) -> int:
    """D from `who` (the submitter, the interrupt on CPU 0, or kblockd/0) at t; schedules the completion."""
    r.d = t
    sim.cur = r
    comm = "swapper" if who.pid == 0 else who.comm
    sim.blk_line(t, who.cpu, who.pid, "D", r.rwbs, f"{r.sector} + {r.nsect} [{comm}]")
    t = sim.ft_block(who, t, "block_rq_issue", r)
    r.c = r.d + r.service
    sim.at(r.c, complete, r)
    if r.story == "pass_last":  # xfsaild pushes the file's bmap btree buffer while this write is in the disk
        sim.at(r.d + 1_200 * US, aild_push, r.d + 1_200 * US, True)
    return t


def complete(sim: Sim, r: Req) -> None:
    """The completion interrupt on CPU 0 (idle): C, the bio's end_io (wake-ups), the next dispatch."""
    idle, C = IDLE[0], r.c
    t0 = C - sim.u(3_400, 4_200)
    sim.take(0, t0, C + 45 * US)
    t = sim.enter(idle, t0, "do_IRQ")
    t = sim.leaf(idle, t, "ahci_interrupt", sim.u(1_400, 2_100))
    t = sim.enter(idle, t, "irq_exit", "blk_done_softirq", "scsi_io_completion", "blk_update_request")
    assert t < C, (t, C)
    sim.blk_line(C, 0, 0, "C", r.rwbs, f"{r.sector} + {r.nsect} [0]")
    t = sim.ft_block(idle, C, "block_rq_complete", r)
    t = sim.enter(idle, t, "bio_endio")
    t = r.done(sim, t, idle)
    t = sim.leave(idle, t, 2)  # bio_endio, blk_update_request
    sim.cur, sim.last_c = None, C
    nxt = None
    if sim.sync_q:
        nxt = sim.sync_q.popleft()
    elif sim.async_q and not starving(sim, C) and not r.sync:
        nxt = sim.async_q.popleft()  # the async queue keeps its slice
    elif sim.async_q and not starving(sim, C):
        arm_timer(sim, C + IDLE_WINDOW)
    if nxt is not None:
        t = sim.enter(idle, t, "scsi_run_queue")
        t = dispatch(sim, nxt, idle, t + sim.u(500, 1_500))
        t = sim.leave(idle, t)
    t = sim.leave(idle, t, 3)  # scsi_io_completion, blk_done_softirq, irq_exit
    t = sim.leave(idle, t)  # do_IRQ
    assert t < C + 45 * US


def arm_timer(sim: Sim, t: int) -> None:
    sim.timer = t
    sim.at(t, idle_timer, t)


def idle_timer(sim: Sim, t: int) -> None:
    """CFQ's idle timer expired with async requests waiting: kblockd/0 dispatches the first."""
    if sim.timer != t:
        return
    sim.timer = None
    if sim.cur is not None or sim.sync_q or not sim.async_q or starving(sim, t):
        return
    r = sim.async_q.popleft()
    sim.take(0, t, t + 40 * US)
    sim.wakeup(IDLE[0], t, KBLOCKD)
    t += sim.u(4_000, 7_000)
    sim.run(KBLOCKD, t)
    t = sim.leave(KBLOCKD, t + sim.u(600, 1_200))  # schedule
    t = sim.enter(KBLOCKD, t, "cfq_kick_queue", "__blk_run_queue", "scsi_request_fn")
    if r.story == "wm":
        for msg in ("cfq498A / set_active", "cfq498A / dispatch_insert", "cfq498A / dispatched a request",
                    "cfq498A / activate rq, drv=1"):
            t += sim.u(300, 700)
            sim.blk_line(t, 0, 0, "m", "N", msg)
        t += sim.u(400, 800)
    t = dispatch(sim, r, KBLOCKD, t)
    t = sim.leave(KBLOCKD, t, 3)
    t = sim.enter(KBLOCKD, t, "schedule")
    sim.sleep(KBLOCKD, t, "S", "wq_idle")


def release(sim: Sim, t: int) -> None:
    """The database has been quiet for RELEASE_NS: CFQ gives its async queue a slice again."""
    if sim.cur is None and sim.async_q and not sim.sync_q and sim.timer is None:
        arm_timer(sim, max(t, sim.last_c + IDLE_WINDOW))


# ---- postgres --------------------------------------------------------------------------------

def pg_wake(sim: Sim, b: int, t: int) -> None:
    """A query arrives (network wake-up on the backend's CPU); the backend works, then submits an I/O."""
    pg = PG[b]
    pre = sim.u(40, 220) * US
    s = sim.place(pg.cpu, t, pre + 60 * US)
    sim.take(pg.cpu, s, s + pre + 60 * US)
    sim.wakeup(IDLE[pg.cpu], s, pg)
    t = s + sim.u(3_000, 6_000)
    sim.run(pg, t)
    t = sim.leave(pg, t + sim.u(500, 1_100), 2)  # schedule, sys_recvfrom
    t += pre
    write = sim.rng.random() < 0.27
    r = Req(pg, "WS" if write else "R", PART_START + sim.u(2_500_000, 11_000_000) * 16, 16,
            service=min(14 * MS, max(1_200 * US, int(sim.rng.lognormvariate(0, 0.35) * 4_200 * US))))
    r.done = lambda sim, t, idle, r=r, b=b: _pg_io_done(sim, t, idle, r, b)
    t = sim.enter(pg, t, *(("sys_pwrite64", "vfs_write", "do_sync_write", "xfs_file_aio_write", "xfs_write") if write
                          else ("sys_pread64", "vfs_read", "do_sync_read", "xfs_file_aio_read", "xfs_read")))
    t = sim.leaf(pg, t, "xfs_ilock", sim.u(300, 700))
    t = sim.enter(pg, t, "generic_file_direct_write" if write else "generic_file_aio_read", "xfs_vm_direct_IO",
                  "__blockdev_direct_IO", "xfs_get_blocks_direct")
    t = sim.leaf(pg, t, "xfs_ilock", sim.u(250, 500))
    t = sim.leaf(pg, t, "xfs_bmapi", sim.u(900, 2_400))
    t = sim.leaf(pg, t, "xfs_iunlock", sim.u(200, 450))
    t = sim.leave(pg, t)
    t = sim.enter(pg, t, "submit_bio")
    i = submit(sim, r, pg, t)
    sim.at(r.i, _pg_insert, r, b, i)


def _pg_insert(sim: Sim, r: Req, b: int, t: int) -> None:
    pg = PG[b]
    t = try_dispatch_at_insert(sim, r, pg, t)
    t = sim.leave(pg, t)  # submit_bio
    t = sim.enter(pg, t, "dio_await_one", "io_schedule", "schedule")
    sim.sleep(pg, t, "D", "pg_write" if r.rwbs == "WS" else "pg_read")


def _pg_io_done(sim: Sim, t: int, idle: Task, r: Req, b: int) -> int:
    pg = PG[b]
    t = sim.enter(idle, t, "dio_bio_end_io", "try_to_wake_up")
    sim.wakeup(idle, t, pg)
    t = sim.leave(idle, t + sim.u(400, 900), 2)
    sim.at(t + 12 * US, _pg_resume, b)
    return t


def _pg_resume(sim: Sim, b: int) -> None:
    pg = PG[b]
    post = sim.u(25, 70) * US
    s = sim.place(pg.cpu, sim.heap_t, post + 30 * US)
    sim.take(pg.cpu, s, s + post + 30 * US)
    sim.run(pg, s)
    t = sim.leave(pg, s + sim.u(500, 1_000), 6)  # schedule ... __blockdev_direct_IO, xfs_vm_direct_IO, generic_*
    t = sim.leaf(pg, t, "xfs_iunlock", sim.u(300, 600))
    t = sim.leave(pg, t, 5)  # xfs_read ... sys_pread64
    t += post
    t = sim.enter(pg, t, "sys_recvfrom", "schedule")
    sim.sleep(pg, t, "S", "pg_recv")
    nxt = t + min(150 * MS, max(500 * US, int(sim.rng.expovariate(1 / (24 * MS)))))
    if PAUSE_T <= nxt < PAUSE_T + PAUSE_NS:
        nxt = PAUSE_T + PAUSE_NS + sim.u(0, 2_500) * US
    if nxt < END_T:
        sim.at(nxt, pg_wake, b, nxt)


# ---- flush-8:0, xfsaild, the conversions and the buffer completions --------------------------------

def flush_pass(sim: Sim, k: int, t: int) -> None:
    """A kupdate writeback pass of the log file's dirty pages (unwritten extents): plugged, back merges."""
    nreq = 5 if k == STORY_PASS else sim.u(4, 9)
    base = PART_START + 96_340_000 + k * 40_960
    plan, s = [], base
    for _ in range(nreq):
        bios = [(s, 8 * sim.u(4, 16))]
        for _ in range(sim.u(0, 3)):
            bios.append((bios[-1][0] + bios[-1][1], 8 * sim.u(2, 16)))
        plan.append(bios)
        s = bios[-1][0] + bios[-1][1] + 8 * sim.u(8, 64)
    length = 120 * US + nreq * 30 * US
    s0 = sim.place(FLUSH.cpu, t, length)
    sim.take(FLUSH.cpu, s0, s0 + length)
    sim.wakeup(IDLE[FLUSH.cpu], s0, FLUSH)
    t = s0 + sim.u(3_000, 6_000)
    sim.run(FLUSH, t)
    t = sim.leave(FLUSH, t + 700, 2)  # schedule, schedule_timeout
    t = sim.enter(FLUSH, t, "wb_do_writeback", "writeback_inodes_wb", "writeback_single_inode", "do_writepages",
                  "generic_writepages", "write_cache_pages")
    sim.blk_line(t, FLUSH.cpu, FLUSH.pid, "P", "N", f"[{FLUSH.comm}]")
    reqs = []
    for j, bios in enumerate(plan):
        r = Req(FLUSH, "W", bios[0][0], sum(n for _, n in bios), sync=False,
                service=sim.u(900, 2_800) * US)
        if k == STORY_PASS and j == nreq - 1:
            r.story, r.service = "pass_last", 3_350 * US
        r.done = lambda sim, t, idle, r=r: _flush_io_done(sim, t, idle, r)
        t = sim.enter(FLUSH, t, "xfs_vm_writepage")
        t = sim.leaf(FLUSH, t, "xfs_map_blocks", sim.u(1_500, 4_000))
        t = sim.enter(FLUSH, t, "submit_bio")
        t = submit(sim, r, FLUSH, t, bios)
        t = sim.leave(FLUSH, t, 2)
        reqs.append(r)
    t += sim.u(2_000, 4_000)
    sim.blk_line(t, FLUSH.cpu, FLUSH.pid, "U", "N", f"[{FLUSH.comm}] {nreq}")
    sim.at(t, _flush_unplug, reqs, t)


def _flush_unplug(sim: Sim, reqs: list[Req], t: int) -> None:
    for r in reqs:
        if r is reqs[0]:
            t = try_dispatch_at_insert(sim, r, FLUSH, t)
        else:
            sim.async_q.append(r)
    t = sim.leave(FLUSH, t + 800, 6)
    t = sim.enter(FLUSH, t, "schedule_timeout", "schedule")
    sim.sleep(FLUSH, t, "S", "flush_idle")


def _flush_io_done(sim: Sim, t: int, idle: Task, r: Req) -> int:
    """xfs_end_bio: an unwritten extent was written: its conversion is queued on xfsconvertd/0."""
    t = sim.enter(idle, t, "xfs_end_bio", "xfs_finish_ioend", "queue_work", "try_to_wake_up")
    sim.wakeup(idle, t, CONV)
    t = sim.leave(idle, t + sim.u(300, 700), 4)
    sim.at(r.c + 47 * US, conversion, r)
    return t


def conversion(sim: Sim, r: Req) -> None:
    """xfsconvertd/0 converts the written extent: xfs_ilock (exclusive), the bmap btree buffer, commit."""
    t = sim.heap_t
    blocks = r.story == "pass_last"
    sim.take(0, t, t + (40 if blocks else 110) * US)
    sim.run(CONV, t)
    t = sim.leave(CONV, t + sim.u(600, 1_200))  # schedule
    t = sim.enter(CONV, t, "xfs_end_bio_unwritten", "xfs_iomap_write_unwritten")
    t = sim.leaf(CONV, t, "_xfs_trans_alloc", sim.u(2_000, 3_000))
    t = sim.leaf(CONV, t, "xfs_trans_reserve", sim.u(5_000, 9_000))
    t = sim.leaf(CONV, t, "xfs_ilock", sim.u(700, 1_000))
    t = sim.leaf(CONV, t, "xfs_trans_ijoin", sim.u(500, 800))
    t = sim.enter(CONV, t, "xfs_bmapi", "xfs_bmap_add_extent", "xfs_bmap_add_extent_unwritten_real",
                  "xfs_bmbt_lookup_eq", "xfs_btree_lookup", "xfs_btree_lookup_get_block", "xfs_btree_read_buf_block",
                  "xfs_trans_read_buf", "xfs_buf_read_flags", "xfs_buf_get_flags", "_xfs_buf_find")
    if blocks:  # the buffer is locked for xfsaild's write, which is starving in CFQ's async queue
        wm = sim.story["wm"]
        assert wm.i < t and wm.d is None, "the metadata write must be queued when the conversion needs its buffer"
        t = sim.enter(CONV, t, "xfs_buf_lock", "down", "__down", "schedule_timeout", "schedule")
        sim.story["conv_block"] = t
        sim.sleep(CONV, t, "D", "conv_buf")
        return
    t = sim.leaf(CONV, t, "xfs_buf_lock", sim.u(400, 800))
    t = sim.leave(CONV, t, 11)
    t = sim.leaf(CONV, t, "xfs_trans_commit", sim.u(15_000, 30_000))
    t = sim.leaf(CONV, t, "xfs_buf_relse", sim.u(400, 700))
    t = sim.leaf(CONV, t, "xfs_iunlock", sim.u(500, 900))
    t = sim.leave(CONV, t, 2)
    t = sim.enter(CONV, t, "schedule")
    sim.sleep(CONV, t, "S", "wq_idle")


def aild_push(sim: Sim, t: int, story: bool = False) -> None:
    """xfsaild pushes the AIL: it locks metadata buffers and writes them (async WM, plugged)."""
    n = 1 if story else sim.u(1, 3)
    length = 60 * US + n * 25 * US
    s = sim.place(AILD.cpu, max(t, sim.aild_end + GUARD), length)
    sim.aild_end = s + length
    sim.take(AILD.cpu, s, s + length)
    sim.wakeup(IDLE[AILD.cpu], s, AILD)
    t = s + sim.u(3_000, 6_000)
    sim.run(AILD, t)
    t = sim.leave(AILD, t + 600, 2)  # schedule, schedule_timeout
    t = sim.enter(AILD, t, "xfsaild_push")
    sim.blk_line(t, AILD.cpu, AILD.pid, "P", "N", f"[{AILD.comm}]")
    reqs = []
    for j in range(n):
        sector = WM_SECTOR if story else PART_START + 141_688_000 + sim.u(0, 2_400) * 8
        r = Req(AILD, "WM", sector, 8 * sim.u(1, 2) if not story else 8, sync=False,
                service=5_617 * US if story else sim.u(1_500, 6_000) * US)
        if story:
            r.story = "wm"
            sim.story["wm"] = r
        r.done = lambda sim, t, idle, r=r: _wm_io_done(sim, t, idle, r)
        t = sim.enter(AILD, t, "xfs_buf_item_push")
        t = sim.leaf(AILD, t, "xfs_buf_lock", sim.u(300, 600))
        t = sim.enter(AILD, t, "xfs_buf_iorequest", "_xfs_buf_ioapply", "submit_bio")
        t = submit(sim, r, AILD, t)
        t = sim.leave(AILD, t, 4)
        reqs.append(r)
    t += sim.u(1_500, 3_000)
    sim.blk_line(t, AILD.cpu, AILD.pid, "U", "N", f"[{AILD.comm}] {n}")
    if story:
        sim.starve_from = reqs[0].i
    sim.at(t, _aild_unplug, reqs, t)


def _aild_unplug(sim: Sim, reqs: list[Req], t: int) -> None:
    for r in reqs:
        if r is reqs[0]:
            t = try_dispatch_at_insert(sim, r, AILD, t)
        else:
            sim.async_q.append(r)
    t = sim.leave(AILD, t + 700)  # xfsaild_push
    t = sim.enter(AILD, t, "schedule_timeout", "schedule")
    sim.sleep(AILD, t, "S", "aild_idle")


def _wm_io_done(sim: Sim, t: int, idle: Task, r: Req) -> int:
    t = sim.enter(idle, t, "xfs_buf_bio_end_io", "xfs_buf_ioend", "queue_work", "try_to_wake_up")
    sim.wakeup(idle, t, LOGD)
    t = sim.leave(idle, t + sim.u(300, 700), 4)
    sim.at(r.c + 48 * US, logd_run, r)
    return t


def logd_run(sim: Sim, r: Req) -> None:
    """xfslogd/0 runs the buffer's I/O completion: callbacks, then xfs_buf_unlock -> up (waking a waiter)."""
    t = sim.heap_t
    story = r.story == "wm"
    if story:
        sim.story["logd_in"] = t
    else:
        sim.take(0, t, t + 30 * US)
    sim.run(LOGD, t)
    t = sim.leave(LOGD, t + sim.u(500, 1_000))  # schedule
    t = sim.enter(LOGD, t, "xfs_buf_iodone_work", "xfs_buf_iodone_callbacks")
    t = sim.leaf(LOGD, t, "xfs_buf_do_callbacks", sim.u(5_000, 9_000))
    t = sim.enter(LOGD, t, "xfs_buf_ioend", "xfs_buf_iodone_work", "xfs_buf_unlock", "up")
    if story:
        t = sim.enter(LOGD, t, "try_to_wake_up")
        sim.story["logd_wake"] = t
        sim.wakeup(LOGD, t, CONV)
        t = sim.leave(LOGD, t + sim.u(400, 800))
    t = sim.leave(LOGD, t, 6)
    t = sim.enter(LOGD, t, "schedule")
    if story:
        sim.sleep(LOGD, t, "S", "wq_idle", nxt=CONV)
        sim.at(t, conv_resume, t)
    else:
        sim.sleep(LOGD, t, "S", "wq_idle")


def conv_resume(sim: Sim, t: int) -> None:
    """xfsconvertd/0 has the buffer: finishes the conversion, commits, and xfs_iunlock wakes file_reader."""
    sim.story["conv_in"] = t
    t = sim.leave(CONV, t + sim.u(800, 1_300), 5)  # schedule, schedule_timeout, __down, down, xfs_buf_lock
    t = sim.leave(CONV, t, 11)  # _xfs_buf_find ... xfs_bmapi
    t = sim.leaf(CONV, t, "xfs_bmap_finish", sim.u(20_000, 40_000))
    t = sim.leaf(CONV, t, "xfs_trans_commit", sim.u(120_000, 160_000))
    t = sim.leaf(CONV, t, "xfs_buf_relse", sim.u(400, 700))
    t = sim.enter(CONV, t, "xfs_iunlock", "up_write", "rwsem_wake", "try_to_wake_up")
    sim.story["conv_wake"] = t
    sim.wakeup(CONV, t, READER)
    t = sim.leave(CONV, t + sim.u(400, 800), 4)
    t = sim.leave(CONV, t, 2)
    t = sim.enter(CONV, t, "schedule")
    sim.sleep(CONV, t, "S", "wq_idle")
    sim.take(0, sim.story["logd_in"], t)
    sim.at(sim.story["conv_wake"] + 9 * US, reader_resume)


# ---- file_reader (page faults on the log file) and file_writer ---------------------------------------

READ_PATH = ("do_page_fault", "handle_mm_fault", "__do_fault", "filemap_fault", "page_cache_sync_readahead",
             "ondemand_readahead", "ra_submit", "__do_page_cache_readahead", "read_pages", "xfs_vm_readpages",
             "mpage_readpages", "do_mpage_readpage", "xfs_get_blocks", "__xfs_get_blocks", "xfs_iomap")


def reader_fault(sim: Sim, t: int, left: int) -> None:
    """file_reader touches a page that is not cached: readahead maps the blocks (ilock shared) and reads."""
    s = sim.place(READER.cpu, t, 90 * US)
    sim.take(READER.cpu, s, s + 90 * US)
    if sim.off.get(READER.pid, (0, ""))[1] == "fr_sleep":
        sim.wakeup(IDLE[READER.cpu], s, READER)
        s += sim.u(3_000, 5_000)
        sim.run(READER, s)
        s = sim.leave(READER, s + 600, 3)  # schedule, do_nanosleep, sys_nanosleep
    t = sim.enter(READER, s + sim.u(2_000, 9_000), *READ_PATH)
    if sim.starve_from is not None and "conv_in" not in sim.story and t > sim.story.get("conv_block", 1 << 62):
        t = sim.enter(READER, t, "xfs_ilock_map_shared", "xfs_ilock", "down_read", "rwsem_down_read_failed", "schedule")
        sim.story["reader_block"] = t
        sim.story["reader_left"] = left
        sim.sleep(READER, t, "D", "fr_ilock")
        return
    t = sim.leaf(READER, t, "xfs_ilock_map_shared", sim.u(400, 800))
    reader_read(sim, t, left)


def reader_resume(sim: Sim) -> None:
    t = sim.heap_t
    s = sim.place(READER.cpu, t, 80 * US)
    sim.take(READER.cpu, s, s + 80 * US)
    sim.run(READER, s)
    sim.story["reader_in"] = s
    t = sim.leave(READER, s + sim.u(700, 1_200), 5)  # schedule ... xfs_ilock, xfs_ilock_map_shared
    t = sim.leaf(READER, t, "xfs_bmapi", sim.u(1_500, 3_000))
    t = sim.enter(READER, t, "xfs_iunlock", "up_read", "rwsem_wake", "try_to_wake_up")
    sim.story["reader_wake"] = t
    sim.wakeup(READER, t, WRITER)
    t = sim.leave(READER, t + sim.u(400, 800), 4)
    sim.at(sim.story["reader_wake"] + 8 * US, writer_resume)
    reader_read(sim, t, sim.story["reader_left"], mapped=True)


def reader_read(sim: Sim, t: int, left: int, mapped: bool = False) -> None:
    if not mapped:
        t = sim.leaf(READER, t, "xfs_bmapi", sim.u(1_500, 3_000))
        t = sim.leaf(READER, t, "xfs_iunlock", sim.u(300, 600))
    t = sim.leave(READER, t, 4)  # xfs_iomap, __xfs_get_blocks, xfs_get_blocks, do_mpage_readpage
    sector = sim.story.setdefault("reader_sector", PART_START + 96_100_000)
    sim.story["reader_sector"] = sector + 256
    r = Req(READER, "R", sector, 256, service=sim.u(1_100, 1_900) * US)
    r.done = lambda sim, t, idle, r=r, left=left: _reader_io_done(sim, t, idle, r, left)
    t = sim.enter(READER, t, "submit_bio")
    t = submit(sim, r, READER, t)
    sim.at(r.i, _reader_insert, r, t)


def _reader_insert(sim: Sim, r: Req, t: int) -> None:
    t = try_dispatch_at_insert(sim, r, READER, t)
    t = sim.leave(READER, t, 1 + 7)  # submit_bio, mpage_readpages ... page_cache_sync_readahead
    t = sim.enter(READER, t, "__lock_page", "__wait_on_bit_lock", "sync_page", "io_schedule", "schedule")
    sim.sleep(READER, t, "D", "fr_page")


def _reader_io_done(sim: Sim, t: int, idle: Task, r: Req, left: int) -> int:
    t = sim.enter(idle, t, "mpage_end_io", "unlock_page", "__wake_up_bit", "try_to_wake_up")
    sim.wakeup(idle, t, READER)
    t = sim.leave(idle, t + sim.u(300, 700), 4)
    sim.at(t + 12 * US, _reader_after, left)
    return t


def _reader_after(sim: Sim, left: int) -> None:
    t = sim.heap_t
    s = sim.place(READER.cpu, t, 40 * US)
    sim.take(READER.cpu, s, s + 40 * US)
    sim.run(READER, s)
    t = sim.leave(READER, s + sim.u(600, 1_000), 9)  # schedule ... __lock_page, filemap_fault ... do_page_fault
    if left > 1:  # scans the 32 pages just read, then faults on the next one
        nt = t + sim.u(120, 400) * US
        sim.at(nt, reader_fault, nt, left - 1)
        t += 20 * US
    t = sim.enter(READER, t, "sys_nanosleep", "do_nanosleep", "schedule")
    sim.sleep(READER, t, "S", "fr_sleep")


def writer_write(sim: Sim, t: int) -> None:
    """file_writer appends a record (buffered write()), marked with trace_marker."""
    s = sim.place(WRITER.cpu, t, 80 * US)
    sim.take(WRITER.cpu, s, s + 80 * US)
    idle = IDLE[WRITER.cpu]
    t = sim.enter(idle, s, "smp_apic_timer_interrupt", "hrtimer_interrupt", "hrtimer_wakeup", "try_to_wake_up")
    sim.wakeup(idle, t, WRITER)
    t = sim.leave(idle, t + sim.u(300, 600), 4)
    t += sim.u(2_000, 4_000)
    sim.run(WRITER, t)
    t = sim.leave(WRITER, t + 700, 3)  # schedule, do_nanosleep, sys_clock_nanosleep
    t += sim.u(8_000, 15_000)
    sim.event(WRITER, t, "print", "00000000 write start")
    t = sim.enter(WRITER, t + sim.u(2_000, 4_000), "sys_write", "vfs_write", "do_sync_write", "xfs_file_aio_write",
                  "xfs_write", "xfs_ilock")
    t = sim.leaf(WRITER, t, "down_write", sim.u(200, 400))  # the iolock
    if "conv_block" in sim.story and "conv_in" not in sim.story:  # the ilock: held by xfsconvertd/0
        t = sim.enter(WRITER, t, "down_write", "rwsem_down_write_failed", "schedule")
        sim.story["writer_block"] = t
        sim.sleep(WRITER, t, "D", "fw_stall")
        return
    t = sim.leaf(WRITER, t, "down_write", sim.u(200, 400))
    t = sim.leave(WRITER, t)  # xfs_ilock
    writer_finish(sim, t)


def writer_resume(sim: Sim) -> None:
    t = sim.place(WRITER.cpu, sim.heap_t, 80 * US)
    sim.take(WRITER.cpu, t, t + 80 * US)
    sim.run(WRITER, t)
    sim.story["writer_in"] = t
    t = sim.leave(WRITER, t + sim.u(700, 1_100), 4)  # schedule, rwsem_down_write_failed, down_write, xfs_ilock
    writer_finish(sim, t)


def writer_finish(sim: Sim, t: int) -> None:
    t = sim.leaf(WRITER, t, "xfs_iunlock", sim.u(300, 600))  # the ilock (the iolock stays)
    t = sim.enter(WRITER, t, "generic_file_buffered_write", "generic_perform_write")
    for _ in range(2):
        t = sim.leaf(WRITER, t, "xfs_vm_write_begin", sim.u(1_500, 3_500))
        t = sim.leaf(WRITER, t, "iov_iter_copy_from_user_atomic", sim.u(300, 900))
        t = sim.leaf(WRITER, t, "xfs_vm_write_end", sim.u(800, 1_600))
    t = sim.leave(WRITER, t, 2)
    t = sim.leaf(WRITER, t, "xfs_iunlock", sim.u(300, 600))  # the iolock
    t = sim.leave(WRITER, t, 5)  # xfs_write ... sys_write
    sim.event(WRITER, t + sim.u(1_000, 3_000), "print", "00000000 write done")
    t += sim.u(6_000, 9_000)
    t = sim.enter(WRITER, t, "sys_clock_nanosleep", "do_nanosleep", "schedule")
    sim.sleep(WRITER, t, "S", "fw_sleep")
    nxt = WRITER_T + WRITER_PERIOD * ((t - WRITER_T) // WRITER_PERIOD + 1)
    if nxt < END_T:
        sim.at(nxt, writer_write, nxt)


# ---- background that only the trace and offcputime see ------------------------------------------

def fillers(sim: Sim) -> None:
    """Tasks that touch nothing else: events/N work items, and trace-cmd's readers during the capture."""
    rng = sim.rng
    for c, task in enumerate(EVENTS):
        t = rng.randint(1, 60) * MS
        while t < END_T:
            s = sim.place(c, t, 25 * US)
            sim.take(c, s, s + 25 * US)
            sim.wakeup(IDLE[c], s, task)
            u = s + rng.randint(3_000, 6_000)
            sim.run(task, u)
            u = sim.leave(task, u + 600)
            u = sim.leaf(task, u, rng.choice(("vmstat_update", "cache_reap", "lru_add_drain_per_cpu")),
                         rng.randint(2_000, 9_000))
            u = sim.enter(task, u, "schedule")
            sim.sleep(task, u, "S", "wq_idle")
            t = s + rng.randint(40, 130) * MS
    for c, task in enumerate(TRACECMD):
        t = W0 - rng.randint(1, 200) * MS
        while t < W1:
            s = sim.place(c, t, 90 * US)
            sim.take(c, s, s + 90 * US)
            sim.wakeup(IDLE[c], s, task)
            u = s + rng.randint(3_000, 6_000)
            sim.run(task, u)
            u = sim.leave(task, u + 600, 3)
            u = sim.leaf(task, u, "sys_splice", rng.randint(20_000, 60_000))
            u = sim.enter(task, u, "sys_nanosleep", "do_nanosleep", "schedule")
            sim.sleep(task, u, "S", "tc_sleep")
            t = s + rng.randint(200, 300) * MS


def aild_idle(sim: Sim, t: int) -> None:
    """xfsaild wakes to find nothing it can push (every 20 ms while its buffer is stuck, else 50 ms)."""
    wm = sim.story.get("wm")
    stuck = wm is not None and wm.i <= t and (wm.c is None or t < wm.c)
    s = sim.place(AILD.cpu, max(t, sim.aild_end + GUARD), 30 * US)
    sim.take(AILD.cpu, s, s + 30 * US)
    sim.aild_end = s + 30 * US
    sim.wakeup(IDLE[AILD.cpu], s, AILD)
    u = s + sim.u(3_000, 6_000)
    sim.run(AILD, u)
    u = sim.leave(AILD, u + 600, 2)
    u = sim.leaf(AILD, u, "xfsaild_push", sim.u(1_500, 6_000))
    u = sim.enter(AILD, u, "schedule_timeout", "schedule")
    sim.sleep(AILD, u, "S", "aild_idle")
    nxt = s + (20 if stuck else 50) * MS + sim.u(0, 900) * US
    if nxt < END_T:
        sim.at(nxt, aild_idle, nxt)


# ---- the run ------------------------------------------------------------------------------------

def simulate(seed: int = SEED) -> Sim:
    sim = Sim(random.Random(seed))
    for pg in PG:  # every task starts asleep, inside the calls it sleeps in
        sim.push(pg, "sys_recvfrom", "schedule", t=0)
        sim.off[pg.pid] = (0, "pg_recv")
    for task, frames, key in ((WRITER, ("sys_clock_nanosleep", "do_nanosleep", "schedule"), "fw_sleep"),
                              (READER, ("sys_nanosleep", "do_nanosleep", "schedule"), "fr_sleep"),
                              (FLUSH, ("schedule_timeout", "schedule"), "flush_idle"),
                              (AILD, ("schedule_timeout", "schedule"), "aild_idle"),
                              (CONV, ("schedule",), "wq_idle"), (LOGD, ("schedule",), "wq_idle"),
                              (KBLOCKD, ("schedule",), "wq_idle"),
                              *((e, ("schedule",), "wq_idle") for e in EVENTS),
                              *((tc, ("sys_nanosleep", "do_nanosleep", "schedule"), "tc_sleep") for tc in TRACECMD)):
        asleep = W0 - 300 * MS if task in TRACECMD else 10 * MS  # trace-cmd's readers start with the capture
        sim.push(task, *frames, t=asleep)
        sim.off[task.pid] = (asleep, key)
    for b in range(len(PG)):
        t = sim.u(1, 20) * MS
        sim.at(t, pg_wake, b, t)
    for k, t in enumerate(FLUSH_PASSES):
        sim.at(t, flush_pass, k, t)
    t = 600 * MS
    while t < END_T - 600 * MS:
        if not (FLUSH_PASSES[STORY_PASS] - 300 * MS < t < PAUSE_T + 200 * MS):
            sim.at(t, aild_push, t)
        t += sim.u(600, 1_600) * MS
    sim.at(WRITER_T - 6 * WRITER_PERIOD, writer_write, WRITER_T - 6 * WRITER_PERIOD)
    sim.at(230 * MS, aild_idle, 230 * MS)
    sim.at(READER_T - 1_400 * MS, reader_fault, READER_T - 1_400 * MS, 4)  # a scan before the incident
    sim.at(READER_T, reader_fault, READER_T, 9)
    sim.at(PAUSE_T + RELEASE_NS, release, PAUSE_T + RELEASE_NS)
    while sim.heap:
        t, _, fn, args = heapq.heappop(sim.heap)
        sim.heap_t = t
        fn(sim, *args)
    fillers(sim)
    return sim


# ---- rendering ----------------------------------------------------------------------------------

def render_blkparse(sim: Sim, t0: int) -> str:
    out, seq = [], [0, 0, 0, 0]
    for t, _, c, pid, act, rwbs, tail in sorted(sim.blk):
        t -= t0
        if act == "m":
            sq = 0
        else:
            seq[c] += 1
            sq = seq[c]
        out.append("%3d,%-3d %2d %8d %5d.%09d %5d %2s %3s %s\n"
                   % (8, 0, c, sq, t // SEC, t % SEC, pid, act, rwbs, tail))
    return "".join(out)


def render_trace(sim: Sim, t0: int) -> str:
    out = ["# trace-cmd record -C mono -p function_graph -e sched_switch -e sched_wakeup -e block_rq_insert"
           " -e block_rq_issue -e block_rq_complete -e ftrace:print\n",
           "# trace clock: mono\n", "cpus=4\n"]
    for t, _, c, label, body in sorted(sim.ft):
        if not W0 <= t <= W1:
            continue
        us = (t - t0 + OFFSET_NS) // US
        comm, pid = label.rsplit("-", 1)
        out.append(f"{comm:>16}-{pid:<5} [{c:03d}] {us // 1_000_000:5d}.{us % 1_000_000:06d}: {body}\n")
    return "".join(out)


def offcpu_totals(sim: Sim, t0: int) -> dict[tuple[str, int, str], int]:
    """µs off CPU per (comm, pid, stack key) over the blktrace's first END_T: each interval truncated to µs, as
    bcc does; intervals that began before offcputime started or had not ended when it stopped are not seen."""
    tot: dict[tuple[str, int, str], int] = {}
    for task, key, t_out, t_in in sim.offcpu:
        if t_out >= t0 and t_in <= t0 + END_T and t_in - t_out >= US:
            k = (task.comm, task.pid, key)
            tot[k] = tot.get(k, 0) + (t_in - t_out) // US
    return tot


def render_offcpu(sim: Sim, t0: int) -> str:
    out = [f"Tracing off-CPU time (us) of all threads by user + kernel stack for {END_T // SEC} secs.\n", "\n"]
    for (comm, pid, key), us in sorted(offcpu_totals(sim, t0).items(), key=lambda kv: (kv[1], kv[0])):
        kernel, user = STACKS[key]
        out.extend(f"    {f}\n" for f in kernel + user)
        out.append("    %-16s %s (%d)\n" % ("-", comm, pid))
        out.append(f"        {us}\n\n")
    return "".join(out)


def _check_cpus(trace: str) -> None:
    """Every line of a CPU is written by the task that the CPU's switches say is running there."""
    cur: dict[int, str] = {}
    for n, line in enumerate(trace.splitlines(), 1):
        if line.startswith(("#", "cpus=")):
            continue
        head, body = line.split("]", 1)
        who, cpu = head.rsplit("[", 1)
        who, c = who.strip(), int(cpu)
        comm, pid = who.rsplit("-", 1)
        me = "0" if pid == "0" else pid
        if c in cur and cur[c] != me:
            raise AssertionError(f"line {n}: {who} writes on CPU {c} while {cur[c]} runs there")
        if "sched_switch:" in body:
            prev, nxt = body.split("task ", 1)[1].split(" ==> ")
            if prev.split(" [")[0].rsplit(":", 1)[1] != me:
                raise AssertionError(f"line {n}: {who} switches out a task that is not running")
            cur[c] = nxt.split(" [")[0].rsplit(":", 1)[1]
        else:
            cur[c] = me


def _check_story(sim: Sim) -> None:
    """The incident happened as the module's docstring tells it."""
    st, wm = sim.story, sim.story["wm"]
    assert wm.i < st["conv_block"] < st["reader_block"] < st["writer_block"] < wm.d < wm.c < st["logd_wake"]
    assert st["logd_wake"] < st["conv_wake"] < st["reader_wake"] < st["writer_in"]
    assert W0 < st["conv_block"] and st["writer_in"] < W1
    keys = [key for _, key, _, _ in sim.offcpu]
    assert keys.count("conv_buf") == keys.count("fr_ilock") == keys.count("fw_stall") == 1
    # the metadata write is the last completion before xfslogd's wake-up of xfsconvertd/0
    done = sorted(e[0] for e in sim.blk if e[4] == "C")
    assert done[bisect.bisect_right(done, st["logd_wake"]) - 1] == wm.c


def build(seed: int = SEED) -> tuple[str, str, str]:
    sim = simulate(seed)
    _check_story(sim)
    t0 = min(e[0] for e in sim.blk)  # blkparse counts from the trace's first event
    blk = render_blkparse(sim, t0)
    trace = render_trace(sim, t0)
    _check_cpus(trace)
    return blk, trace, render_offcpu(sim, t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="directory (default: samples/)")
    a = ap.parse_args()
    blk, trace, offcpu = build()
    a.out.mkdir(parents=True, exist_ok=True)
    for name, text in ((BLK, blk), (TRACE, trace), (OFFCPU, offcpu)):
        (a.out / name).write_text(text)
        print(f"{a.out / name}: {text.count(chr(10))} lines")


if __name__ == "__main__":
    main()
