"""Which waits make the chains (the rules: chains.py's docstring), found from arrays of the waits' columns, not from a
Python object per wait: each wait's next link, the groups of waiters (same lock, same next link), the first links
and the walk of each chain kept. chains.py then reads the rows of the waits the chains hold and writes their
evidence.

A source's waits come as `cols` (derive/waits.py, or chains.relink from the stored waits), in file order: arrays
line, pid, start_ns, end_ns, duration_ns, end_known, waker (a waker is known), waker_pid, wake_ns, wake_line,
waker_idle (the idle task or an interrupt woke it), waker_io (an I/O completion frame on the waker's stack), holder
(a holder is inferred), holder_pid, holder_ns (0: none), holder_line, worthy (a locks.py primitive on its stack, or
state D, and not idle: wait_kinds.py), and lock_key (a list of str or None)."""

from __future__ import annotations

import numpy as np

from ..distinct import distinct
from .arrays import key_ids

MAX_CHAINS = 5000
MAX_LINKS = 32
PAIRS_AT_ONCE = 1 << 22  # (wait, group member) pairs compared at a time by SourcePlan.also_many
LOOK_BACK = 64  # a task's waits looked at, backwards, for the one that overlapped
RELATIONS = (None, "io_completion", "woken_by", "held_by")
_NEVER = 1 << 62


def _reached(nxt: np.ndarray, worthy: np.ndarray) -> np.ndarray:
    """The waits some chain passes through: the next links of the waits worth explaining (those that can start a
    chain), then theirs, and so on. A wait that only an idle sleep leads to (a worker woken by the task it then
    waits for) is no one's link: it starts a chain of its own."""
    reached = np.zeros(len(nxt), bool)
    step = nxt[worthy & (nxt >= 0)]
    while len(step):
        step = distinct(step[~reached[step]])
        reached[step] = True
        step = nxt[step]
        step = step[step >= 0]
    return reached


class SourcePlan:
    """A source's next links (rel: an index into RELATIONS; nxt: the next link's wait, -1 for none; end: the task
    (pid, line) that ends the chain when no wait follows) and groups (gid: -1 for none)."""

    def __init__(self, sid: int, cols: dict):
        self.sid, self.cols = sid, cols
        self.rel, self.nxt, self.end_pid, self.end_line = _next_links(cols)
        self.gid = _groups(cols, self.rel, self.nxt, self.end_pid, self.end_line)
        self._by_group = self._group_of = None  # the waits in groups, by group; their groups
        self._also: dict[int, list[int]] = {}

    def heads(self) -> np.ndarray:
        """The first links of the source's chains: waits that are no other wait's next link and are worth
        explaining; of a group, its member (not a next link) with the longest known stall."""
        c = self.cols
        target = _reached(self.nxt, c["worthy"])
        cand = ~target & c["worthy"]
        alone = np.flatnonzero(cand & (self.gid < 0))
        groups = distinct(self.gid[cand & (self.gid >= 0)])
        members = np.flatnonzero((self.gid >= 0) & ~target)
        members = members[np.isin(self.gid[members], groups)]
        by = np.lexsort((-c["line"][members], c["duration_ns"][members], c["end_known"][members], self.gid[members]))
        members = members[by]
        g = self.gid[members]
        best = members[np.append(g[1:] != g[:-1], True)] if len(members) else members
        return np.concatenate([alone, best])

    def members(self, g: int) -> np.ndarray:
        """A group's waits, in file order."""
        if self._by_group is None:
            at = np.flatnonzero(self.gid >= 0)
            self._by_group = at[np.argsort(self.gid[at], kind="stable")]
            self._group_of = self.gid[self._by_group]
        a, b = np.searchsorted(self._group_of, [g, g + 1])
        return self._by_group[a:b]

    def also_many(self, ws: np.ndarray) -> None:
        """also(w) of each wait of ws not asked yet, found at once (pairs of a wait and its group's members, a chunk
        of at most PAIRS_AT_ONCE pairs at a time), kept for also()."""
        ws = distinct(np.asarray(ws, np.int64))
        ws = ws[np.fromiter((w not in self._also for w in ws.tolist()), bool, len(ws))]
        for w in ws[self.gid[ws] < 0].tolist():
            self._also[w] = []
        ws = ws[self.gid[ws] >= 0]
        if not len(ws):
            return
        if self._by_group is None:
            self.members(0)  # (builds the groups' index)
        g = self.gid[ws]
        lo = np.searchsorted(self._group_of, g, "left")
        count = np.searchsorted(self._group_of, g, "right") - lo
        start, end = self.cols["start_ns"], self.cols["end_ns"]
        first = 0
        while first < len(ws):  # a chunk of waits whose pairs fit (a wait alone may hold more)
            total = np.cumsum(count[first:])
            last = first + max(1, int(np.searchsorted(total, PAIRS_AT_ONCE, "right")))
            w, c, a = ws[first:last], count[first:last], lo[first:last]
            off = np.zeros(len(w) + 1, np.int64)
            np.cumsum(c, out=off[1:])
            pair_w = np.repeat(w, c)
            m = self._by_group[np.repeat(a - off[:-1], c) + np.arange(off[-1])]
            hit = (start[m] < end[pair_w]) & (end[m] > start[pair_w]) & (m != pair_w)
            kept = np.zeros(len(hit) + 1, np.int64)
            np.cumsum(hit, out=kept[1:])
            found = m[hit].tolist()
            for w_, k0, k1 in zip(w.tolist(), kept[off[:-1]].tolist(), kept[off[1:]].tolist()):
                self._also[w_] = found[k0:k1]
            first = last

    def also(self, w: int) -> list[int]:
        """The other members of w's group that overlap w in time, in file order (once per wait: the chains' rows and
        their evidence ask for the same; also_many finds them)."""
        if w not in self._also:
            self.also_many(np.array([w], np.int64))
        return self._also[w]


