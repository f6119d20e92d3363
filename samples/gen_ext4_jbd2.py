"""Writes a small, deterministic capture of an ext4/jbd2 journal stall: a `trace-cmd report` text, and the
blkparse text and the bcc offwaketime output of the same moment.

    python -m samples.gen_ext4_jbd2            # writes the three files below into samples/
    python -m samples.gen_ext4_jbd2 --out DIR

* samples/ext4-jbd2-commit.trace-cmd-report.txt: function_graph (funcgraph_entry/exit, plugin form),
  sched_switch (key=value form, `prev_comm=... ==> next_comm=...`), sched_waking/sched_wakeup
  (`comm=... pid=... prio=... target_cpu=...`), one `print` marker.
* samples/ext4-jbd2-commit.blkparse.txt: blkparse default text of sda (8,0) for the same window.
* samples/ext4-jbd2-commit.offwaketime.txt: `offwaketime -K` (current bcc multi-line output, `waker: comm pid`)
  for the same window: the three waits that end in a wake-up, with the waker's stack (see offwaketime()).

What happens (modelled on the kernel's code paths; timestamps are synthetic): `jbd2/sda1-8` (pid 312)
commits the running transaction (`jbd2_journal_commit_transaction`): it writes the journal blocks, submits
the commit record (a FUA write, sector 1465352 + 8) and sleeps in `io_schedule` (state D) under
`journal_wait_on_commit_record` → `__wait_on_buffer`. Meanwhile two `postgres` backends (4242, then 4251)
write to a file (`ext4_file_write_iter` → ... → `jbd2__journal_start` → `start_this_handle` →
`add_transaction_credits` → `wait_transaction_locked`) and sleep (D) until the commit is done. The disk
completes the commit record after 13.37 ms: the interrupt, taken on the idle CPU 3, runs
`blk_mq_end_request` → `bio_endio` → `end_bio_bh_io_sync` → `end_buffer_write_sync` → `unlock_buffer`
→ `wake_up_bit` and wakes jbd2 (sched_waking from `<idle>-0`), which finishes the commit and wakes both
backends (`__wake_up` → ... → `try_to_wake_up`). Other requests complete near that moment (a postgres
read 26 µs earlier) so that matching the completion to the wake-up has to choose.

Times in the blkparse file are written on the ftrace clock (seconds since boot), as they are once the
two captures are aligned (clock offset 0): the linked request is the commit record, completed 9.6 µs before
the interrupt's wake-up of jbd2.

Expected chain: postgres (4242) waits 13.268 ms in wait_transaction_locked, woken_by jbd2/sda1-8 (312),
whose wait in `__wait_on_buffer via I/O` ends by io_completion (the irq on CPU 3), matched to the request
8,0 WFS 1465352 + 8; postgres (4251) is also waiting.
"""
from __future__ import annotations

import argparse
from pathlib import Path

OUT = Path(__file__).resolve().parent
TRACE = "ext4-jbd2-commit.trace-cmd-report.txt"
BLK = "ext4-jbd2-commit.blkparse.txt"
OFFWAKE = "ext4-jbd2-commit.offwaketime.txt"
BASE_US = 7_341_200_000  # µs since boot of the first event
# µs after BASE_US: jbd2 switches out waiting for its commit record; the backends' write() calls begin (they
# switch out 7 µs later); the disk interrupt starts on CPU 3 (it wakes jbd2 1 µs later, jbd2 runs 7 µs later
# and wakes 4242 and 4251 at +6 and +7 µs)
JBD2_SLEEP, PG_WRITE, PG2_WRITE, IRQ = 1500, 1613, 4021, 14_872
# the calls that lead to try_to_wake_up: the disk interrupt's (it wakes jbd2) and jbd2's (it wakes the backends)
IRQ_WAKE = ("handle_irq_event", "ahci_single_level_irq_intr", "ahci_handle_port_intr", "ata_qc_complete_multiple",
            "ata_scsi_qc_complete", "scsi_done", "blk_mq_complete_request", "scsi_io_completion", "scsi_end_request",
            "blk_update_request", "bio_endio", "end_bio_bh_io_sync", "end_buffer_write_sync", "unlock_buffer",
            "wake_up_bit", "__wake_up_bit", "__wake_up_common", "wake_bit_function", "autoremove_wake_function")
