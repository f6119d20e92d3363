"""Response shapes of the JSON API. All times are integer nanoseconds (`*_ns`); sizes in 512-byte sectors."""
from __future__ import annotations

from datetime import datetime

from typing import Literal

from pydantic import BaseModel, Field


class SkippedLine(BaseModel):
    line: int = Field(description="1-based line number in the file")
    reason: str
    text: str


class SourceFile(BaseModel):
    filename: str
    bytes: int
    kind: str = Field(description="what the file is: 'blktrace per-CPU file, CPU 3', 'blkparse text', ...")
    sha256: str = Field("", description="SHA-256 of the file (hex)")


class Source(BaseModel):
    id: int
    filename: str = Field(description="the file's name; a blktrace per-CPU set's: NAME.blktrace.0-7")
    format: str
    events: int
    skipped_lines: int
    lines: int
    bytes: int = Field(description="bytes read: of all its files")
    skipped_examples: list[SkippedLine] = []
    notes: list[str] = []
    files: list[SourceFile] = Field([], description="the files that formed this source (a blktrace per-CPU set: one"
                                                    " per CPU, in CPU order)")


class Alignment(BaseModel):
    method: Literal["reference", "block_events", "same_clock", "start", "manual"] = Field(
        description="reference: the timeline's own clock; block_events: matched to a blktrace's requests; same_clock:"
                    " spans overlap, taken as one clock; start: first events placed together (approximate);"
                    " manual: set by a user")
    reference_source_id: int | None = Field(None, description="the source it was aligned to")
    matched: int | None = Field(None, description="block_events: events matched within 100 µs of the offset")
    candidates: int | None = Field(None, description="block_events: candidate (event, request) pairs looked at")
    residual_p50_ns: int | None = Field(None, description="block_events: median |difference − offset| of the matched")
    residual_max_ns: int | None = Field(None, description="block_events: max |difference − offset| of the matched")
    blk_source_id: int | None = None
    warnings: list[str] = []
    detail: str = Field("", description="how the offset was found, in words")


class SourceDetail(Source):
    sha256: str = Field(description="SHA-256 of the file as read (hex), to check against `sha256sum` of a copy")
    clock_offset_ns: int = Field(0, description="ns added to the source's own times to place them on the analysis timeline")
    waker_stacks: int = Field(0, description="records with a waker stack (bcc offwaketime, wakeuptime): the wake-up"
                                             " pairs of /wakers; 0 for other formats")
    clock: str | None = Field(None, description="the clock its times come from, when the file names it")
    alignment: Alignment | None = None
    t_min_ns: int | None = Field(description="first timestamp, the source's own clock (ns)")
    t_max_ns: int | None = Field(description="last timestamp, the source's own clock (ns)")


class SourcePlacement(BaseModel):
    """Where to put a source on the analysis timeline: an offset, or the same span as another source."""
    clock_offset_ns: int | None = Field(None, ge=-(1 << 62), le=1 << 62,
                                        description="ns added to the source's own times")
    same_span_as: int | None = Field(None, description="id of a source of the same analysis whose span to take")


class Created(BaseModel):
    id: str
    url: str = Field(description="the analysis' link path, /a/<id>")
    sources: list[Source]


class AnalysisItem(BaseModel):
    id: str
    name: str
    created_at: datetime
    source_count: int


class Analysis(BaseModel):
    id: str
    name: str
    created_at: datetime
    sources: list[SourceDetail]
    t_min_ns: int | None
    t_max_ns: int | None


class FileError(BaseModel):
    filename: str | None
    error: str
    line: int | None
    offset: int | None = Field(None, description="the byte offset of the problem, in a binary file")


class ErrorBody(BaseModel):
    detail: str
    files: list[FileError] | None = None


class IngestProgress(BaseModel):
    phase: str = Field(description="uploading | parsing | deriving | done | error")
    filename: str | None
    bytes_read: int
    bytes_total: int
    events: int
    error: str | None = None