def find_also(plans: list[tuple[SourcePlan, int, list[int]]]) -> None:
    """SourcePlan.also of every link of the chains `plans` (plan's), found per source at once (also_many)."""
    linked: dict[int, tuple] = {}
    for p, _, links in plans:
        linked.setdefault(id(p), (p, []))[1].extend(links)
    for p, links in linked.values():
        p.also_many(np.array(links, np.int64))


def plan(sources: list[tuple[int, dict]]) -> list[tuple[SourcePlan, int, list[int]]]:
    """The chains kept, ranked by their first link's duration (at most MAX_CHAINS): (the source's plan, its first
    link, the waits of its links in order)."""
    plans = [SourcePlan(sid, cols) for sid, cols in sources if len(cols["line"])]
    heads = []
    for k, p in enumerate(plans):
        h = p.heads()
        d, line = p.cols["duration_ns"][h], p.cols["line"][h]
        heads.extend(zip((-d).tolist(), [p.sid] * len(h), line.tolist(), [k] * len(h), h.tolist()))
    heads.sort()
    out = []
    for _, _, _, k, h in heads[:MAX_CHAINS]:
        p = plans[k]
        links, seen, w = [], set(), h
        while w >= 0 and len(links) < MAX_LINKS:
            seen.add(w)
            links.append(w)
            if p.rel[w] and p.nxt[w] < 0:  # ends with the waker or holder itself
                break
            v = int(p.nxt[w])
            w = v if v >= 0 and v not in seen else -1
        out.append((p, h, links))
    return out


def _next_links(c: dict) -> tuple[np.ndarray, ...]:
    """Each wait's next link: its waker (io_completion when the waker's stack shows an I/O completion; woken_by the
    waker's wait that overlapped, unless the idle task woke it), else its holder (held_by the holder's wait that
    overlapped), else none."""
    n = len(c["line"])
    rel, nxt = np.zeros(n, np.int8), np.full(n, -1, np.int64)
    end_pid, end_line = np.zeros(n, np.int64), np.zeros(n, np.int64)
    wk, hd = c["waker"], ~c["waker"] & c["holder"]
    io = wk & c["waker_io"]
    rel[wk], rel[io], rel[hd] = 2, 1, 3
    end_pid[wk], end_line[wk] = c["waker_pid"][wk], c["wake_line"][wk]
    end_pid[hd], end_line[hd] = c["holder_pid"][hd], c["holder_line"][hd]
    tasks = _ByTask(c)
    woken = np.flatnonzero(wk & ~io & ~c["waker_idle"])
    nxt[woken] = tasks.latest(woken, c["waker_pid"][woken], c["wake_ns"][woken], held=False)
    held = np.flatnonzero(hd)
    before = np.where(c["end_known"][held], c["end_ns"][held], _NEVER)
    nxt[held] = tasks.latest(held, c["holder_pid"][held], before, held=True)
    return rel, nxt, end_pid, end_line