JBD2_WAKE = ("__wake_up", "__wake_up_common_lock", "__wake_up_common", "autoremove_wake_function")

JBD2 = ("jbd2/sda1-8", 312, 3)
PG = ("postgres", 4242, 1)
PG2 = ("postgres", 4251, 2)
IDLE3 = ("<idle>", 0, 3)


class Trace:
    """Lines of a trace-cmd report; keeps each task's open calls to print exits with their durations."""

    def __init__(self):
        self.lines: list[tuple[int, int, str]] = []  # (t_us, seq, text)
        self.open: dict[tuple, list[tuple[str, int]]] = {}

    def _head(self, task, t_us: int) -> str:
        comm, pid, cpu = task
        return f"{comm + '-' + str(pid):>20} [{cpu:03d}] {t_us // 1_000_000}.{t_us % 1_000_000:06d}:"

    def add(self, task, t_us: int, text: str) -> None:
        self.lines.append((t_us, len(self.lines), f"{self._head(task, t_us)} {text}"))

    def enter(self, task, t_us: int, *funcs: str) -> int:
        for f in funcs:
            st = self.open.setdefault(task[:2], [])
            self.add(task, t_us, f"funcgraph_entry:                   |  {'  ' * len(st)}{f}() {{")
            st.append((f, t_us))
        return t_us

    def leaf(self, task, t_us: int, func: str, dur_ns: int) -> int:
        st = self.open.setdefault(task[:2], [])
        self.add(task, t_us, f"funcgraph_entry:      {_mark(dur_ns)}{dur_ns / 1000:8.3f} us |  {'  ' * len(st)}{func}();")
        return t_us

    def leave(self, task, t_us: int, n: int = 1, extra_ns: int = 0) -> int:
        st = self.open[task[:2]]
        for k in range(n):
            f, t0 = st.pop()
            dur = (t_us - t0) * 1000 + extra_ns * (k + 1)
            self.add(task, t_us, f"funcgraph_exit:       {_mark(dur)}{dur / 1000:8.3f} us |  {'  ' * len(st)}}}")
        return t_us

    def text(self) -> str:
        return "".join(line + "\n" for _, _, line in sorted(self.lines))


def _mark(ns: int) -> str:
    us = ns / 1000
    for lim, m in ((1e6, "$"), (1e5, "@"), (1e4, "*"), (1e3, "#"), (100, "!"), (10, "+")):
        if us > lim:
            return m + " "
    return "  "


def _switch(tr: Trace, cpu: int, t: int, prev, state: str, nxt) -> None:
    task = (prev[0] if prev[1] else "<idle>", prev[1], cpu)
    tr.add(task, t, f"sched_switch:         prev_comm={prev[0]} prev_pid={prev[1]} prev_prio=120 prev_state={state}"
                    f" ==> next_comm={nxt[0]} next_pid={nxt[1]} next_prio=120")


def _waking(tr: Trace, waker, t: int, woken, event: str = "sched_waking") -> None:
    tr.add(waker, t, f"{event + ':':<21} comm={woken[0]} pid={woken[1]} prio=120 target_cpu={woken[2]:03d}")


