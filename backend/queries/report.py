"""A chain of waits as a kernel developer would write it in a bug report: plain ASCII, at most WIDTH columns.

First the chain in a few lines (who waited how long on what, woken or held by whom, down to the block request),
then each link with its times, evidence (the trace's line numbers), and its stack innermost frame first, as the
kernel prints a call trace; an io_completion link's block request with its phases (Q, G, I, D, C), their lines and
the time between them. Text from the trace (task names, frames) is made ASCII and printable.
"""

from __future__ import annotations

import textwrap
import unicodedata
from typing import TYPE_CHECKING

from . import analyses, stalls
from . import requests as request_queries

if TYPE_CHECKING:
    from ..cache import AnalysisCache

WIDTH = 80
MAX_FRAMES = 24
_ASCII = {"→": "->", "←": "<-", "µ": "u", "μ": "u", "—": "-", "–": "-", "…": "...", "×": "x", "≥": ">=", "≤": "<="}


def ascii_text(value) -> str:
    """Printable ASCII: arrows and µ spelled out, accents dropped, anything else (control bytes too) as '?'."""
    text = "".join(_ASCII.get(ch, ch) for ch in str(value))
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    text = text.encode("ascii", "replace").decode("ascii")
    return "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)


def duration(ns: int | None) -> str:
    if ns is None:
        return "?"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            value = ns / scale
            return f"{value:.3f} {unit}" if value < 100 else f"{value:.1f} {unit}"
    return f"{ns} ns"


def at(ns: int | None) -> str:
    """A time on the analysis timeline, in seconds."""
    return "?" if ns is None else f"{ns / 1e9:.9f} s"


def _task(comm, pid) -> str:
    return f"{ascii_text(comm or '?')} (pid {pid})" if pid is not None else ascii_text(comm or "?")


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        ascii_text(text),
        WIDTH,
        initial_indent=indent,
        subsequent_indent=" " * len(indent) + "  ",
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def _cut_to_width(line: str) -> str:
    """The line as is when it fits the report's width (80 columns), else cut, ending in '...'."""
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def _relation(link: dict, nxt: dict | None) -> str:
    if link["relation"] == "woken_by" and nxt:
        return f"woken by {_task(nxt['comm'], nxt['pid'])}"
    if link["relation"] == "held_by" and nxt:
        return f"lock held by {_task(nxt['comm'], nxt['pid'])}"
    if link["relation"] == "io_completion":
        return "waiting for an I/O completion"
    return ""


def chain_report(con, cache: AnalysisCache, analysis_id: str, rank: int) -> str | None:
    """The chain of that rank as text, or None when the analysis has no such chain."""
    found = [c for c in stalls.chains(con, cache, analysis_id, limit=rank) if c["id"] == rank]
    if not found:
        return None
    chain = found[0]
    analysis = analyses.analysis(con, analysis_id)
    sources = {s["id"]: s for s in analyses.sources(con, analysis_id)}
    links = chain["links"]
    first = links[0]
    out = [
        _cut_to_width(
            f"Stall: {_task(first['comm'], first['pid'])} blocked {duration(chain['duration_ns'])}"
            f"{' on ' + ascii_text(first['lock']) if first['lock'] else ''}"
        ),  # fmt: skip
        "",
        *_wrap(f"Analysis: {analysis['name']} ({analysis_id}), chain #{rank} of its stall chains.", ""),
        "Sources (line numbers below are lines of these files):",
        *(_cut_to_width(f"  [{sid}] {ascii_text(s['filename'])} ({s['format']})") for sid, s in sources.items()),
        "",
        "The chain:",
    ]
    for i, link in enumerate(links):
        nxt = links[i + 1] if i + 1 < len(links) else None
        prefix = "  " if i == 0 else "  " + "  " * min(i, 8) + "-> "
        if link["wait_line"] is None:
            what = f"{_task(link['comm'], link['pid'])} was running and ended the chain"
        else:
            lock = f" on {link['lock']}" if link["lock"] else ""
            what = f"{_task(link['comm'], link['pid'])} waited {duration(link['duration_ns'])}{lock}"
            rel = _relation(link, nxt)
            what += f", {rel}" if rel else ""
        out += _wrap(what, prefix)
        req = link.get("request")
        if req:
            out += _wrap(_request_line(req) + f": I2D {duration(_gap(req, 'i_ns', 'd_ns'))}, D2C "
                         f"{duration(_gap(req, 'd_ns', 'c_ns'))}", prefix + "   ")  # fmt: skip
    for i, link in enumerate(links):
        out += ["", *_link_details(con, analysis_id, i + 1, link, sources)]
    return "\n".join(_cut_to_width(line.rstrip()) for line in out) + "\n"


