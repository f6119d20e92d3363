"""A trace.dat with function_graph calls and scheduler events, written as the kernel's ring buffer holds them.

    python -m bench.gen_tracedat OUT.dat [--rounds 50] [--template T.dat]

No kernel here can record function_graph (tests/golden/tracedat/README.md), so its events are made: the header,
event formats, kallsyms and saved cmdlines are a real capture's (the v7 sample converted to an uncompressed v6
file by `trace-cmd convert`: Linux 5.15, x86_64, 4 CPUs, clock perf), and new ring-buffer pages hold the events,
each encoded from the format stored in the file (event ids and field offsets read from `trace-cmd dump`, not
assumed). Each round, on 4 CPUs:

* CPU 0: gnome-shell (3334) writes: do_syscall_64 > __x64_sys_write > ksys_write > vfs_write >
  ext4_buffered_write_iter > down_write > rwsem_down_write_slowpath > schedule, where it sleeps (sched_switch, D)
  until NetworkManager wakes it (sched_waking), then up_write();
* CPU 1: NetworkManager (754) holds the rwsem meanwhile: the same write path, down_write(), a filemap_read(),
  then up_write { sched_waking of 3334 };
* CPUs 2 and 3: sshd (2601) and gmain (798) read: do_syscall_64 > __x64_sys_read > ksys_read > vfs_read >
  ext4_file_read_iter > filemap_read(), mutex_lock(), mutex_unlock().

Events per round: 66 funcgraph entries/exits, 2 sched_switch, 1 sched_waking (69); 33 calls.
"""

from __future__ import annotations

import argparse
import re
import struct
import subprocess
import tempfile
from pathlib import Path

from parsers.tracedat_layout import read_layout

SAMPLE = Path(__file__).resolve().parents[2] / "shared/samples-public/trace-cmd-report/trace-dat/langraph-trace.dat"
WRITER, HOLDER, READERS = (3334, "gnome-shell"), (754, "NetworkManager"), [(2601, "sshd"), (798, "gmain")]
T0 = 11_400_000_000_000  # ns, after the sample's own span
ROUND_NS = 200_000
WRITE_PATH = ["do_syscall_64", "__x64_sys_write", "ksys_write", "vfs_write", "ext4_buffered_write_iter"]
READ_PATH = ["do_syscall_64", "__x64_sys_read", "ksys_read", "vfs_read", "ext4_file_read_iter"]
FUNCS = sorted(
    {
        *WRITE_PATH,
        *READ_PATH,
        "down_write",
        "rwsem_down_write_slowpath",
        "schedule",
        "up_write",
        "filemap_read",
        "mutex_lock",
        "mutex_unlock",
    }
)
CALLS_PER_ROUND = 33
EVENTS_PER_ROUND = 69