class BlockRequest(BaseModel):
    source_id: int
    line: int = Field(description="file line of the request's first event; (source_id, line) identifies it")
    dev: str
    sector: int
    nsect: int | None = Field(description="size in 512-byte sectors")
    rwbs: str | None
    pid: int | None
    comm: str | None
    q_ns: int | None
    g_ns: int | None
    i_ns: int | None
    d_ns: int | None
    c_ns: int | None
    q2g_ns: int | None
    g2i_ns: int | None
    i2d_ns: int | None
    d2c_ns: int | None
    q2c_ns: int | None
    error: int | None = Field(description="errno of the completion, 0 = success")
    merged_bios: int
    requeues: int
    from_dev: str | None
    from_sector: int | None


class BlockEvent(BaseModel):
    line: int
    t_ns: int
    cpu: int | None
    pid: int | None = Field(description="null where the trace does not say (completions run in interrupt context)")
    action: str
    rwbs: str | None
    sector: int | None
    nsect: int | None
    comm: str | None
    error: int | None


class SchedulerMessage(BaseModel):
    line: int
    t_ns: int
    cpu: int
    message: str


class RequestDetail(BaseModel):
    request: BlockRequest
    events: list[BlockEvent]
    messages: list[SchedulerMessage] = Field(
        description="I/O scheduler `m` lines logged on the device while the request waited (from I, else Q, G or D,"
                    " to D, else C), in time order: all of them, or max_messages spread evenly over the whole wait"
                    " (the first and the last included) when there are more")
    messages_total: int = Field(description="scheduler messages logged on the device while the request waited")
    messages_truncated: bool = Field(description="messages holds fewer than messages_total (a sample)")


class Stats(BaseModel):
    n: int
    p50: int | None
    p95: int | None
    p99: int | None
    max: int | None


class DispatchGroup(BaseModel):
    key: str
    pid: int | None
    comm: str | None
    dev: str | None
    count: int
    i2d: Stats
    d2c: Stats
    q2c: Stats


class LatencyPoint(BaseModel):
    t_ns: int = Field(description="start of the time bucket")
    count: int
    p50_ns: int
    max_ns: int
    max_source_id: int = Field(description="the request behind max_ns: (max_source_id, max_line)")
    max_line: int


class LatencySeries(BaseModel):
    i2d: list[LatencyPoint] = Field(description="placed at each request's I (insert) time")
    d2c: list[LatencyPoint] = Field(description="placed at each request's D (dispatch) time")


class LatencyOverTime(BaseModel):
    t0_ns: int | None
    t1_ns: int | None
    bucket_ns: int | None
    series: LatencySeries


class FlameNode(BaseModel):
    name: str
    value: int = Field(description="in the graph's unit (µs off CPU, or stacks), this frame and all it called")
    delta: int | None = Field(None, description="differential graphs: after − before, in the graph's unit")
    lock: str | None = Field(None, description="this frame takes or sleeps on a known lock: the function name"
                             " waits are labelled with (e.g. down for __down); /waits?lock= finds them")
    children: list["FlameNode"] = []


class FlameGraph(BaseModel):
    unit: str = Field(description="us: µs off CPU; stacks: number of stack records (also those without a total)")
    total: int
    stacks: int = Field(description="distinct stacks merged")
    matched: int | None = Field(description="with filter: the part of total in stacks with a matching frame")
    root: FlameNode


class FlameDiff(BaseModel):
    unit: str
    total_a: int
    total_b: int
    root: FlameNode


class OffcpuTask(BaseModel):
    comm: str | None
    pid: int | None
    value_us: int
    stacks: int


class RowRef(BaseModel):
    source_id: int
    line: int = Field(description="first line of the record in its source file")


class WakerPair(BaseModel):
    comm: str | None = Field(description="the blocked task (bcc's target)")
    pid: int | None = Field(description="its pid as bcc prints it (a thread id); null when the dump has none")
    frames: list[str] = Field(description="the blocked task's stack, root first; empty for wakeuptime, which"
                                          " records only the waker's stack")
    lock: str | None = Field(description="lock or reason of the target stack (as waits are labelled, e.g."
                                         " `xfs_buf_lock via down`); null when no known lock is on it")
    waker_comm: str | None = Field(description="the task (or interrupt context, e.g. swapper/0) that woke it")
    waker_pid: int | None
    waker_frames: list[str] = Field(description="the waker's stack at the wake-up, root first")
    value_us: int = Field(description="µs blocked until the wake-up, summed over the records of this pair")
    records: int = Field(description="offwaketime records merged into this pair (a record without a total counts"
                                     " here but adds nothing to value_us)")
    rows: list[RowRef] = Field(description="where the records are: the first 10 (source, line), in file order")


