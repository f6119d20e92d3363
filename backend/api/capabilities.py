"""Route of what a capture can tell: the views with data, what is missing and how to capture it, lost events."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..queries import capabilities as capability_queries
from .deps import AnalysisId, AnalysisRouter, Cache, Cursor

router = AnalysisRouter(prefix="/api")


class ViewCapability(BaseModel):
    tab: str = Field(description="stalls | timeline | dispatch | offcpu | sources")
    state: str = Field(description="data: the view has something to show; empty: it has nothing (summary says why)")
    summary: str


class MissingCapability(BaseModel):
    what: str = Field(description="what the analysis cannot show")
    why: str = Field(description="what the capture lacks for it")
    capture: str = Field(description="the capture command (or setting) that adds it next time")
    own: bool = Field(
        description="the uploaded capture itself lacks it (events it does not hold); false: another tool's capture"
        " (none of that kind was uploaded)"
    )


class LostRange(BaseModel):
    source_id: int
    filename: str
    line: int | None = Field(description="the marker's line (null: the overrun is known from the header)")
    cpu: int | None
    t0_ns: int | None = Field(description="aligned: the CPU's last event before the loss (null: unknown)")
    t1_ns: int | None = Field(description="aligned: its first event after it")
    what: str


class CaptureEvents(BaseModel):
    calls: int
    calls_with_task: int
    call_times: int = Field(description="timestamps of calls (entries and exits)")
    sched_switch: int
    sched_wakeup: int
    stack_events: int = Field(description="kernel_stack / user_stack events (-T, the stacktrace trigger)")
    ftrace_block_events: int
    block_requests: int
    offcpu_stacks: int
    offwake_stacks: int
    waits: int
    inferred_waits: int
    waits_with_stack: int
    chains: int


class Capabilities(BaseModel):
    views: list[ViewCapability]
    missing: list[MissingCapability]
    lost: list[LostRange] = Field(description="where the capture lost events (buffer overruns), in file order")
    events: CaptureEvents


@router.get("/analyses/{analysis_id}/capabilities", response_model=Capabilities)
def capture_capabilities(analysis_id: AnalysisId, con: Cursor, cache: Cache):
    """What this capture can tell: which views have data, what is missing for the others and the capture command
    that would add it next time, and where events were lost."""
    return capability_queries.capabilities(con, cache, analysis_id)
