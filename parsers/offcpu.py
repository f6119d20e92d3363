"""bcc offcputime / offwaketime / wakeuptime output and folded stacks -> off-CPU stack records.

Formats (shared/FORMATS.md section 4; bcc tools/offcputime.py, offwaketime.py, wakeuptime.py,
profile.py and their *_example.txt files; FlameGraph flamegraph.pl and stackcollapse-perf.pl):

* multi-line default output (one record per unique stack):
      Tracing off-CPU time (us) of all threads by kernel stack for 5 secs.      <- header (optional)
          ffffffff8108c80a finish_task_switch   <- kernel frames, leaf first (address optional)
          ...
          --                                     <- -d: kernel/user delimiter
          read                                   <- user frames, leaf first
          -                cat (1234)            <- comm (pid)   [2016 bcc: the comm alone: `    cat`]
              8762                               <- total in microseconds
* folded (`-f`, Brendan Gregg's format): `comm;root;...;leaf <count>`; `-` frame = user/kernel
  delimiter, `--` = waker/target separator, `_[k]` `_[w]` `_[j]` `_[i]` annotations;
  stackcollapse-perf `comm-PID/TID` first frame.
* offwaketime: `waker: comm pid`, waker stack root first, `--  --` (old bcc: `-  -`), target stack
  leaf first, `target: comm pid`, total. Folded: `target;target frames;--;waker frames(leaf->root);waker n`
  (old bcc used `-` as the separator and printed an empty frame before the waker comm).
* wakeuptime (bcc companion tool): `target: comm`, the waker stack leaf first, `waker: comm`, total.
  Folded: `waker;waker frames(root->leaf);target n`.
* profile (same stack printer; `Sampling at N Hertz` header): accepted, but its values are sample
  counts, not microseconds (a report note says so).

Output: one table, `offcpu_stacks` (see OFFCPU_STACKS):
  line            first line of the record (its first stack line, or the folded line)
  kind            `offcpu` (offcputime, profile) | `offwake` (offwaketime, wakeuptime)
  comm, pid, tid  the blocked task (offwake: the target). pid/tid null when the input has none;
                  tid only from stackcollapse `comm-PID/TID`. bcc's `(N)` after the comm is put in pid
                  (bcc prints the thread id there; there is no separate tid in bcc output).
  frames          list<string>, ROOT FIRST: user frames, then kernel frames, as in folded form. A `-`
                  frame sits between user and kernel frames when the input had a delimiter (`-d`;
                  multi-line `--` or `-` is stored as `-`). Address prefixes are stripped, placeholders
                  (`[unknown]`, `[Missed Kernel Stack]`) kept, annotations `_[k]`... stripped.
                  wakeuptime records have no target stack: frames is [].
  kernel_frames   how many of `frames` are kernel frames; null when the input does not tell
                  (no addresses, no delimiter, no `_[k]` annotation, no `-K`/`-U` in the header).
                  Counted from: `_[k]` annotations (a file with annotations: rows without any get 0);
                  the delimiter (frames on the kernel side of it); addresses (>= 0xffff000000000000 is
                  kernel, `[Missed Kernel Stack]` too); the header's `by kernel stack` / `by user stack`.
  waker_comm, waker_pid, waker_frames (root first) for offwake; null for offcpu.
  value_us        the total (µs; profile: samples); null for an incomplete record.
  incomplete      true for a stack with no total after it (a fragment quoted by hand, a doc that was
                  cut): such a record is kept only if every line of it looks like a stack line.

Line handling (consistent rule, also for the `*_example.txt` doc files):
  * ignored silently: blank lines, `^C`, `Detaching...`;
  * the header line is not a record: it gives a note, the tool, the `-K`/`-U` scope and the window;
  * every other line that is not part of a record is counted as skipped with a reason: prose, usage
    text, `# ./offcputime ...` command lines (their tool name is remembered: it tells how the folded
    lines after them read, e.g. `# ./wakeuptime -f`), `[...]` elisions, `#` comments in folded files,
    indented blocks that end without a total and contain a line that is not a stack line
    (usage/option text), and folded lines whose count is missing.
  A prose line inside a record ends it; the record is then incomplete.

Capture window: a dump has no per-event time stamps, it covers a capture window. The header's
`... for N secs.` gives it: `header_window_s(lines)` returns it (float seconds or None), and parse()
adds the note `window_s=N` (machine-readable; the first header that has a duration) besides a sentence
naming the header's line. `... Hit Ctrl-C to end.` gives a note that the window is unknown.

Speed: a file whose first lines are all folded lines is parsed in bulk: 16 MiB chunks (line_chunks),
vectorised with pyarrow.compute and numpy (split on the last space for the count, split_pattern(';')
for frames, offsets arithmetic for comm/separator/reversal), no Python loop per line. Anything else
(multi-line output, doc files) goes through a per-line state machine (these are small summaries);
folded lines met there are buffered and go through the same vectorised function.

Limits: without a `# ./offwaketime` / `# ./wakeuptime` command line or header before them, old-bcc
offwaketime folded lines (`-` separator) read as offcputime `-d` lines, and wakeuptime folded lines as
offcputime lines (first frame taken as the comm); folded values must be integers (flamegraph.pl also
accepts decimals and a second, differential, count column: those lines are skipped with a reason).
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .common import CHUNK_BYTES, ParseError, ParseReport, line_chunks

FORMAT = "offcputime"
CHUNK = CHUNK_BYTES  # bytes per chunk (tests make it small to cross chunk boundaries)

OFFCPU_STACKS = pa.schema(
    [
        ("line", pa.int64()),
        ("kind", pa.string()),
        ("comm", pa.string()),
        ("pid", pa.int64()),
        ("tid", pa.int64()),
        ("frames", pa.list_(pa.string())),
        ("kernel_frames", pa.int64()),
        ("waker_comm", pa.string()),
        ("waker_pid", pa.int64()),
        ("waker_frames", pa.list_(pa.string())),
        ("value_us", pa.int64()),
        ("incomplete", pa.bool_()),
    ]
)
TABLES = {"offcpu_stacks": OFFCPU_STACKS}

# ---------------------------------------------------------------------------------------------------
# line shapes

_HEADER = re.compile(
    r"^(?:Tracing (?:off-CPU|blocked) time \(us\)|Sampling at \d+ Hertz) .*(?:for \S+ secs?\.|Hit Ctrl-C to end\.)\s*$"
)
_HEADER_SECS = re.compile(r"\bfor (\d+(?:\.\d+)?) secs?\.")
_FOLDED = re.compile(r"^[^\s#;][^;]*(?:;[^;]*)+[ \t]+\d+\s*$")
_VALUE = re.compile(r"^\s+(\d+)\s*$")
_COMM_LINE = re.compile(r"^-\s+(.*\S)\s+\((\d+)\)$")  # `-                cat (1234)`
_ROLE_LINE = re.compile(r"^(waker|target):\s+(.*?)\s*$")
_SEP_LINE = re.compile(r"^--?\s+--?$")  # waker/target separator `--  --` (old `-  -`)
_DELIM_LINE = re.compile(r"^--?$")  # user/kernel delimiter
_ADDR = re.compile(r"^(?:0x)?([0-9a-fA-F]{8,16})\s+(\S.*)$")
_PLACEHOLDER = re.compile(r"^\[[A-Za-z .]+\]$")  # [unknown], [Missed Kernel Stack], [vdso]
_COMMAND = re.compile(r"^#\s*(?:\S*/)?(offcputime|offwaketime|wakeuptime|profile)(?:\.py)?\b")
_ELISION = re.compile(r"^\[\.\.\..*\]$")
_LOST = re.compile(r"WARNING: (\d+) stack traces? (?:lost|could not)")
_PID_SUFFIX = r"^.+-\d+(?:/\d+)?$"
_KERNEL_ADDR = 0xFFFF000000000000

_INCOMPLETE_NOTE = (
    "{n} incomplete record(s): a stack with no total (µs) after it, e.g. an excerpt quoted by hand; "
    "kept with value_us null and incomplete=true (first at line {line})"
)


def header_window_s(lines) -> float | None:
    """The capture window in seconds from the first header line that has one (`... for N secs.`)."""
    for ln in lines:
        ln = ln.rstrip("\r\n")
        if _HEADER.match(ln):
            m = _HEADER_SECS.search(ln)
            if m:
                return float(m.group(1))
    return None


def _frame_like(s: str) -> bool:
    """A stripped indented line that reads as a stack frame (strict: used for records without a total)."""
    m = _ADDR.match(s)
    if m:
        s = m.group(2)
    if _PLACEHOLDER.match(s):
        return True
    if " " not in s and "\t" not in s:
        return (not s.startswith(("-", "#", "./", "/")) and "://" not in s) or s in ("-", "--")
    # a demangled C++ / Rust signature: name immediately followed by its parameter list
    return bool(re.match(r"^[\w:~<>,.$*&]+\(", s)) and "  " not in s


def sniff(head: list[str]) -> float:
    lines = [ln.rstrip("\r\n") for ln in head if ln.strip()]
    if not lines:
        return 0.0
    if any(_HEADER.match(ln) for ln in lines):
        return 0.95
    hits = strong = 0
    for ln in lines:
        if ln[0] in " \t":
            s = ln.strip()
            if _VALUE.match(ln):
                hits += 1
                strong += 1
            elif _COMM_LINE.match(s) or _SEP_LINE.match(s) or _ROLE_LINE.match(s):
                hits += 1
                strong += 1
            elif _ADDR.match(s) and _frame_like(s):
                hits += 1
                strong += 1
            elif _frame_like(s):
                hits += 1
        elif _FOLDED.match(ln):
            hits += 1
            strong += 1
    score = 0.9 * hits / len(lines)
    if not strong:
        score *= 0.4
    return score


# ---------------------------------------------------------------------------------------------------
# folded: vectorised


def _np(arr: pa.Array) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def _list(offsets: np.ndarray, values: pa.Array, null: np.ndarray | None = None) -> pa.Array:
    off = pa.array(offsets.astype(np.int32))
    mask = pa.array(null) if null is not None and null.any() else None
    return pa.ListArray.from_arrays(off, values, type=pa.list_(pa.string()), mask=mask)


def _int_or_null(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(values.astype(np.int64), mask=~valid)


def _digits(strings: pa.Array, ndig: np.ndarray) -> np.ndarray:
    """The integer made of the last ndig[i] (1..18) ASCII digits of each string, vectorised."""
    off = _np(pa.Array.from_buffers(pa.int32(), len(strings) + 1, [None, strings.buffers()[1]], offset=strings.offset))
    data = np.frombuffer(strings.buffers()[2], np.uint8) if strings.buffers()[2] is not None else np.zeros(0, np.uint8)
    end = off[1:].astype(np.int64)
    acc = np.zeros(len(strings), np.int64)
    for k in range(int(ndig.max()) if len(ndig) else 0):
        on = ndig > k
        d = data[np.where(on, end - ndig + k, 0)].astype(np.int64) - 48
        acc = np.where(on, acc * 10 + d, acc)
    return acc


def _folded_batch(lines: pa.Array, line_nos: np.ndarray, ctx: dict, report: ParseReport) -> pa.RecordBatch | None:
    """Folded lines (string array, not blank; a trailing newline or blanks are allowed) -> a batch.

    Lines that do not parse are skipped with a reason. ctx carries what holds across chunks: `tool` and
    `scope` (from a header or command line), `pid_suffix` (the first frames are `comm-PID`), `annotated`
    (the file uses `_[k]` annotations). No Python loop per line: split_pattern(';') once, then offsets
    arithmetic in numpy; the few frames that change (the last one, which carries the count, and the
    annotated ones) are appended as patches and an index map points at them.
    """
    comment = _np(pc.starts_with(lines, "#"))
    fr = pc.split_pattern(lines, ";")
    off = _np(fr.offsets).astype(np.int64)
    V = fr.values.slice(int(off[0]), int(off[-1] - off[0]))
    off = off - off[0]
    n0 = len(lines)
    last = off[1:] - 1
    lastT = pc.utf8_rtrim_whitespace(V.take(pa.array(last)))
    core = pc.utf8_rtrim(lastT, characters="0123456789")
    frame_last = pc.utf8_rtrim_whitespace(core)
    ndig = _np(pc.utf8_length(lastT)) - _np(pc.utf8_length(core))
    spaced = _np(pc.utf8_length(core)) > _np(pc.utf8_length(frame_last))
    good = (ndig >= 1) & (ndig <= 18) & spaced & ~comment
    if not good.all():
        bi = np.flatnonzero(~good)
        for i in bi[:20]:
            reason = (
                "comment line" if comment[i] else "not a folded stack line (expected 'frame;frame;... <integer count>')"
            )
            report.skip(int(line_nos[i]), reason, lines[int(i)].as_py())
        report.skipped += max(0, len(bi) - 20)
        if not good.any():
            return None
        keep = pa.array(good)
        return _folded_batch(lines.filter(keep), line_nos[good], ctx, report)
    values = _digits(lastT, ndig)
    rows_line = line_nos
    n = n0
    L = np.diff(off)
    T = int(off[-1])
    row_of = np.repeat(np.arange(n), L)
    pos = np.arange(T, dtype=np.int64) - off[:-1][row_of]
    starts = off[:-1]

    # patches: idx maps a frame position to its value in pa.concat_arrays(vals)
    vals = [V, frame_last]
    idx = np.arange(T, dtype=np.int64)
    idx[last] = T + np.arange(n)
    base = T + n

    def mask(fn) -> np.ndarray:
        return np.concatenate([_np(fn(a)) for a in vals])[idx]

    # annotations: `_[k]` kernel, `_[w]` waker, `_[j]` JIT, `_[i]` inlined
    ann = np.zeros(T, bool)
    ann_k = np.zeros(T, bool)
    cand = np.flatnonzero(mask(lambda a: pc.ends_with(a, "]")))
    if len(cand):
        sub = pa.chunked_array(vals).take(pa.array(idx[cand])).combine_chunks()
        a_sub = _np(pc.match_substring_regex(sub, r"_\[[kwji]\]$"))
        if a_sub.any():
            hit = cand[a_sub]
            ann[hit] = True
            ann_k[hit] = _np(pc.ends_with(sub.filter(pa.array(a_sub)), "_[k]"))
            vals.append(pc.utf8_slice_codeunits(sub.filter(pa.array(a_sub)), 0, -4))
            idx[hit] = base + np.arange(len(hit))
            base += len(hit)
            if ann_k.any():
                ctx["annotated"] = True
    empty = mask(lambda a: pc.equal(a, ""))
    is_dd = mask(lambda a: pc.equal(a, "--"))
    is_d = mask(lambda a: pc.equal(a, "-"))
    V = pa.concat_arrays(vals) if len(vals) > 1 else V

    tool = ctx.get("tool")
    big = np.iinfo(np.int64).max
    if tool == "wakeuptime":
        # waker;waker frames (root->leaf);target
        has_comm = np.zeros(n, bool)
        sep_pos = np.full(n, -1, np.int64)
        offwake = np.ones(n, bool)
        target_keep = np.zeros(T, bool)
        last = starts + L - 1
        comm_idx, comm_valid = last, L >= 2
        waker_keep = (pos >= 1) & (pos < (L - 1)[row_of])
        waker_reverse = False
        wcomm_idx, wcomm_valid = starts, np.ones(n, bool)
    else:
        has_comm = ~ann[starts] & ~is_d[starts] & ~is_dd[starts]
        sep_pos = np.minimum.reduceat(np.where(is_dd, pos, big), starts) if n else np.zeros(0, np.int64)
        if tool == "offwaketime":  # old bcc: `-` separates target and waker stacks
            sep_d = np.minimum.reduceat(np.where(is_d, pos, big), starts)
            sep_pos = np.where(sep_pos == big, sep_d, sep_pos)
        offwake = sep_pos < L
        sep_pos = np.where(offwake, sep_pos, L)
        target_keep = (pos >= has_comm[row_of]) & (pos < sep_pos[row_of])
        waker_keep = offwake[row_of] & (pos > sep_pos[row_of]) & (pos < (L - 1)[row_of])
        waker_reverse = True
        comm_idx, comm_valid = starts, has_comm
        wcomm_idx, wcomm_valid = starts + L - 1, offwake & (L - 1 > sep_pos)

    def pick(ix, valid):
        s = V.take(pa.array(idx[np.where(valid & (ix < T), ix, 0)])) if T else pa.nulls(n, pa.string())
        s = pc.if_else(pa.array(valid & (ix < T)), s, pa.scalar(None, pa.string()))
        return pc.if_else(pc.equal(s, ""), pa.scalar(None, pa.string()), s)

    comm = pick(comm_idx, comm_valid)
    waker_comm = pick(wcomm_idx, wcomm_valid)
    waker_comm = pc.if_else(pa.array(offwake), waker_comm, pa.scalar(None, pa.string()))

    # pid / tid from stackcollapse `comm-PID` / `comm-PID/TID`
    pid = pa.nulls(n, pa.int64())
    tid = pa.nulls(n, pa.int64())
    if "pid_suffix" not in ctx:
        cm = comm.drop_null()
        ctx["pid_suffix"] = bool(len(cm)) and bool(pc.all(pc.match_substring_regex(cm, _PID_SUFFIX)).as_py())
    pat = r"^(?P<c>.+)-(?P<p>\d+)(?:/(?P<t>\d+))?$" if ctx["pid_suffix"] else r"^(?P<c>.+)-(?P<p>\d+)/(?P<t>\d+)$"
    if ctx["pid_suffix"] or _np(pc.fill_null(pc.match_substring_regex(comm, r"-\d+/\d+$"), False)).any():
        ex = pc.extract_regex(comm, pat)
        c_new = ex.field("c")  # .field() ignores the struct's own nulls: use its validity
        hit = pc.is_valid(ex)
        comm = pc.if_else(hit, c_new, comm)
        pid = pc.cast(pc.if_else(hit, ex.field("p"), pa.scalar(None, pa.string())), pa.int64())
        t = ex.field("t")
        tid = pc.cast(pc.if_else(pc.and_(hit, pc.not_equal(t, "")), t, pa.scalar(None, pa.string())), pa.int64())

    # frames (root first already)
    tk = np.flatnonzero(target_keep & ~empty)
    f_len = np.bincount(row_of[tk], minlength=n) if n else np.zeros(0, np.int64)
    f_off = np.concatenate([[0], np.cumsum(f_len)])
    frames = _list(f_off, V.take(pa.array(idx[tk])) if T else pa.array([], pa.string()))

    # waker frames, root first
    wk = np.flatnonzero(waker_keep & ~empty)
    w_rows = row_of[wk]
    w_len = np.bincount(w_rows, minlength=n) if n else np.zeros(0, np.int64)
    w_off = np.concatenate([[0], np.cumsum(w_len)])
    if waker_reverse and len(wk):
        rank = np.arange(len(wk)) - w_off[:-1][w_rows]
        dest = w_off[:-1][w_rows] + w_len[w_rows] - 1 - rank
        src = np.empty(len(wk), np.int64)
        src[dest] = wk
        wk = src
    waker_frames = _list(w_off, V.take(pa.array(idx[wk])) if T else pa.array([], pa.string()), ~offwake)

    # kernel frames of the target stack
    kcount = np.bincount(row_of[tk], weights=ann_k[tk], minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
    d_pos = np.minimum.reduceat(np.where(is_d & target_keep, pos, big), starts) if n else np.zeros(0, np.int64)
    has_delim = d_pos < sep_pos
    if ctx.get("annotated"):
        kf, kv = kcount, np.ones(n, bool)
    elif ctx.get("scope") in ("kernel", "user"):  # `-K` / `-U` in the command line before these lines
        kf = f_len if ctx["scope"] == "kernel" else np.zeros(n, np.int64)
        kf, kv = np.where(has_delim, sep_pos - d_pos - 1, kf), np.ones(n, bool)
    else:
        kf, kv = np.where(has_delim, sep_pos - d_pos - 1, 0), has_delim
    kf = np.where(kcount > 0, kcount, np.where(f_len == 0, 0, kf))
    kv = kv | (kcount > 0) | (f_len == 0)

    kind = pa.DictionaryArray.from_arrays(pa.array(offwake.astype(np.int8)), pa.array(["offcpu", "offwake"])).cast(
        pa.string()
    )
    arrays = [
        pa.array(rows_line.astype(np.int64)),
        kind,
        comm,
        pid,
        tid,
        frames,
        _int_or_null(kf, kv),
        waker_comm,
        pa.nulls(n, pa.int64()),
        waker_frames,
        pa.array(values),
        pa.array(np.zeros(n, bool)),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=OFFCPU_STACKS)


def _split_lines(data: bytes) -> tuple[pa.Array, np.ndarray]:
    """All lines of a chunk as a string array (zero-copy; each line keeps its newline) and their indexes."""
    a = np.frombuffer(data, np.uint8)
    nl = np.flatnonzero(a == 10)
    ends = nl + 1 if data.endswith(b"\n") or not data else np.append(nl + 1, len(data))
    off = np.zeros(len(ends) + 1, np.int32)
    off[1:] = ends
    lines = pa.StringArray.from_buffers(len(ends), pa.py_buffer(off), pa.py_buffer(data))
    try:
        lines.validate(full=True)
    except pa.ArrowInvalid:
        lines = pa.array([ln.decode("utf-8", "replace") for ln in data.split(b"\n")][: len(ends)], pa.string())
    return lines, np.arange(len(lines), dtype=np.int64)


def _parse_folded(chunks, report: ParseReport, ctx: dict) -> Iterator[pa.RecordBatch]:
    for chunk, first_line in chunks:
        lines, idx = _split_lines(bytes(chunk))
        lens = np.diff(_np(pa.Array.from_buffers(pa.int32(), len(lines) + 1, [None, lines.buffers()[1]])))
        keep = lens > 8  # a short line may be blank: look at those only
        short = np.flatnonzero(~keep)
        if len(short):
            keep[short] = _np(pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(lines.take(pa.array(short)))), 0))
        if not keep.all():
            sel = np.flatnonzero(keep)
            lines, idx = lines.take(pa.array(sel)), idx[sel]
        if not len(lines):
            continue
        batch = _folded_batch(lines, idx + first_line, ctx, report)
        if batch is not None and batch.num_rows:
            yield batch


# ---------------------------------------------------------------------------------------------------
# multi-line: a per-line state machine


class _Multi:
    def __init__(self, report: ParseReport, ctx: dict):
        self.report = report
        self.ctx = ctx
        self.block: list[tuple[int, str]] = []
        self.rows: list[dict] = []
        self.folded: list[tuple[int, str]] = []
        self.batches: list[pa.RecordBatch] = []
        self.incomplete = 0
        self.first_incomplete: int | None = None
        self.window_noted = False

    # -- per line
    def feed(self, ln: int, text: str) -> None:
        s = text.strip()
        if not s:
            self.end_block()
            return
        if text[0] in " \t":
            m = _VALUE.match(text)
            if m:
                if not self.block:
                    self.report.skip(ln, "a total without a stack before it", text)
                    return
                self.finish(int(m.group(1)))
                return
            self.block.append((ln, s))
            return
        self.end_block()
        if _HEADER.match(s) or _COMMAND.match(s):
            self.flush_folded()  # the folded lines before read with the context they had
        if _HEADER.match(s):
            self.header(ln, s)
        elif s in ("^C", "Detaching..."):
            pass
        elif _FOLDED.match(s):
            self.folded.append((ln, s))
        elif _LOST.search(s):
            self.report.note(f"line {ln}: {s}")
            self.report.skip(ln, "bcc warning (noted)", text)
        else:
            m = _COMMAND.match(s)
            if m:
                self.set_tool(m.group(1))
                flags = "".join(t[1:] for t in s.split()[2:] if re.fullmatch(r"-[A-Za-z]+", t))
                self.ctx["scope"] = "kernel" if "K" in flags else "user" if "U" in flags else None
                self.report.skip(ln, "command line (its tool name is kept for the lines after it)", text)
            elif _ELISION.match(s):
                self.report.skip(ln, "elision marker", text)
            else:
                self.report.skip(ln, "prose / not part of a stack record", text)

    def set_tool(self, tool: str) -> None:
        if tool != self.ctx.get("tool"):
            self.flush_folded()
            self.ctx["tool"] = tool
            self.ctx.pop("pid_suffix", None)

    def header(self, ln: int, s: str) -> None:
        if s.startswith("Sampling"):
            self.set_tool("profile")
            self.report.note("profile output (`Sampling at N Hertz`): values are sample counts, not microseconds")
        elif s.startswith("Tracing off-CPU"):
            self.set_tool("offcputime")
        elif "waker" in s:
            self.set_tool("offwaketime")
        else:
            self.set_tool("wakeuptime")
        self.ctx["scope"] = "kernel" if " by kernel stack" in s else "user" if " by user stack" in s else None
        m = _HEADER_SECS.search(s)
        if m:
            self.report.note(f"line {ln}: capture window {m.group(1)} s (header: {s!r})")
            if not self.window_noted:
                self.report.note(f"window_s={m.group(1)}")
                self.window_noted = True
        else:
            self.report.note(f"line {ln}: capture window unknown (traced until Ctrl-C; header: {s!r})")

    def end_block(self) -> None:
        if self.block:
            self.finish(None)

    # -- a record
    def finish(self, value: int | None) -> None:
        block, self.block = self.block, []
        if value is None and not all(
            _frame_like(s) or _COMM_LINE.match(s) or _ROLE_LINE.match(s) or _SEP_LINE.match(s) for _, s in block
        ):
            for ln, s in block:
                self.report.skip(ln, "indented text that is not a stack (usage or prose), and no total after it", s)
            return
        items = []  # (type, a, b): ('f', sym, addr|None) ('d',) ('s',) ('c', comm, pid) ('w'|'t', comm, pid)
        for _, s in block:
            m = _COMM_LINE.match(s)
            if m:
                items.append(("c", m.group(1), int(m.group(2))))
                continue
            m = _ROLE_LINE.match(s)
            if m:
                rest = m.group(2)
                mp = re.match(r"^(.*\S)\s+(\d+)$", rest)
                comm, pid = (mp.group(1), int(mp.group(2))) if mp else (rest or None, None)
                items.append(("w" if m.group(1) == "waker" else "t", comm, pid))
                continue
            if _SEP_LINE.match(s):
                items.append(("s",))
                continue
            if _DELIM_LINE.match(s):
                items.append(("d",))
                continue
            m = _ADDR.match(s)
            items.append(("f", m.group(2), int(m.group(1), 16)) if m else ("f", s, None))
        row = {
            "line": block[0][0],
            "value_us": value,
            "incomplete": value is None,
            "pid": None,
            "tid": None,
            "comm": None,
            "waker_comm": None,
            "waker_pid": None,
            "waker_frames": None,
        }
        types = [it[0] for it in items]
        if "s" in types or "w" in types or "t" in types:
            row["kind"] = "offwake"
            roles = {it[0]: it for it in items if it[0] in "wt"}
            if "t" in roles:
                row["comm"], row["pid"] = roles["t"][1], roles["t"][2]
            if "w" in roles:
                row["waker_comm"], row["waker_pid"] = roles["w"][1], roles["w"][2]
            stack = [it for it in items if it[0] in "fds"]
            if "s" in types:
                i = next(k for k, it in enumerate(stack) if it[0] == "s")
                waker, target = stack[:i], stack[i + 1 :]
                row["waker_frames"] = [it[1] if it[0] == "f" else "-" for it in waker]
            elif "t" in types and "w" in types and types.index("t") < types.index("w"):
                # wakeuptime: the waker stack, leaf first
                row["waker_frames"] = [it[1] if it[0] == "f" else "-" for it in reversed(stack)]
                target = []
            else:
                row["waker_frames"] = [it[1] if it[0] == "f" else "-" for it in stack]
                target = []
        else:
            row["kind"] = "offcpu"
            target = [it for it in items if it[0] in "fd"]
            comm = [it for it in items if it[0] == "c"]
            if comm:
                row["comm"], row["pid"] = comm[-1][1], comm[-1][2]
            elif value is not None and target and target[-1][0] == "f" and target[-1][2] is None and len(target) > 1:
                row["comm"] = target.pop()[1]  # 2016 bcc: the comm alone on the last line
        row["frames"] = [it[1] if it[0] == "f" else "-" for it in reversed(target)]
        row["kernel_frames"] = self.kernel_count(target)
        self.rows.append(row)
        if value is None:
            self.incomplete += 1
            if self.first_incomplete is None:
                self.first_incomplete = row["line"]

    def kernel_count(self, target: list) -> int | None:
        """Kernel frames of a stack printed leaf first (kernel part first)."""
        if not target:
            return 0
        for k, it in enumerate(target):
            if it[0] == "d":
                return k
        if any(it[2] is not None for it in target):
            return sum(
                1 for it in target if (it[2] is not None and it[2] >= _KERNEL_ADDR) or it[1] == "[Missed Kernel Stack]"
            )
        if self.ctx.get("scope") == "kernel":
            return len(target)
        if self.ctx.get("scope") == "user":
            return 0
        return None

    # -- output
    def flush_folded(self) -> None:
        if not self.folded:
            return
        lns = np.array([f[0] for f in self.folded], np.int64)
        arr = pa.array([f[1] for f in self.folded], pa.string())
        self.folded = []
        b = _folded_batch(arr, lns, self.ctx, self.report)
        if b is not None and b.num_rows:
            self.batches.append(b)

    def take(self) -> list[pa.RecordBatch]:
        self.flush_folded()
        if self.rows:
            cols = {f.name: [r[f.name] for r in self.rows] for f in OFFCPU_STACKS}
            self.batches.append(pa.RecordBatch.from_pydict(cols, schema=OFFCPU_STACKS))
            self.rows = []
        out, self.batches = self.batches, []
        return out


def _decide_folded(first: bytes) -> bool:
    cut = first[: 1 << 16]
    head = cut.decode("utf-8", "replace").splitlines()
    if len(head) > 1 and not cut.endswith(b"\n"):
        head = head[:-1]  # cut mid-way
    head = head[:1000]
    lines = [ln for ln in head if ln.strip()]
    if not lines:
        return False
    if any(ln[0] in " \t" or _HEADER.match(ln) for ln in lines):
        return False
    # every line folded (a `#` comment or a single-frame `comm 5` line is allowed)
    return all(_FOLDED.match(ln) or ln.startswith("#") or re.match(r"^\S+ \d+$", ln) for ln in lines)


def parse(stream: BinaryIO, report: ParseReport) -> Iterator[tuple[str, pa.RecordBatch]]:
    ctx: dict = {}
    chunks = line_chunks(stream, report, CHUNK)
    first = next(chunks, None)
    if first is None:
        raise ParseError("the file is empty", filename=report.filename)
    chunk, first_line = first
    if _decide_folded(bytes(chunk[: 1 << 16])):
        report.note("layout: folded stacks (one stack per line)")

        def again():
            yield chunk, first_line
            yield from chunks

        for batch in _parse_folded(again(), report, ctx):
            report.events += batch.num_rows
            yield "offcpu_stacks", batch
    else:
        report.note("layout: multi-line stacks")
        sm = _Multi(report, ctx)
        cur = first
        while cur is not None:
            chunk, first_line = cur
            text = bytes(chunk).decode("utf-8", "replace")
            for i, ln in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")):
                sm.feed(first_line + i, ln.rstrip("\r"))
            for batch in sm.take():
                report.events += batch.num_rows
                yield "offcpu_stacks", batch
            cur = next(chunks, None)
        sm.end_block()
        for batch in sm.take():
            report.events += batch.num_rows
            yield "offcpu_stacks", batch
        if sm.incomplete:
            report.note(_INCOMPLETE_NOTE.format(n=sm.incomplete, line=sm.first_incomplete))
    if report.events == 0:
        raise report.nothing_usable("expected bcc offcputime/offwaketime output or folded stacks")
