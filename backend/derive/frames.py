"""What a stack's frames are (known lock functions, I/O completions, scheduler plumbing) and how waits and links
describe tasks, times and stacks in their evidence. Each frame's kind is looked up once per derivation (FrameKinds,
made and passed by the derivation that reads the stacks)."""

from __future__ import annotations

from typing import NamedTuple

from .. import locks

# functions that complete block I/O (bio/request end, buffer and page end-of-I/O, fs completion work)
IO_COMPLETION = frozenset(
    {
        "bio_endio",
        "blk_mq_end_request",
        "__blk_mq_end_request",
        "blk_update_request",
        "blk_mq_complete_request",
        "blk_complete_reqs",
        "blk_done_softirq",
        "blk_end_request",
        "__blk_end_request",
        "blk_end_request_all",
        "req_bio_endio",
        "scsi_io_completion",
        "scsi_end_request",
        "nvme_complete_rq",
        "nvme_pci_complete_rq",
        "end_bio_bh_io_sync",
        "end_buffer_write_sync",
        "end_buffer_read_sync",
        "end_buffer_async_write",
        "end_buffer_async_read",
        "end_page_writeback",
        "folio_end_writeback",
        "mpage_end_io",
        "iomap_finish_ioend",
        "iomap_finish_ioends",
        "xfs_buf_iodone_work",
        "xfs_buf_ioend",
        "xfs_buf_ioend_work",
        "xfs_buf_iodone",
        "xfs_buf_bio_end_io",
        "xfs_end_io",
        "xfs_end_bio",
        "xfs_end_ioend",
        "ext4_end_bio",
        "ext4_end_io_rsv_work",
        "dio_bio_end_io",
        "dio_bio_end_aio",
        "blkdev_bio_end_io",
        "iomap_dio_bio_end_io",
    }
) | frozenset(next(p for p in locks.PRIMITIVES if p.name == "I/O").release)

# scheduler plumbing: never the reason of a wait
_PLUMBING = frozenset(
    {
        "schedule",
        "__schedule",
        "schedule_timeout",
        "schedule_hrtimeout",
        "schedule_hrtimeout_range",
        "schedule_hrtimeout_range_clock",
        "schedule_preempt_disabled",
        "preempt_schedule",
        "preempt_schedule_common",
        "preempt_schedule_irq",
        "finish_task_switch",
        "context_switch",
        "__switch_to",
        "__switch_to_asm",
        "prepare_to_wait",
        "prepare_to_wait_event",
        "prepare_to_wait_exclusive",
        "finish_wait",
        "pick_next_task",
        "pick_next_task_fair",
        "dequeue_task",
        "dequeue_task_fair",
        "deactivate_task",
        "_cond_resched",
        "__cond_resched",
        "psi_task_switch",
        "rcu_note_context_switch",
        "__math_state_restore",
    }
)
_IDLE_COMMS = ("<idle>", "swapper")


def duration_text(ns: int | None) -> str:
    if ns is None:
        return "?"
    return f"{ns / 1e6:.3f} ms" if abs(ns) >= 1_000_000 else f"{ns / 1e3:.1f} µs"


def time_text(ns: int | None) -> str:
    return "?" if ns is None else f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}".rstrip("0").rstrip(".")


def task_text(comm, pid) -> str:
    """ "comm (pid)"; a CPU's pseudo-task (pid < 0, cpu_tasks.py) by its name alone: "CPU n (task unknown)"."""
    return comm if pid is not None and pid < 0 and comm else f"{comm or '?'} ({pid})"


def is_idle_task(pid, comm) -> bool:
    return pid == 0 or (comm or "").startswith(_IDLE_COMMS)


class Kind(NamedTuple):
    """What a frame is (FrameKinds.of)."""

    base: str  # its function's name (locks.base_name)
    hit: tuple | None  # (primitive, role) of a known lock function (locks.lookup), else None
    mark: int  # 2: an I/O completion function, 1: a lock release function, 0: any other
    waiting: bool  # takes or sleeps on a known lock
    obj: bool  # a function of an object's lock
    own: bool  # an object's own function (not a sleep function objects share: see locks.py)
    plain: bool  # not scheduler plumbing (can be the reason of a wait)


class FrameKinds:
    """What each frame of the stacks is, looked up once per derivation (a trace's stacks repeat the same functions):
    one is made for an ingest's waits and chains (derive/pipeline.py, waits_chains_and_timeline) and for each relink
    of an analysis' chains (chains.relink), passed to what reads the stacks (wait_locks, stacks, waits, chains), and
    dropped with it: no look-up outlives its derivation."""

    def __init__(self) -> None:
        self._kinds: dict[str, Kind] = {}
        self._reasons: dict[tuple, tuple] = {}

    def of(self, frame: str) -> Kind:
        kind = self._kinds.get(frame)
        if kind is None:
            kind = self._kinds[frame] = _kind(frame)
        return kind

    def base_name(self, frame: str) -> str:
        return self.of(frame).base

    def is_io_completion(self, frame: str) -> bool:
        return self.of(frame).mark == 2

    def io_completion_in(self, frames) -> str | None:
        """The base name of the innermost I/O completion function of a stack (root first), else None."""
        f = next(filter(self.is_io_completion, reversed(frames or ())), None)
        return None if f is None else self.of(f).base

    def lock_reason(self, prim: str | None, obj: str | None, innermost: str) -> tuple[str, str, str, str | None]:
        """(label, key, primitive name, object primitive name) of a wait from its stack's outermost primitive, its
        innermost object and its innermost frame that takes or sleeps on a lock (Stacks.reasons)."""
        key = (prim, obj, innermost)
        reason = self._reasons.get(key)
        if reason is None:
            label = locks.label(tuple(f for f in (prim, obj) if f is not None))
            name = self.of(obj).hit[0].name if obj is not None else None
            reason = (label, (label.split(" via ", 1)[0] if name else label), name or self.of(innermost).hit[0].name)
            reason = self._reasons[key] = (*reason, name)
        return reason

    def waker_path(self, frames) -> str:
        """The waker's stack from its innermost I/O completion frame on, else from its outermost lock release frame
        (else its last 3)."""
        frames = list(frames or ())
        marks = [self.of(f).mark for f in frames]
        if 2 in marks:
            start = len(marks) - 1 - marks[::-1].index(2)
        elif 1 in marks:
            start = marks.index(1)
        else:
            start = max(0, len(frames) - 3)
        shown = frames[start : start + 4]
        return " → ".join(shown) + (" → …" if start + 4 < len(frames) else "") if shown else "?"


def _kind(frame: str) -> Kind:
    base, hit = locks.base_name(frame), locks.lookup(frame)
    role = hit[1] if hit is not None else None
    obj = hit is not None and hit[0].kind == "object"
    return Kind(
        base=base,
        hit=hit,
        mark=2 if base in IO_COMPLETION else int(role == "release"),
        waiting=hit is not None and role != "release",
        obj=obj,
        own=obj and role == "acquire",
        plain=base not in _PLUMBING,
    )
