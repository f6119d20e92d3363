"""Response shapes of the analyses' routes (backend/api/analyses.py) and the error body every route answers with.
All times are integer nanoseconds (`*_ns`). Each other router keeps its response models beside its routes."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from ..limits import TIME_MAX, TIME_MIN


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
    files: list[SourceFile] = Field(
        [], description="the files that formed this source (a blktrace per-CPU set: one per CPU, in CPU order)"
    )


class Alignment(BaseModel):
    method: Literal["reference", "block_events", "same_clock", "start", "manual"] = Field(
        description="reference: the timeline's own clock; block_events: matched to a blktrace's requests; same_clock:"
        " spans overlap, taken as one clock; start: first events placed together (approximate);"
        " manual: set by a user"
    )
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
    clock_offset_ns: int = Field(
        0, description="ns added to the source's own times to place them on the analysis timeline"
    )
    waker_stacks: int = Field(
        0,
        description="records with a waker stack (bcc offwaketime, wakeuptime): the wake-up"
        " pairs of /wakers; 0 for other formats",
    )
    clock: str | None = Field(None, description="the clock its times come from, when the file names it")
    has_requests: bool = Field(
        False,
        description="its block requests are the analysis' (the Dispatch tab's, the requests routes'): a blkparse"
        " source's; with none, an ftrace source's rebuilt from block tracepoints (perf script, function_graph's"
        " block events)",
    )
    alignment: Alignment | None = None
    t_min_ns: int | None = Field(description="first timestamp, the source's own clock (ns)")
    t_max_ns: int | None = Field(description="last timestamp, the source's own clock (ns)")


class SourcePlacement(BaseModel):
    """Where to put a source on the analysis timeline: an offset, or the same span as another source."""

    clock_offset_ns: int | None = Field(
        None,
        ge=TIME_MIN,
        le=TIME_MAX,
        description="ns added to the source's own times (within ±2^62; the source's times plus it must be too)",
    )
    same_span_as: int | None = Field(
        None, ge=-(1 << 63) + 1, le=(1 << 63) - 1, description="id of a source of the same analysis whose span to take"
    )


class Created(BaseModel):
    id: str
    url: str = Field(description="the analysis' link path, /a/<id>")
    sources: list[Source]
    edit_key: str = Field(
        description="given this once: changing or deleting the analysis on a shared server needs it (header"
        " X-Edit-Key) or the server's token; the browser that uploaded keeps it"
    )


class AnalysisItem(BaseModel):
    id: str
    name: str
    created_at: datetime
    source_count: int
    bytes: int = Field(
        description="bytes uploaded: of the files its sources were read from (the rows derived from them and kept"
        " in the database are not counted: DuckDB does not size one analysis' rows)"
    )


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


class FieldError(BaseModel):
    loc: list[str | int] = Field(
        description="where: the part of the request (path, query, header, body), then the name"
    )
    msg: str
    type: str = Field(description="the kind of error (pydantic's): missing, int_parsing, less_than_equal, ...")


class ErrorBody(BaseModel):
    """The body of every error the API answers (4xx and 5xx; backend/app.py)."""

    detail: str = Field(description="what was wrong, in words")
    errors: list[FieldError] | None = Field(None, description="422 for a malformed request: each parameter's error")
    files: list[FileError] | None = Field(None, description="422 for an upload: the files that could not be read")


class IngestProgress(BaseModel):
    phase: str = Field(description="uploading | parsing | deriving | done | error")
    filename: str | None
    bytes_read: int
    bytes_total: int
    events: int
    error: str | None = None