class _ByTask:
    """The waits by task, then start (then line), with the latest end among a task's waits up to each."""

    def __init__(self, c: dict):
        self.c = c
        self.order = np.lexsort((c["line"], c["start_ns"], c["pid"]))
        self.pid, self.start = c["pid"][self.order], c["start_ns"][self.order]
        self.reach = c["end_ns"][self.order].copy()
        cuts = np.flatnonzero(np.diff(self.pid)) + 1
        for a, b in zip(np.append(0, cuts).tolist(), np.append(cuts, len(self.pid)).tolist()):
            np.maximum.accumulate(self.reach[a:b], out=self.reach[a:b])
        self.pids = distinct(self.pid)

    def latest(self, q: np.ndarray, task: np.ndarray, before: np.ndarray, held: bool) -> np.ndarray:
        """For each wait q[i]: the latest wait of `task`[i] begun before before[i] that overlapped it (looked at
        backwards, at most LOOK_BACK): woken (held=False) one that ended at or before the wake-up (before) and after
        q began; held, one begun after the holder took the lock and ended after q began. -1: none."""
        out = np.full(len(q), -1, np.int64)
        if not len(q) or not len(self.pid):
            return out
        c = self.c
        times = distinct(np.concatenate([self.start, before]))
        span = len(times) + 1
        rank = np.searchsorted(self.pids, self.pid) * span + np.searchsorted(times, self.start)
        at = np.minimum(np.searchsorted(self.pids, task), len(self.pids) - 1)
        known = self.pids[at] == task
        first = np.searchsorted(rank, at * span, "left")  # the task's first wait
        j = np.searchsorted(rank, at * span + np.searchsorted(times, before), "left") - 1
        stop = np.maximum(first - 1, j - LOOK_BACK)
        s, took = c["start_ns"][q], c["holder_ns"][q]
        todo = np.flatnonzero(known & (j > stop))
        while len(todo):
            k = j[todo]
            v = self.order[k]
            if held:
                done = (self.start[k] < took[todo]) | (self.reach[k] <= s[todo])
                hit = ~done & (c["end_ns"][v] > s[todo])
            else:
                done = self.reach[k] <= s[todo]
                end = c["end_ns"][v]
                hit = ~done & (v != q[todo]) & (end <= before[todo]) & c["end_known"][v] & (end > s[todo])
            out[todo[hit]] = v[hit]
            todo = todo[~done & ~hit]
            j[todo] -= 1
            todo = todo[j[todo] > stop[todo]]
        return out


def _groups(c: dict, rel, nxt, end_pid, end_line) -> np.ndarray:
    """Each wait's group (-1: none): waiters on the same lock (`lock_key`) with the same next link (the same wait,
    or the same task at the same line)."""
    n = len(rel)
    keys: dict[str, int] = {}
    lock = np.fromiter(
        (-1 if k is None else keys.setdefault(k, len(keys)) for k in c["lock_key"]),
        np.int64,
        n,
    )
    at = np.flatnonzero((rel > 0) & (lock >= 0))
    gid = np.full(n, -1, np.int64)
    if not len(at):
        return gid
    v = nxt[at]
    has = v >= 0
    gid[at] = key_ids(
        lock[at],
        rel[at].astype(np.int64),
        has.astype(np.int64),
        np.where(has, c["line"][np.maximum(v, 0)], end_pid[at]),
        np.where(has, 0, end_line[at]),
    )
    return gid
