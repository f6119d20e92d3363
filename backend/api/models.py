"""Response shapes of the JSON API. All times are integer nanoseconds (`*_ns`); sizes in 512-byte sectors."""
from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class SkippedLine(BaseModel):
    line: int = Field(description="1-based line number in the file")
    reason: str
    text: str


class Source(BaseModel):
    id: int
    filename: str
    format: str
    events: int
    skipped_lines: int
    lines: int
    bytes: int
    skipped_examples: list[SkippedLine] = []
    notes: list[str] = []


class SourceDetail(Source):
    clock_offset_ns: int = Field(0, description="added to the source's own times to place them on the analysis timeline")
    t_min_ns: int | None
    t_max_ns: int | None


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
    messages: list[SchedulerMessage] = Field(description="I/O scheduler `m` lines logged on the device while the request waited")


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


class HeatmapCell(BaseModel):
    x: int = Field(description="time bin: [t0_ns + x·x_bin_ns, t0_ns + (x+1)·x_bin_ns)")
    y: int = Field(description="latency bin: [y_edges_ns[y], y_edges_ns[y+1]); bin 0 also holds anything below")
    count: int
    max_ns: int
    max_source_id: int = Field(description="the request behind max_ns: (max_source_id, max_line)")
    max_line: int


class Percentiles(BaseModel):
    count: int
    p50_ns: int | None
    p90_ns: int | None
    p99_ns: int | None
    p999_ns: int | None
    p9999_ns: int | None
    max_ns: int | None


class Heatmap(BaseModel):
    metric: str
    t0_ns: int | None
    t1_ns: int | None
    x_bins: int
    x_bin_ns: int | None
    y_bins: int
    y_edges_ns: list[int] = Field(description="y_bins + 1 latency bin edges (ns), equal steps in log10")
    cells: list[HeatmapCell] = Field(description="the non-empty cells only")
    percentiles: Percentiles = Field(description="exact (quantile_disc) over the same filter and window")


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


class LockPrimitive(BaseModel):
    name: str
    kind: str
    acquire: list[str]
    release: list[str]
    sleep: list[str]
    what: str
