"""The sleeping primitives Stallscope recognises on a call stack: what a task waited for.

One table serves the flame graphs (frames that are waits are marked) and the stall chains (a wait's
lock or reason, and who may hold it). Extend it by adding an entry: functions are matched by exact
name, after stripping compiler suffixes such as `.constprop.0`, `.isra.1`, `.part.3`.

`kind` is how the lock is released: "primitive" entries are the generic kernel mechanisms
(mutex, rwsem, semaphore, completion, I/O); "object" entries are the subsystem functions that wrap
them and name what is locked (an XFS inode, a buffer, a page, a journal handle). A wait is labelled
by the innermost object function on its stack, "via" the outermost primitive, e.g. `xfs_ilock via
down_write`. An object's `sleep` functions are generic helpers several objects share: they name the lock
only when none of an object's own (acquire) functions is on the stack. (`folio_wait_bit_common` sleeps for
a page's lock and for its write-back alike: under `folio_wait_writeback` the wait is `page writeback`, under
`__folio_lock` it is `page lock`, alone it is `page bit`, which says no more than it knows.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Primitive:
    name: str
    kind: str  # "primitive" | "object"
    acquire: tuple[str, ...]  # functions that take it (and may sleep)
    release: tuple[str, ...]  # functions that give it back (and wake the waiters)
    sleep: tuple[str, ...] = ()  # slow paths seen on the stack of a sleeper only
    what: str = ""


PRIMITIVES: tuple[Primitive, ...] = (
    Primitive(
        "mutex",
        "primitive",
        ("mutex_lock", "mutex_lock_interruptible", "mutex_lock_killable", "mutex_lock_nested", "mutex_lock_io"),
        ("mutex_unlock",),
        (
            "__mutex_lock",
            "__mutex_lock_slowpath",
            "__mutex_lock_common",
            "__mutex_lock_killable_slowpath",
            "__mutex_lock_interruptible_slowpath",
        ),
        "struct mutex",
    ),
    Primitive(
        "rwsem (read)",
        "primitive",
        ("down_read", "down_read_killable", "down_read_interruptible", "down_read_nested"),
        ("up_read",),
        ("rwsem_down_read_slowpath", "rwsem_down_read_failed", "__down_read", "__down_read_common"),
        "struct rw_semaphore, shared",
    ),
    Primitive(
        "rwsem (write)",
        "primitive",
        ("down_write", "down_write_killable", "down_write_nested"),
        ("up_write", "downgrade_write"),
        ("rwsem_down_write_slowpath", "rwsem_down_write_failed", "__down_write", "__down_write_common"),
        "struct rw_semaphore, exclusive",
    ),
    Primitive(
        "semaphore",
        "primitive",
        ("down", "down_interruptible", "down_killable", "down_timeout"),
        ("up",),
        ("__down", "__down_common", "__down_interruptible", "__down_killable", "__down_timeout"),
        "struct semaphore",
    ),
    Primitive(
        "completion",
        "primitive",
        (
            "wait_for_completion",
            "wait_for_completion_io",
            "wait_for_completion_timeout",
            "wait_for_completion_killable",
            "wait_for_completion_interruptible",
            "wait_for_completion_io_timeout",
        ),
        ("complete", "complete_all"),
        ("__wait_for_common", "wait_for_common", "wait_for_common_io", "do_wait_for_common"),
        "struct completion",
    ),
    Primitive(
        "I/O",
        "primitive",
        ("io_schedule", "io_schedule_timeout"),
        ("blk_mq_end_request", "bio_endio"),
        ("bit_wait_io", "out_of_line_wait_on_bit", "__wait_on_bit", "wait_on_bit_io"),
        "waiting for an I/O to complete",
    ),
    Primitive(
        "xfs_ilock",
        "object",
        (
            "xfs_ilock",
            "xfs_ilock_nowait",
            "xfs_ilock_data_map_shared",
            "xfs_ilock_map_shared",
            "xfs_ilock_attr_map_shared",
        ),
        ("xfs_iunlock",),
        what="XFS inode lock (i_lock / i_iolock / i_mmaplock)",
    ),
    Primitive(
        "xfs_buf_lock",
        "object",
        ("xfs_buf_lock",),
        ("xfs_buf_unlock", "xfs_buf_relse"),
        what="XFS metadata buffer lock (released by I/O completion for buffers under write)",
    ),
    Primitive(
        "xfs_log_force",
        "object",
        ("xfs_log_force", "xfs_log_force_lsn", "_xfs_log_force", "xlog_wait_on_iclog", "xlog_wait"),
        (),
        what="XFS log force",
    ),
    Primitive(
        "page lock",
        "object",
        (
            "lock_page",
            "__lock_page",
            "folio_lock",
            "__folio_lock",
            "__folio_lock_killable",
            "lock_page_killable",
            "__lock_page_killable",
            "__lock_page_or_retry",
            "__folio_lock_or_retry",
            # waiting for it to be released (a read completes by unlocking the page)
            "wait_on_page_locked",
            "wait_on_page_locked_killable",
            "folio_wait_locked",
            "folio_wait_locked_killable",
            "wait_on_page_read",
        ),
        ("unlock_page", "folio_unlock"),
        what="page-cache page lock",
    ),
    Primitive(
        "page writeback",
        "object",
        (
            "wait_on_page_writeback",
            "folio_wait_writeback",
            "folio_wait_stable",
            "wait_for_stable_page",
            "__filemap_fdatawait_range",
            "filemap_fdatawait_range",
        ),
        ("end_page_writeback", "folio_end_writeback"),
        what="waiting for a page's write-back",
    ),
    Primitive(
        "page bit",
        "object",
        (),
        (),
        (
            "folio_wait_bit_common",
            "wait_on_page_bit_common",
            "folio_wait_bit",
            "wait_on_page_bit",
            "folio_wait_bit_killable",
            "wait_on_page_bit_killable",
        ),
        "waiting on a page flag: its lock or its write-back (the caller, when on the stack, says which)",
    ),
    Primitive(
        "buffer lock",
        "object",
        ("lock_buffer", "__lock_buffer", "__wait_on_buffer", "wait_on_buffer"),
        ("unlock_buffer",),
        what="buffer_head lock",
    ),
    Primitive(
        "jbd2 handle",
        "object",
        (
            "start_this_handle",
            "jbd2__journal_start",
            "jbd2_journal_start",
            "wait_transaction_locked",
            "wait_transaction_switching",
            "add_transaction_credits",
        ),
        ("jbd2_journal_stop",),
        what="ext4/jbd2: waiting to join the running transaction",
    ),
    Primitive(
        "jbd2 commit",
        "object",
        (
            "jbd2_log_wait_commit",
            "jbd2_complete_transaction",
            "jbd2_journal_force_commit",
            "jbd2_journal_commit_transaction",
        ),
        (),
        what="ext4/jbd2: waiting for a journal commit",
    ),
    Primitive(
        "block tag", "object", ("blk_mq_get_tag",), ("blk_mq_put_tag",), what="no free request tag on the device"
    ),
    Primitive(
        "inode rwsem",
        "object",
        ("inode_lock", "inode_lock_shared"),
        ("inode_unlock", "inode_unlock_shared"),
        what="VFS inode i_rwsem",
    ),
)

_SUFFIX = re.compile(r"\.(constprop|isra|part|cold|llvm|lto_priv)\.?\d*.*$")


def _by_function(primitives: tuple[Primitive, ...]) -> dict[str, tuple[Primitive, str]]:
    """Each function of a primitive -> (its primitive, its role); the first primitive that names it."""
    out: dict[str, tuple[Primitive, str]] = {}
    for p in primitives:
        for role, names in (("acquire", p.acquire), ("release", p.release), ("sleep", p.sleep)):
            for name in names:
                out.setdefault(name, (p, role))
    return out


_BY_FUNCTION = _by_function(PRIMITIVES)
_BY_NAME = {p.name: p for p in PRIMITIVES}


def base_name(frame: str) -> str:
    """`xfs_dir3_leaf_read.constprop.16` -> `xfs_dir3_leaf_read`; strips `_[k]` annotations and `+0x..`."""
    name = frame.split("+0x", 1)[0]
    if name.endswith("]") and "_[" in name:
        name = name[: name.rindex("_[")]
    return _SUFFIX.sub("", name)


def lookup(frame: str) -> tuple[Primitive, str] | None:
    """(primitive, role) for a frame that takes, releases or sleeps on a known lock; else None."""
    return _BY_FUNCTION.get(base_name(frame))


def identity(name: str) -> str | None:
    """The lock a frame takes or sleeps on, as one name for every view: its entry of the table (`xfs_ilock` for
    xfs_ilock_map_shared, `semaphore` for down and __down, `rwsem (read)` for down_read). Also takes an entry's
    own name (a label's part may be one: `page lock via I/O`). None for a release function or an unknown name."""
    if name in _BY_NAME:
        return name
    hit = lookup(name)
    return hit[0].name if hit and hit[1] != "release" else None


def label_key(label: str | None) -> str | None:
    """The lock a wait's label names: the identity of its object, else of its primitive, else the label itself
    (`xfs_ilock via down_write` -> xfs_ilock, `down_write` -> rwsem (write), `ep_poll` -> ep_poll)."""
    if label is None:
        return None
    return next(filter(None, map(identity, label.split(" via ", 1))), label)


def label_names(key: str) -> list[str]:
    """What a label's object or primitive reads when it is on the lock `key` (an entry, or any of its functions:
    the same lock): the entry's name and its acquire and sleep functions; for any other key, the key itself."""
    lock = identity(key)
    if lock is None:
        return [key]
    return [lock] + [n for n, (p, role) in _BY_FUNCTION.items() if p.name == lock and role != "release"]


def on_lock(label: str | None, key: str) -> bool:
    """A label is on the lock `key` when its object or primitive is that lock (`xfs_buf_lock via down` is on
    `semaphore`, `down` and `xfs_buf_lock`, not on `down_read`), or when it is the key exactly. What
    /waits?lock_key= and /wakers?lock_key= keep (stalls.waits does the same in SQL with label_names)."""
    if label is None:
        return False
    names = label_names(key)
    return label == key or any(part in names for part in label.split(" via ", 1))


def label(frames_root_first) -> str | None:
    """A wait's lock or reason from its stack (root first): `object via primitive`, or the one found.

    The innermost object names what is locked (an object's own function before a shared sleep function:
    `folio_wait_writeback` before `folio_wait_bit_common`); the outermost primitive is the call the code made
    (`down`, not its slow path `__down`)."""
    obj = shared = prim = None
    for f in frames_root_first:
        hit = lookup(f)
        if not hit or hit[1] == "release":
            continue
        p, role = hit
        if p.kind == "object" and role == "acquire":  # the innermost object names what is locked
            obj = base_name(f)
        elif p.kind == "object":
            shared = p.name
        elif prim is None:  # the outermost primitive is the call the code made (down, not __down)
            prim = base_name(f) if role == "acquire" else p.name
    obj = obj or shared
    if obj and prim:
        return f"{obj} via {prim}"
    return obj or prim


def as_table() -> list[dict]:
    return [
        {
            "name": p.name,
            "kind": p.kind,
            "acquire": list(p.acquire),
            "release": list(p.release),
            "sleep": list(p.sleep),
            "what": p.what,
        }
        for p in PRIMITIVES
    ]