def _gap(req: dict, a: str, b: str) -> int | None:
    return req[b] - req[a] if req.get(a) is not None and req.get(b) is not None else None


def _request_line(req: dict) -> str:
    size = f" + {req['nsect']}" if req.get("nsect") is not None else ""
    return (
        f"block request {req['dev']} {req.get('rwbs') or ''} {req['sector']}{size} of {_task(req['comm'], req['pid'])}"
    )


def _link_details(con, analysis_id: str, n: int, link: dict, sources: dict) -> list[str]:
    src = sources.get(link["source_id"], {}).get("filename", "?")
    if link["wait_line"] is None:
        head = f"[{n}] {_task(link['comm'], link['pid'])}, at {at(link['start_ns'])}"
    else:
        head = f"[{n}] {_task(link['comm'], link['pid'])} blocked {duration(link['duration_ns'])}" + (
            f" on {link['lock']}" if link["lock"] else ""
        )
    out = _wrap(head, "")
    if link["wait_line"] is not None:
        end = "" if link["end_known"] else " (still waiting when the trace ends)"
        out += _wrap(f"from {at(link['start_ns'])} to {at(link['end_ns'])}{end}", "    ")
    out += _wrap(f"evidence ({ascii_text(src)}): {link['evidence']}" + (" [inferred]" if link["inferred"] else ""),
                 "    ")  # fmt: skip
    also = link.get("also_waiting") or []
    if also:
        names = ", ".join(f"{_task(a['comm'], a['pid'])} {duration(a['duration_ns'])}" for a in also[:6])
        more = f" and {len(also) - 6} more" if len(also) > 6 else ""
        out += _wrap(f"also waiting for the same: {names}{more}", "    ")
    frames = list(reversed(link["stack"] or []))
    if frames:
        out.append("    stack (innermost first):")
        out += [f"      {ascii_text(f)}" for f in frames[:MAX_FRAMES]]
        if len(frames) > MAX_FRAMES:
            out.append(f"      ... {len(frames) - MAX_FRAMES} frames nearer the root")
    req = link.get("request")
    if req:
        out += _request_details(con, analysis_id, req, sources)
    return out


def _request_details(con, analysis_id: str, req: dict, sources: dict) -> list[str]:
    detail = request_queries.request_detail(con, analysis_id, req["source_id"], req["line"], max_messages=3)
    src = sources.get(req["source_id"], {}).get("filename", "?")
    out = _wrap(f"{_request_line(req)}, from {src}:", "    ")
    if detail is None:
        return out
    r = detail["request"]
    names = {"A": "remapped", "Q": "queued", "G": "got a request", "I": "inserted in the scheduler",
             "D": "dispatched to the device", "C": "completed", "M": "back merge", "F": "front merge"}  # fmt: skip
    prev = None
    for e in detail["events"]:
        if e["action"] not in names:
            continue
        since = f" (+{duration(e['t_ns'] - prev)})" if prev is not None and e["t_ns"] is not None else ""
        out.append(
            _cut_to_width(f"      {e['action']}  {at(e['t_ns'])}{since}  line {e['line']}  {names[e['action']]}")
        )
        if e["action"] in "QGIDC" and e["t_ns"] is not None:
            prev = e["t_ns"]
    phases = ", ".join(f"{k.upper()} {duration(r[f'{k}_ns'])}" for k in ("q2g", "g2i", "i2d", "d2c", "q2c")
                       if r.get(f"{k}_ns") is not None)  # fmt: skip
    if phases:
        out += _wrap(f"phases: {phases}", "      ")
    if detail["messages_total"]:
        m = detail["messages"][0]
        out += _wrap(
            f"{detail['messages_total']} I/O scheduler messages on {r['dev']} while it waited, the first at line"
            f" {m['line']}: {m['message']}",
            "      ",
        )
    return out