def _writer_sleeps(tr: Trace, pg, t: int) -> int:
    """A postgres backend's write() that blocks joining the running transaction."""
    tr.enter(pg, t, "ext4_file_write_iter", "ext4_buffered_write_iter")
    tr.leaf(pg, t + 1, "file_modified", 812)
    tr.enter(pg, t + 2, "generic_perform_write", "ext4_da_write_begin")
    tr.leaf(pg, t + 3, "grab_cache_page_write_begin", 1210)
    tr.enter(pg, t + 4, "__ext4_journal_start_sb", "jbd2__journal_start", "start_this_handle")
    tr.leaf(pg, t + 5, "_raw_read_lock", 95)
    tr.enter(pg, t + 5, "add_transaction_credits", "wait_transaction_locked")
    tr.leaf(pg, t + 6, "prepare_to_wait_event", 240)
    tr.enter(pg, t + 6, "schedule")
    return t + 7


def _writer_resumes(tr: Trace, pg, t: int) -> int:
    tr.leaf(pg, t, "finish_task_switch", 1105)
    tr.leave(pg, t + 1, 1, 377)  # schedule
    tr.leaf(pg, t + 2, "finish_wait", 310)
    tr.leave(pg, t + 2, 2, 521)  # wait_transaction_locked, add_transaction_credits
    tr.leaf(pg, t + 3, "jbd2_get_transaction", 2400)
    tr.leave(pg, t + 6, 3, 844)  # start_this_handle, jbd2__journal_start, __ext4_journal_start_sb
    tr.leaf(pg, t + 7, "ext4_block_write_begin", 4711)
    tr.leave(pg, t + 12, 1, 35)  # ext4_da_write_begin
    tr.enter(pg, t + 12, "ext4_da_write_end")
    tr.leaf(pg, t + 13, "block_write_end", 911)
    tr.leaf(pg, t + 14, "jbd2_journal_stop", 1822)
    tr.leave(pg, t + 16)
    tr.leave(pg, t + 17, 3, 250)  # generic_perform_write, ext4_buffered_write_iter, ext4_file_write_iter
    return t + 17


