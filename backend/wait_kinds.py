"""Why a task waited: every wait's kind and the rule that says so, decided once at derive time (derive/waits.py) from
its stack, its state and its lock (locks.py), and stored with it (`wait_rows.wait_kind`, `wait_rule`).

A stall is a wait something caused. The kinds:
* `lock`: blocked on a lock another task holds (mutex, rwsem, semaphore, an object's lock of locks.py);
* `io`: waiting for the device (a read, a write-back, a buffer under I/O, a journal commit, a request tag);
* `memory`: waiting for memory (direct reclaim, compaction, dirty-page or write-back throttling, swap-in);
* `task`: waiting for another task to finish something (a completion, a FUSE daemon's answer);
* `idle`: a thread waiting for work, not a stall: workqueue and kthread idle loops, RCU grace-period threads, a
  user thread asleep in epoll, poll, select, a futex or a nanosleep, a parent waiting for its child;
* `other`: an uninterruptible sleep no rule explains (a stall of unknown cause: its stack says more).

RULES is the one table: the first rule that matches a wait names it. A rule matches when every condition it has
holds: `frames` (any frame of the stack is one of these functions), `innermost` (the innermost frame that is not
scheduler plumbing, the wait's lock key when no lock of locks.py is on the stack, is one of these), `primitives` (the
locks.py entry the wait's lock came from is one of these) and `sleep` ("not D": its state is not D, or unknown, as a
call wait's is; "interruptible": its state is known and not D; "any").
Functions are matched after locks.base_name (`do_poll.constprop.0` is `do_poll`). Extend it by adding a rule before
the fallbacks; each rule is tested on a real capture (tests/test_wait_kinds.py).

Idle waits stay out of the ranked lists (/waits, the Stalls tab), the waits' heatmaps and the chains' first links by
default (the view `stall_waits`); /waits?idle=true lists them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .locks import base_name

KINDS = ("lock", "io", "memory", "task", "idle", "other")


@dataclass(frozen=True)
class Rule:
    name: str  # what the UI shows beside the kind, e.g. "buffer under I/O"
    kind: str  # one of KINDS
    why: str  # one sentence: what such a wait is
    frames: frozenset[str] = frozenset()
    innermost: frozenset[str] = frozenset()
    primitives: frozenset[str] = frozenset()
    sleep: str = "any"  # "any" | "not D" (S, I, W..., or unknown: a call wait) | "interruptible" (known, not D)


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


# kernel threads' loops that wait for work (their innermost frame when idle)
_KTHREAD_LOOPS = _f(
    "worker_thread",
    "rescuer_thread",
    "kthreadd",
    "kthread_worker_fn",
    "smpboot_thread_fn",
    "rcu_gp_kthread",
    "rcu_gp_fqs_loop",
    "rcu_tasks_kthread",
    "rcu_boost_kthread",
    "rcu_cpu_kthread",
    "rcu_nocb_gp_kthread",
    "rcu_nocb_cb_kthread",
    "kcompactd",
    "kswapd",
    "kswapd_try_to_sleep",
    "khugepaged",
    "khugepaged_wait_work",
    "kjournald2",
    "xfsaild",
    "irq_thread",
    "kauditd_thread",
    "oom_reaper",
    "watchdog",
    "hungtask_pm_notify",
    "watchdog_dev_kthread",
    "ksm_scan_thread",
    "kthread_park",
    "devtmpfsd",
    "kmmpd",
    "ext4_lazyinit_thread",
    "wb_workfn",
    "balloon",
    "hwrng_fillfn",
    "ring_buffer_wait",
    "fuse_dev_do_read",
)
# a user thread asleep until an event (its innermost frame)
_EVENT_WAITS = _f(
    "ep_poll",
    "do_epoll_wait",
    "do_poll",
    "do_sys_poll",
    "do_select",
    "core_sys_select",
    "futex_wait_queue_me",
    "futex_wait_queue",
    "futex_wait",
    "__futex_wait",
    "do_nanosleep",
    "hrtimer_nanosleep",
    "clock_nanosleep",
    "do_sigtimedwait",
    "sigsuspend",
    "sys_pause",
    "__x64_sys_pause",
    "pipe_read",
    "pipe_write",
    "wait_woken",
    "sk_wait_data",
    "unix_stream_read_generic",
    "unix_stream_data_wait",
    "inet_csk_accept",
    "inet_csk_wait_for_connect",
    "n_tty_read",
    "tty_read",
    "read_events",
    "io_cqring_wait",
    "inotify_read",
    "signalfd_dequeue",
    "timerfd_read",
    "eventfd_read",
    "do_msgrcv",
)

RULES: tuple[Rule, ...] = (
    Rule(
        "direct reclaim",
        "memory",
        "allocating memory, the task reclaimed or compacted pages itself and slept doing so",
        frames=_f(
            "try_to_free_pages",
            "do_try_to_free_pages",
            "__perform_reclaim",
            "__alloc_pages_direct_reclaim",
            "__alloc_pages_direct_compact",
            "throttle_direct_reclaim",
            "reclaim_throttle",
            "try_to_free_mem_cgroup_pages",
            "mem_cgroup_handle_over_high",
            "shrink_node",
            "shrink_lruvec",
            "mem_cgroup_oom_synchronize",
            "out_of_memory",
        ),
    ),
    Rule(
        "dirty-page throttling",
        "memory",
        "writing, the task was held back until write-back caught up with its dirty pages (balance_dirty_pages)",
        frames=_f("balance_dirty_pages", "balance_dirty_pages_ratelimited", "balance_dirty_pages_ratelimited_flags"),
    ),
    Rule(
        "write-back throttling",
        "memory",
        "the block layer's write-back throttling (blk-wbt, rq-qos) held the request back",
        frames=_f("wbt_wait", "rq_qos_wait", "__rq_qos_throttle", "rq_qos_throttle", "blkcg_maybe_throttle_current"),
    ),
    Rule(
        "swap-in",
        "memory",
        "a page the task touched was swapped out: it waited for it to be read back",
        frames=_f("do_swap_page", "swap_readpage", "swap_read_folio", "swapin_readahead"),
    ),
    Rule(
        "page write-back",
        "io",
        "waiting for a page's write-back to the device to complete",
        frames=_f(
            "folio_wait_writeback",
            "wait_on_page_writeback",
            "__filemap_fdatawait_range",
            "filemap_fdatawait_range",
            "filemap_fdatawait_keep_errors",
            "folio_wait_stable",
            "wait_for_stable_page",
        ),
    ),
    Rule(
        "buffer under I/O",
        "io",
        "waiting for a buffer_head's read or write: the buffer is unlocked when its I/O completes",
        frames=_f("__wait_on_buffer", "wait_on_buffer", "bh_submit_read", "__bread_slow", "__sync_dirty_buffer"),
    ),
    Rule(
        "page read",
        "io",
        "waiting for a page being read from the device (its read unlocks it)",
        frames=_f(
            "wait_on_page_read",
            "wait_on_page_locked",
            "wait_on_page_locked_killable",
            "folio_wait_locked",
            "folio_wait_locked_killable",
            "filemap_read_folio",
            "filemap_read_page",
        ),
    ),
    Rule(
        "journal commit",
        "io",
        "waiting for a journal commit, which waits for its writes (ext4/jbd2, XFS log force)",
        frames=_f(
            "jbd2_log_wait_commit",
            "jbd2_complete_transaction",
            "jbd2_journal_force_commit",
            "xfs_log_force",
            "xfs_log_force_lsn",
            "_xfs_log_force",
            "xlog_wait_on_iclog",
            "xlog_wait",
        ),
    ),
    Rule(
        "request tag",
        "io",
        "no free request tag: the device's queue was full",
        frames=_f("blk_mq_get_tag"),
    ),
    Rule(
        "hypervisor file call",
        "io",
        "a shared-folder or 9p file operation waiting for the host (vboxsf, 9p)",
        frames=_f("vboxsf_call", "p9_client_rpc", "p9_client_zc_rpc"),
    ),
    Rule(
        "io_schedule",
        "io",
        "slept in io_schedule: the kernel counts the wait as I/O wait",
        frames=_f(
            "io_schedule",
            "io_schedule_timeout",
            "bit_wait_io",
            "wait_for_completion_io",
            "wait_for_completion_io_timeout",
            "blk_execute_rq",
            "submit_bio_wait",
        ),
    ),
    Rule(
        "lock held",
        "lock",
        "blocked on a lock another task holds",
        primitives=_f(
            "mutex",
            "rwsem (read)",
            "rwsem (write)",
            "semaphore",
            "xfs_ilock",
            "xfs_buf_lock",
            "page lock",
            "page bit",
            "buffer lock",
            "jbd2 handle",
            "inode rwsem",
        ),
    ),
    Rule(
        "completion",
        "task",
        "waiting for another task to complete something (struct completion)",
        primitives=_f("completion"),
    ),
    Rule(
        "FUSE answer",
        "task",
        "waiting for the FUSE daemon to answer a file operation",
        innermost=_f("request_wait_answer", "fuse_wait_on_page_writeback"),
    ),
    Rule(
        "kernel thread idle",
        "idle",
        "a kernel thread's loop waiting for work (workqueue worker, RCU grace-period thread, kthreadd, per-CPU thread)",
        innermost=_KTHREAD_LOOPS,
    ),
    Rule(
        "waiting for an event",
        "idle",
        "a thread asleep until something happens (epoll, poll, select, a futex, a nanosleep, a pipe, a socket)",
        innermost=_EVENT_WAITS,
        sleep="not D",
    ),
    Rule(
        "waiting for a child",
        "idle",
        "a parent waiting for its child to exit (wait4, waitpid): the child's own waits say why it took long",
        innermost=_f("do_wait", "kernel_waitid", "kernel_wait4"),
        sleep="not D",
    ),
    Rule(
        "interruptible sleep",
        "idle",
        "asleep interruptibly on no known lock: a wait for an event, not a stall",
        sleep="interruptible",
    ),
    Rule(
        "unexplained sleep",
        "other",
        "asleep uninterruptibly (D), or in a call whose state the trace does not show, on nothing a rule knows: see"
        " its stack",
    ),
)
_FALLBACK = RULES[-1]


def asleep_as(rule: Rule, state: str | None) -> bool:
    """The wait's state is one the rule takes (a call wait has none: "not D" takes it, "interruptible" does not)."""
    if rule.sleep == "any":
        return True
    if state is None:
        return rule.sleep == "not D"
    return not state.startswith("D")