class Formats:
    """Event ids and field offsets from the formats a trace.dat stores (trace-cmd dump)."""

    def __init__(self, dat: Path):
        text = ""
        for what in ("--ftrace-events", "--events"):
            text += subprocess.run(
                ["trace-cmd", "dump", "-i", str(dat), what], capture_output=True, text=True, check=True
            ).stdout
        self.ids, self.fields = {}, {}
        for block in re.split(r"\n(?=name: )", text):
            name = re.match(r"name: (\S+)", block)
            ident = re.search(r"^ID: (\d+)", block, re.M)
            if not (name and ident):
                continue
            self.ids[name[1]] = int(ident[1])
            self.fields[name[1]] = {
                m[1]: (int(m[2]), int(m[3]))
                for m in re.finditer(r"field:[^;]*?(\w+)(?:\[\d+\])?;\s*offset:(\d+);\s*size:(\d+);", block)
            }
        syms = subprocess.run(
            ["trace-cmd", "dump", "-i", str(dat), "--kallsyms"], capture_output=True, text=True, check=True
        ).stdout
        self.addr = {m[2]: int(m[1], 16) for m in re.finditer(r"^([0-9a-f]{16}) [Tt] (\S+)$", syms, re.M)}

    def record(self, event: str, common_pid: int, **values) -> bytes:
        fields = self.fields[event]
        size = max(off + n for off, n in fields.values())
        buf = bytearray((size + 3) // 4 * 4)
        for name, value in {"common_type": self.ids[event], "common_pid": common_pid, **values}.items():
            off, n = fields[name]
            if isinstance(value, str):
                buf[off : off + n] = value.encode()[: n - 1].ljust(n, b"\0")
            else:
                buf[off : off + n] = value.to_bytes(n, "little", signed=value < 0)
        return bytes(buf)


def events(fmt: Formats, rounds: int) -> dict[int, list[tuple[int, bytes]]]:
    """(time, record) per CPU, in time order."""
    per_cpu: dict[int, list[tuple[int, bytes]]] = {0: [], 1: [], 2: [], 3: []}

    def call_tree(cpu: int, pid: int, t: int, path: list[str], leaves: list[str], inner=None) -> int:
        stack = []
        for depth, func in enumerate(path):
            per_cpu[cpu].append((t, fmt.record("funcgraph_entry", pid, func=fmt.addr[func], depth=depth)))
            stack.append((func, depth, t))
            t += 700
        if inner:
            t = inner(t, len(path))
        for func in leaves:
            per_cpu[cpu].append((t, fmt.record("funcgraph_entry", pid, func=fmt.addr[func], depth=len(path))))
            per_cpu[cpu].append(
                (
                    t + 900,
                    fmt.record(
                        "funcgraph_exit",
                        pid,
                        func=fmt.addr[func],
                        depth=len(path),
                        overrun=0,
                        calltime=t,
                        rettime=t + 900,
                    ),
                )
            )
            t += 1500
        for func, depth, start in reversed(stack):
            per_cpu[cpu].append(
                (
                    t,
                    fmt.record(
                        "funcgraph_exit", pid, func=fmt.addr[func], depth=depth, overrun=0, calltime=start, rettime=t
                    ),
                )
            )
            t += 600
        return t

    for r in range(rounds):
        base = T0 + r * ROUND_NS
        wake_at = base + 60_000

        def holder_release(t: int, depth: int) -> int:
            # up_write { sched_waking(writer) }: the holder's release wakes the writer
            per_cpu[1].append((t, fmt.record("funcgraph_entry", HOLDER[0], func=fmt.addr["up_write"], depth=depth)))
            per_cpu[1].append(
                (wake_at, fmt.record("sched_waking", HOLDER[0], comm=WRITER[1], pid=WRITER[0], prio=120, target_cpu=0))
            )
            per_cpu[1].append(
                (
                    wake_at + 800,
                    fmt.record(
                        "funcgraph_exit",
                        HOLDER[0],
                        func=fmt.addr["up_write"],
                        depth=depth,
                        overrun=0,
                        calltime=t,
                        rettime=wake_at + 800,
                    ),
                )
            )
            return wake_at + 1500

        def holder_body(t: int, depth: int) -> int:
            for func in ("down_write", "filemap_read"):
                per_cpu[1].append((t, fmt.record("funcgraph_entry", HOLDER[0], func=fmt.addr[func], depth=depth)))
                per_cpu[1].append(
                    (
                        t + 2000,
                        fmt.record(
                            "funcgraph_exit",
                            HOLDER[0],
                            func=fmt.addr[func],
                            depth=depth,
                            overrun=0,
                            calltime=t,
                            rettime=t + 2000,
                        ),
                    )
                )
                t += 3000
            return holder_release(max(t, wake_at - 5000), depth)

        def writer_sleep(t: int, depth: int) -> int:
            # down_write > rwsem_down_write_slowpath > schedule: switched out (D) until woken, then up_write()
            opened = []
            for i, func in enumerate(("down_write", "rwsem_down_write_slowpath", "schedule")):
                per_cpu[0].append((t, fmt.record("funcgraph_entry", WRITER[0], func=fmt.addr[func], depth=depth + i)))
                opened.append((func, depth + i, t))
                t += 500
            per_cpu[0].append(
                (
                    t,
                    fmt.record(
                        "sched_switch",
                        WRITER[0],
                        prev_comm=WRITER[1],
                        prev_pid=WRITER[0],
                        prev_prio=120,
                        prev_state=2,
                        next_comm="swapper/0",
                        next_pid=0,
                        next_prio=120,
                    ),
                )
            )
            t = wake_at + 4000
            per_cpu[0].append(
                (
                    t,
                    fmt.record(
                        "sched_switch",
                        0,
                        prev_comm="swapper/0",
                        prev_pid=0,
                        prev_prio=120,
                        prev_state=0,
                        next_comm=WRITER[1],
                        next_pid=WRITER[0],
                        next_prio=120,
                    ),
                )
            )
            t += 1000
            for func, d, start in reversed(opened):
                per_cpu[0].append(
                    (
                        t,
                        fmt.record(
                            "funcgraph_exit",
                            WRITER[0],
                            func=fmt.addr[func],
                            depth=d,
                            overrun=0,
                            calltime=start,
                            rettime=t,
                        ),
                    )
                )
                t += 400
            return t

        call_tree(0, WRITER[0], base + 20_000, WRITE_PATH, ["up_write"], writer_sleep)
        call_tree(1, HOLDER[0], base + 10_000, WRITE_PATH, [], holder_body)
        for cpu, (pid, _) in zip((2, 3), READERS):
            call_tree(cpu, pid, base + 5_000 + 3_000 * cpu, READ_PATH, ["filemap_read", "mutex_lock", "mutex_unlock"])
    for cpu in per_cpu:
        per_cpu[cpu].sort(key=lambda e: e[0])
    return per_cpu


def pages(records: list[tuple[int, bytes]], page_size: int) -> bytes:
    """Ring-buffer pages: <u64 timestamp><u64 commit><events>, each event <type_len:5 | time_delta:27><data>."""
    out, at = bytearray(), 0
    room = page_size - 16
    while at < len(records):
        start, body, last = records[at][0], bytearray(), records[at][0]
        while at < len(records):
            t, data = records[at]
            if len(body) + 4 + len(data) > room:
                break
            delta = t - last
            assert 0 <= delta < 1 << 27 and len(data) <= 112
            body += struct.pack("<I", (len(data) // 4) | (delta << 5)) + data
            last = t
            at += 1
        out += struct.pack("<QQ", start, len(body)) + body + bytes(room - len(body))
    return bytes(out)


def write(out: Path, rounds: int, template: Path | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if template is None:
            template = Path(tmp) / "template-v6.dat"
            subprocess.run(
                [
                    "trace-cmd",
                    "convert",
                    "-i",
                    str(SAMPLE),
                    "-o",
                    str(template),
                    "--file-version",
                    "6",
                    "--compression",
                    "none",
                ],
                check=True,
                capture_output=True,
            )
        fmt = Formats(template)
        data = template.read_bytes()
        with open(template, "rb") as f:
            layout = read_layout(f, len(data))
        table = data.rindex(b"flyrecord\0", 0, min(off for _, off, size in layout.buffers[0].cpus if size)) + 10
        per_cpu = events(fmt, rounds)
        blocks = [pages(per_cpu[cpu], layout.page_size) for cpu in range(layout.cpus)]
        at = (table + 16 * layout.cpus + layout.page_size - 1) // layout.page_size * layout.page_size
        with open(out, "wb") as f:
            f.write(data[:table])
            for block in blocks:
                f.write(struct.pack("<QQ", at, len(block)))
                at += len(block)
            f.write(bytes(-f.tell() % layout.page_size))
            for block in blocks:
                f.write(block)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--template", type=Path)
    args = ap.parse_args()
    write(args.out, args.rounds, args.template)


if __name__ == "__main__":
    main()