def build() -> tuple[str, str]:
    tr = Trace()
    b = BASE_US
    # jbd2 commits: journal blocks, then the commit record, then waits for it
    tr.enter(JBD2, b, "kjournald2", "jbd2_journal_commit_transaction")
    tr.leaf(JBD2, b + 2, "jbd2_journal_switch_revoke_table", 331)
    tr.enter(JBD2, b + 3, "jbd2_journal_write_metadata_buffer")
    tr.leaf(JBD2, b + 5, "jbd2_journal_next_log_block", 1407)
    tr.leave(JBD2, b + 9, 1, 212)
    tr.enter(JBD2, b + 10, "submit_bh", "submit_bh_wbc", "submit_bio")
    tr.leaf(JBD2, b + 12, "blk_mq_submit_bio", 5120)
    tr.leave(JBD2, b + 18, 3, 101)
    tr.enter(JBD2, b + 1380, "journal_submit_commit_record", "submit_bh", "submit_bh_wbc", "submit_bio")
    tr.leaf(JBD2, b + 1381, "blk_mq_submit_bio", 6310)
    tr.leave(JBD2, b + 1388, 4, 64)
    tr.enter(JBD2, b + 1400, "journal_wait_on_commit_record", "__wait_on_buffer", "out_of_line_wait_on_bit",
             "__wait_on_bit", "bit_wait_io", "io_schedule", "schedule")
    t_jsleep = b + JBD2_SLEEP
    _switch(tr, 3, t_jsleep, JBD2, "D", ("swapper/3", 0))

    # two backends block on the locked transaction
    t = _writer_sleeps(tr, PG, b + PG_WRITE)
    _switch(tr, 1, t, PG, "D", ("swapper/1", 0))
    pg_sleep = t
    tr.add(PG2, b + 4020, "print:                tracing_mark_write: checkpoint-flush start")
    t = _writer_sleeps(tr, PG2, b + PG2_WRITE)
    _switch(tr, 2, t, PG2, "D", ("swapper/2", 0))

    # the commit record completes: the interrupt on idle CPU 3 wakes jbd2
    t = b + IRQ
    tr.enter(IDLE3, t, *IRQ_WAKE, "try_to_wake_up")
    _waking(tr, IDLE3, t + 1, JBD2)
    tr.leaf(IDLE3, t + 1, "ttwu_do_activate", 1633)
    _waking(tr, IDLE3, t + 3, JBD2, "sched_wakeup")
    tr.leave(IDLE3, t + 4, 20, 410)
    _switch(tr, 3, t + 6, ("swapper/3", 0), "R", JBD2)
    t += 7
    tr.leaf(JBD2, t, "finish_task_switch", 1290)
    tr.leave(JBD2, t + 1, 1, 120)  # schedule
    tr.leave(JBD2, t + 2, 6, 260)  # io_schedule ... journal_wait_on_commit_record
    tr.leaf(JBD2, t + 3, "__jbd2_journal_refile_buffer", 702)
    tr.enter(JBD2, t + 5, *JBD2_WAKE, "try_to_wake_up")
    _waking(tr, JBD2, t + 6, PG)
    _waking(tr, JBD2, t + 7, PG2)
    tr.leave(JBD2, t + 8, 5, 330)
    _switch(tr, 1, t + 9, ("swapper/1", 0), "R", PG)
    pg_wake = _writer_resumes(tr, PG, t + 10)
    _switch(tr, 2, t + 11, ("swapper/2", 0), "R", PG2)
    _writer_resumes(tr, PG2, t + 12)
    tr.leaf(JBD2, t + 20, "jbd2_journal_free_transaction", 1530)
    tr.leave(JBD2, t + 22, 1, 480)  # jbd2_journal_commit_transaction
    tr.leaf(JBD2, t + 23, "prepare_to_wait", 140)
    tr.enter(JBD2, t + 24, "schedule")
    _switch(tr, 3, t + 25, JBD2, "S", ("swapper/3", 0))
    assert pg_wake > pg_sleep

    # blkparse of sda for the same window (µs timestamps + ns detail; on the ftrace clock)
    def ts(us: int, ns: int) -> str:
        return f"{us // 1_000_000}.{us % 1_000_000:06d}{ns:03d}"

    blk: list[tuple[str, int, str, int, str]] = []  # (time, cpu, pid, action/rwbs/rest)

    def req(cpu, pid, comm, rwbs, sector, n, q, d, c, c_cpu):
        blk.extend([
            (q, cpu, pid, "Q", f"{rwbs:>3} {sector} + {n} [{comm}]"),
            (q + "g", cpu, pid, "G", f"{rwbs:>3} {sector} + {n} [{comm}]"),
            (q + "i", cpu, pid, "I", f"{rwbs:>3} {sector} + {n} [{comm}]"),
            (d, cpu, pid, "D", f"{rwbs:>3} {sector} + {n} [{comm}]"),
            (c, c_cpu, 0, "C", f"{rwbs:>3} {sector} + {n} [0]"),
        ])

    # journal blocks of the commit (jbd2), a postgres read, the commit record (FUA), a later kworker write
    req(3, 312, "jbd2/sda1-8", "WS", 1465296, 56, ts(b + 14, 221), ts(b + 16, 870), ts(b + 1_297, 455), 3)
    req(1, 4242, "postgres", "RS", 88213504, 16, ts(b + 12_990, 12), ts(b + 12_992, 604), ts(b + 14_846, 377), 1)
    req(3, 312, "jbd2/sda1-8", "WFS", 1465352, 8, ts(b + 1_385, 540), ts(b + 1_502, 77), ts(b + 14_863, 402), 3)
    req(0, 511, "kworker/u16:3", "W", 311472128, 8, ts(b + 14_880, 901), ts(b + 14_882, 330), ts(b + 15_920, 58), 0)

    def key(e):
        t = e[0].rstrip("gi")
        return (t, {"Q": 0, "G": 1, "I": 2, "D": 3, "C": 4}[e[3]])

    out, seq = [], {}
    for tstr, cpu, pid, act, rest in sorted(blk, key=key):
        t = tstr.rstrip("gi")
        # G and I follow Q within a few hundred ns
        if tstr.endswith("g") or tstr.endswith("i"):
            us, frac = t.split(".")
            ns = int(frac) + (300 if tstr.endswith("g") else 900)
            t = f"{us}.{ns:09d}"
        seq[cpu] = seq.get(cpu, 0) + 1
        out.append(f"  8,0   {cpu:2d} {seq[cpu]:8d} {t:>14} {pid:5d}  {act} {rest}\n")
    return tr.text(), "".join(out)