def _first(masks: int, state: str | None, primitive: str | None, inner: str | None) -> Rule:
    """classify, with the rules whose `frames` the stack holds given as bits of `masks` (bit r: RULES[r])."""
    for r, rule in enumerate(RULES):
        if (
            (not rule.frames or masks >> r & 1)
            and (not rule.innermost or inner in rule.innermost)
            and (not rule.primitives or primitive in rule.primitives)
            and asleep_as(rule, state)
        ):
            return rule
    return _FALLBACK


def classify(frames: Iterable[str], state: str | None, primitive: str | None, lock_key: str | None) -> Rule:
    """The first rule of RULES that holds for a wait: its stack's frames (any order), its state (prev_state, None
    for a call wait), its locks.py primitive and lock key (the innermost frame that is not plumbing when no
    primitive)."""
    names = frozenset(map(base_name, frames))
    masks = sum(1 << r for r, rule in enumerate(RULES) if not rule.frames.isdisjoint(names))
    return _first(masks, state, primitive, base_name(lock_key) if lock_key else None)


def classify_stacks(
    off: np.ndarray, codes: np.ndarray, names: list[str], states: list, reasons: list[tuple]
) -> tuple[list[str], list[str]]:
    """(kinds, rule names) of waits i < len(states): stack i is names[codes[off[i]:off[i + 1]]]; reasons[i] = (lock,
    lock key, primitive, ...) as derive/stacks.Stacks.reasons gives them. Each name is looked up once, each stack
    read as arrays (a bit per rule whose `frames` hold a name, or-ed over the stack), and each distinct (bits, state,
    primitive, lock key) matched against the rules once (the 1 GiB trace.dat's 437 k waits: 0.34 -> ~0.1 s)."""
    bits = np.array(
        [sum(1 << r for r, rule in enumerate(RULES) if base_name(n) in rule.frames) for n in names] or [0], np.int64
    )
    n = len(states)
    masks = np.zeros(n, np.int64)
    sizes = np.diff(off[: n + 1])
    full = np.flatnonzero(sizes > 0)
    if len(full):
        masks[full] = np.bitwise_or.reduceat(bits[codes[off[0] : off[n]]], (off[full] - off[0]).astype(np.int64))
    kinds, rules = [], []
    seen: dict[tuple, Rule] = {}  # the rule of each (mask, state, primitive, lock key): few, the waits many
    for m, state, reason in zip(masks.tolist(), states, reasons):
        key = (m, state, reason[2], reason[1])
        rule = seen.get(key)
        if rule is None:
            rule = seen[key] = _first(m, state, reason[2], base_name(reason[1]) if reason[1] else None)
        kinds.append(rule.kind)
        rules.append(rule.name)
    return kinds, rules


BY_NAME = {r.name: r for r in RULES}


def why(rule_name: str | None) -> str | None:
    """The rule of that name in a sentence (None: no such rule)."""
    rule = BY_NAME.get(rule_name)
    return rule.why if rule else None


def as_table() -> list[dict]:
    """The rules in order, as the API lists them."""
    return [
        {
            "name": r.name,
            "kind": r.kind,
            "why": r.why,
            "frames": sorted(r.frames),
            "innermost": sorted(r.innermost),
            "primitives": sorted(r.primitives),
            "sleep": r.sleep,
        }
        for r in RULES
    ]