class WakerPairs(BaseModel):
    matched_by: Literal["pid", "comm", "all"] = Field(
        description="the task filter used: pid when records have that pid, else comm; all without a filter")
    total_us: int = Field(description="µs over every matching pair (not only those listed): the base of shares")
    records: int = Field(description="records over every matching pair")
    pairs: int = Field(description="matching pairs, of which the first `limit` are listed")
    items: list[WakerPair] = Field(description="largest value_us first")


class LockPrimitive(BaseModel):
    name: str
    kind: str
    acquire: list[str]
    release: list[str]
    sleep: list[str]
    what: str


class TimelineSegments(BaseModel):
    """A lane's items as columns (item i is the i-th value of each list): compact, since a response holds thousands.
    An item is one segment (n = 1), or segments shorter than the lane's bucket merged per bucket, with runs of
    consecutive buckets of the same state joined."""
    states: list[str] = Field(description="the names `state` indexes: running | runnable | blocked, a lock, a "
                                          "function, queued | service")
    track: list[int] = Field(description="index into TRACKS: 0 state (task scheduler state), 1 wait (a wait, state = "
                                         "its lock), 2 call (a function), 3 queued (block I→D), 4 service (block D→C)")
    state: list[int] = Field(description="index into states")
    t0: list[int] = Field(description="start, ns after the response's t0_ns (clipped to the window)")
    t1: list[int] = Field(description="end, ns after the response's t0_ns")
    n: list[int] = Field(description="segments merged into the item (1: a single segment)")
    max: list[int] = Field(description="duration of the longest merged segment (ns)")
    line: list[int] = Field(description="the line of that segment in the lane's source: the event behind the item")
    depth: list[int | None] = Field(description="call nesting depth (track call), else null")


class TimelineCounter(BaseModel):
    name: str
    unit: str
    points: list[list[int]] = Field(description="[t_ns, value]: the value at the end of each bucket (first: at t0)")
    max: int


class TimelineBand(BaseModel):
    t0_ns: int
    t1_ns: int | None = Field(description="null: the window's length is unknown (no header said it)")


class TimelineLane(BaseModel):
    id: str = Field(description="task:<source>:<pid> | dev:<source>:<dev> | proc:<source>:<pid> | window:<source>")
    kind: Literal["task", "device", "process", "window"]
    source_id: int
    label: str
    group: str | None
    pid: int | None
    dev: str | None
    why: str = Field(description="why this lane is shown (its rank)")
    segs: TimelineSegments | None = Field(None, description="the lane's items (none for a window)")
    bucket_ns: int | None = Field(None, description="this lane's bucket (ns): segments shorter are merged per "
                                                     "bucket. The pixel (bucket_ns of the response) or up to 4 times "
                                                     "it (the precomputed level read), doubled again for dense lanes "
                                                     "when the response would exceed max_items")
    counter: TimelineCounter | None = None
    band: TimelineBand | None = None


class TimelineArrow(BaseModel):
    chain_id: int
    relation: str = Field(description="woken_by | held_by | io_completion: from the waker/holder/device to the waiter")
    from_lane: str
    to_lane: str
    from_ns: int
    to_ns: int
    request: dict | None = Field(description="io_completion: the block request {source_id, line}")


class TimelineMark(BaseModel):
    source_id: int
    line: int
    t_ns: int
    pid: int | None
    comm: str | None
    text: str | None


class Timeline(BaseModel):
    t0_ns: int | None
    t1_ns: int | None
    width_px: int
    bucket_ns: int | None = Field(description="ns per pixel: segments shorter than this are merged per bucket")
    lanes: list[TimelineLane]
    arrows: list[TimelineArrow]
    marks: list[TimelineMark] = []
    total_lanes: int = Field(description="lanes with something in the window (those not returned: ask with lanes=)")
    tracks: list[str] = Field(["state", "wait", "call", "queued", "service"], description="the names track codes index")
    max_items: int = Field(description="items at most in one response (dense lanes get wider buckets to fit)")