def offwaketime() -> str:
    """bcc `offwaketime -K` (kernel stacks, current multi-line output) run over the same moment: the three waits
    that end in a wake-up, each with the waker's stack at try_to_wake_up (bcc drops that innermost frame) and
    the µs from the switch-out to the wake-up. Stacks are the calls open in the trace, completed with the
    frames below the traced ones (kthread entry, the write() system call) and the scheduler's leaf frames."""
    kthread = ("ret_from_fork", "kthread", "kjournald2", "jbd2_journal_commit_transaction")
    write = ("entry_SYSCALL_64_after_hwframe", "do_syscall_64", "ksys_write", "vfs_write", "ext4_file_write_iter",
             "ext4_buffered_write_iter", "generic_perform_write", "ext4_da_write_begin", "__ext4_journal_start_sb",
             "jbd2__journal_start", "start_this_handle", "add_transaction_credits", "wait_transaction_locked",
             "schedule", "__schedule")
    commit_wait = kthread + ("journal_wait_on_commit_record", "__wait_on_buffer", "out_of_line_wait_on_bit",
                             "__wait_on_bit", "bit_wait_io", "io_schedule", "schedule", "__schedule")
    jbd2_runs = IRQ + 7  # jbd2 is switched in; it wakes 4242 at +6 µs, 4251 at +7 µs
    records = [  # (waker, waker frames root first, target, target frames root first, µs blocked until the wake-up)
        (("swapper/3", 0), ("secondary_startup_64_no_verify", "cpu_startup_entry", "do_idle", "asm_common_interrupt",
                            "common_interrupt", "handle_edge_irq") + IRQ_WAKE,
         JBD2, commit_wait, IRQ + 1 - JBD2_SLEEP),
        (JBD2[:2], kthread + JBD2_WAKE, PG, write, jbd2_runs + 6 - (PG_WRITE + 7)),
        (JBD2[:2], kthread + JBD2_WAKE, PG2, write, jbd2_runs + 7 - (PG2_WRITE + 7)),
    ]
    out = ["Tracing blocked time (us) by kernel off-CPU and waker stack... Hit Ctrl-C to end.", "^C"]
    for waker, wframes, target, tframes, us in sorted(records, key=lambda r: r[-1]):  # bcc: largest last
        out.append("")
        out.append(f"    {'waker:':<16} {waker[0]} {waker[1]}")
        out += [f"    {f}" for f in wframes]
        out.append(f"    {'--':<16} --")
        out += [f"    {f}" for f in reversed(tframes)]
        out.append(f"    {'target:':<16} {target[0]} {target[1]}")
        out.append(f"        {us}")
    return "\n".join(out) + "\n\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="directory (default: samples/)")
    a = ap.parse_args()
    trace, blk = build()
    wake = offwaketime()
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / TRACE).write_text(trace)
    (a.out / BLK).write_text(blk)
    (a.out / OFFWAKE).write_text(wake)
    print(f"{a.out / TRACE}: {trace.count(chr(10))} lines; {a.out / BLK}: {blk.count(chr(10))} lines;"
          f" {a.out / OFFWAKE}: {wake.count(chr(10))} lines")


if __name__ == "__main__":
    main()
