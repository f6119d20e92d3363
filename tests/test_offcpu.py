"""Off-CPU stack parser (parsers/offcpu.py) and flame trees (backend/queries/flame.py).

Golden numbers: record counts and totals were checked independently of the parser with
`grep -E '^\\s+[0-9]+\\s*$' | awk` (multi-line totals) and `grep -E '^[^ #;][^;]*(;[^;]*)+ [0-9]+$' | awk`
(folded lines) on each file; the single records were read by hand at the lines named in each test.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pytest

from backend.queries.flame import build_tree, diff_trees
from parsers import detect, offcpu
from parsers.common import ParseError, ParseReport, head_lines
from tests.conftest import PUBLIC, SAMPLES, needs_public

OFFCPU = PUBLIC / "offcputime"
OFFWAKE = PUBLIC / "offwaketime"
SEED = SAMPLES / "xfs-open-stall.offcputime.txt"


def parse_bytes(data: bytes, name: str = "t.txt") -> tuple[list[dict], ParseReport]:
    report = ParseReport(name)
    batches = [b for table, b in offcpu.parse(io.BytesIO(data), report) if table == "offcpu_stacks"]
    for b in batches:
        assert b.schema == offcpu.OFFCPU_STACKS
    rows = pa.Table.from_batches(batches, schema=offcpu.OFFCPU_STACKS).sort_by("line").to_pylist()
    assert report.events == len(rows)
    return rows, report


def parse_file(path: Path) -> tuple[list[dict], ParseReport]:
    return parse_bytes(path.read_bytes(), path.name)


def at(rows: list[dict], line: int) -> dict:
    [row] = [r for r in rows if r["line"] == line]
    return row


def total(rows: list[dict]) -> int:
    return sum(r["value_us"] for r in rows if r["value_us"] is not None)


# --------------------------------------------------------------------------------------- seed excerpt


def test_seed_excerpt_bare_stack_is_one_incomplete_record():
    rows, report = parse_file(SEED)
    assert len(rows) == 1
    r = rows[0]
    assert r["line"] == 1 and r["kind"] == "offcpu"
    assert r["incomplete"] is True and r["value_us"] is None
    assert r["comm"] is None and r["pid"] is None and r["tid"] is None
    # 22 kernel frames (ffffffff... addresses) printed leaf first, then one user frame
    # `00007fb0698162ed [unknown]` (the syscall's caller). Root first: the user frame comes first.
    assert len(r["frames"]) == 23
    assert r["frames"][0] == "[unknown]"
    assert r["frames"][1] == "entry_SYSCALL_64_fastpath"
    assert r["frames"][-1] == "finish_task_switch"
    assert r["frames"][-6:] == ["xfs_buf_lock", "down", "__down", "schedule_timeout", "schedule", "finish_task_switch"]
    assert "xfs_buf_lock" in r["frames"] and "xfs_dir3_leaf_read.constprop.16" in r["frames"]
    assert r["kernel_frames"] == 22
    assert r["waker_frames"] is None and r["waker_comm"] is None
    assert report.skipped == 0
    assert (
        "1 incomplete record(s): a stack with no total (µs) after it, e.g. an excerpt quoted by hand; "
        "kept with value_us null and incomplete=true (first at line 1)"
    ) in report.notes
    assert offcpu.header_window_s(SEED.read_text().splitlines()) is None


# --------------------------------------------------------------------------------------- offcputime


@needs_public
def test_default_stacks_kernel_only():
    rows, report = parse_file(OFFCPU / "bcc-offcputime-K-default-stacks.txt")
    assert len(rows) == 61
    assert total(rows) == 399554730
    assert report.skipped == 0
    assert not any(r["incomplete"] for r in rows)
    assert all(r["kind"] == "offcpu" and r["waker_frames"] is None for r in rows)
    # header `... by kernel stack... Hit Ctrl-C to end.`: all frames are kernel, window unknown
    assert all(r["kernel_frames"] == len(r["frames"]) for r in rows)
    assert any("capture window unknown" in n for n in report.notes)
    assert not any(n.startswith("window_s=") for n in report.notes)
    # lines 3-17: 2016 bcc, comm alone on the last stack line (`    chmod`), total 13
    r = at(rows, 3)
    assert r["comm"] == "chmod" and r["pid"] is None and r["value_us"] == 13
    assert r["frames"][0] == "page_fault" and r["frames"][-1] == "schedule" and len(r["frames"]) == 13
    # lines 19-24: `ddebug_tables` is a (bogus) frame, `rcuos/0` the comm
    r = at(rows, 19)
    assert r["comm"] == "rcuos/0" and r["value_us"] == 22
    assert r["frames"] == ["ddebug_tables", "ret_from_fork", "kthread", "rcu_nocb_kthread", "schedule"]
    # lines 565-573: the last (largest) stack
    r = at(rows, 565)
    assert r["comm"] == "supervise" and r["value_us"] == 81670888
    assert r["frames"][0] == "entry_SYSCALL_64_fastpath" and r["frames"][-1] == "schedule"


@needs_public
def test_folded_kernel_only():
    rows, report = parse_file(OFFCPU / "bcc-offcputime-K-f-folded.txt")
    assert "layout: folded stacks (one stack per line)" in report.notes
    assert len(rows) == 47
    assert total(rows) == 184680988
    assert report.skipped == 0
    # line 1: `bash;entry_SYSCALL_64_fastpath;sys_read;...;rwsem_down_read_failed;schedule 8`
    r = at(rows, 1)
    assert r["comm"] == "bash" and r["value_us"] == 8 and r["pid"] is None
    assert r["frames"] == [
        "entry_SYSCALL_64_fastpath",
        "sys_read",
        "vfs_read",
        "__vfs_read",
        "tty_read",
        "n_tty_read",
        "call_rwsem_down_read_failed",
        "rwsem_down_read_failed",
        "schedule",
    ]
    assert r["kernel_frames"] is None  # no header, no annotation, no delimiter: unknown
    # line 7: `jbd2/xvda1-8;...` - the `-8` is part of the comm (not every comm has a -PID suffix)
    r = at(rows, 7)
    assert r["comm"] == "jbd2/xvda1-8" and r["pid"] is None and r["value_us"] == 828
    assert r["frames"][0] == "mb_cache_list"
    # line 47: the largest
    r = at(rows, 47)
    assert r["comm"] == "supervise" and r["value_us"] == 40835611 and len(r["frames"]) == 7


@needs_public
def test_offcputime_doc_file():
    path = OFFCPU / "bcc-offcputime_example.txt"
    rows, report = parse_file(path)
    assert len(rows) == 63 + 47  # multi-line records + folded lines
    assert total(rows) == 406374349 + 184680988
    assert not any(r["incomplete"] for r in rows)
    # prose, command lines, `time` output and usage text are skipped with reasons
    assert report.skipped == 93
    reasons = {e.reason for e in report.examples}
    assert "prose / not part of a stack record" in reasons
    assert report.examples[0].line == 1
    assert "window_s=5" in report.notes
    assert offcpu.header_window_s(path.read_text().splitlines()) == 5.0
    # lines 630-643 (after `# ./offcputime -K -p 26651 5`)
    r = at(rows, 630)
    assert r["comm"] == "dd" and r["value_us"] == 4413909 and r["kernel_frames"] == 12
    # line 669, folded after `# ./offcputime -K -f 5`: -K makes every frame kernel
    r = at(rows, 669)
    assert r["comm"] == "jbd2/xvda1-8" and r["value_us"] == 828 and r["kernel_frames"] == 12
    # the usage text's indented lines (`    ./offcputime   # trace ...`) are not a record
    assert max(r["line"] for r in rows) == 709


@needs_public
def test_profile_doc_modern_layout():
    rows, report = parse_file(OFFCPU / "bcc-profile_example-same-stack-format.txt")
    assert len(rows) == 52 + 222 + 1
    assert total(rows) == 490 + 689
    assert "profile output (`Sampling at N Hertz`): values are sample counts, not microseconds" in report.notes
    assert "window_s=5" in report.notes
    assert any("line 594: capture window 2 s" in n for n in report.notes)
    # lines 12-19: modern `-                cp (9036)` comm line
    r = at(rows, 12)
    assert r["comm"] == "cp" and r["pid"] == 9036 and r["value_us"] == 1
    assert r["frames"] == [
        "[unknown]",
        "page_fault",
        "do_page_fault",
        "__do_page_fault",
        "handle_mm_fault",
        "filemap_map_pages",
    ]
    assert r["kernel_frames"] is None  # `user + kernel stack`, no delimiter, no addresses
    # lines 201-206: -d, delimiter `--` kept as `-` between user and kernel frames
    r = at(rows, 201)
    assert r["frames"] == ["__write", "-", "entry_SYSCALL_64_fastpath", "sys_write", "__vfs_write"]
    assert r["kernel_frames"] == 3 and r["comm"] == "dd" and r["pid"] == 25036
    # line 351: folded with `_[k]` annotations (-adf)
    r = at(rows, 351)
    assert r["frames"] == [
        "[unknown]",
        "read",
        "-",
        "entry_SYSCALL_64_fastpath",
        "SyS_read",
        "vfs_read",
        "rw_verify_area",
        "security_file_permission",
        "__fsnotify_parent",
    ]
    assert r["kernel_frames"] == 6 and r["comm"] == "dd" and r["value_us"] == 1
    # line 348 `dd;[unknown] 1` in an annotated file: no kernel frame
    assert at(rows, 348)["kernel_frames"] == 0
    # lines 621-623: the doc cut the record before its count
    [inc] = [r for r in rows if r["incomplete"]]
    assert inc["line"] == 621 and inc["comm"] == "python" and inc["pid"] == 2827439
    assert inc["frames"] == ["[unknown]", "[unknown]"] and inc["value_us"] is None
    # `-U` header at line 633: user stacks only
    assert at(rows, 635)["kernel_frames"] == 0
    # line 330, a tab-indented URL, is prose, not a frame
    assert all(r["line"] != 330 for r in rows)


# --------------------------------------------------------------------------------------- offwaketime


@needs_public
def test_offwaketime_doc_file():
    rows, report = parse_file(OFFWAKE / "bcc-offwaketime_example.txt")
    assert len(rows) == 5 + 118
    assert total(rows) == 30254518 + 76843522
    assert all(r["kind"] == "offwake" for r in rows)
    assert "window_s=5" in report.notes
    # lines 26-58: `waker:  swapper/0`, waker stack root first, `-  -`, target stack leaf first, `target:  cksum`
    r = at(rows, 26)
    assert r["comm"] == "cksum" and r["pid"] is None and r["value_us"] == 56529
    assert r["waker_comm"] == "swapper/0" and r["waker_pid"] is None
    assert r["waker_frames"][0] == "blk_mq_complete_request" and r["waker_frames"][-1] == "autoremove_wake_function"
    assert len(r["waker_frames"]) == 10
    assert r["frames"][0] == "link_path_walk" and r["frames"][-1] == "schedule" and len(r["frames"]) == 20
    assert r["kernel_frames"] == 20  # kernel addresses
    # line 223, old folded: `target;...;schedule;-;wake_bit_function;...;page_fault;;run 117`
    r = at(rows, 223)
    assert r["comm"] == "run" and r["waker_comm"] == "run" and r["value_us"] == 117
    assert r["frames"][0] == "page_fault" and r["frames"][-1] == "schedule"
    assert r["waker_frames"] == [
        "page_fault",
        "do_page_fault",
        "__do_page_fault",
        "handle_mm_fault",
        "unlock_page",
        "__wake_up_bit",
        "__wake_up",
        "__wake_up_common",
        "wake_bit_function",
    ]
    # line 182: no waker stack and no waker comm (`...;preempt_schedule_common;-; 2`)
    r = at(rows, 182)
    assert r["comm"] == "supervise" and r["waker_comm"] is None and r["waker_frames"] == [] and r["value_us"] == 2


@needs_public
def test_wakeuptime_doc_file():
    rows, report = parse_file(OFFWAKE / "bcc-wakeuptime_example.txt")
    assert len(rows) == 18 + 105
    assert total(rows) == 72871084 + 186735740
    assert all(r["kind"] == "offwake" and r["frames"] == [] for r in rows)
    # lines 29-42: `target:  vmstat`, waker stack leaf first, `waker:  swapper/1`, 4000415
    r = at(rows, 29)
    assert r["comm"] == "vmstat" and r["waker_comm"] == "swapper/1" and r["value_us"] == 4000415
    assert r["waker_frames"][0] == "xen_do_hypervisor_callback" and r["waker_frames"][-1] == "hrtimer_wakeup"
    # line 342, folded after `# ./wakeuptime -f 5`: `waker;waker stack root..leaf;target count`
    r = at(rows, 342)
    assert r["waker_comm"] == "rcuos/0" and r["comm"] == "rcu_sched" and r["value_us"] == 10
    assert r["waker_frames"] == [
        "ddebug_tables",
        "ret_from_fork",
        "kthread",
        "rcu_nocb_kthread",
        "rcu_gp_kthread_wake",
        "__wake_up",
        "__wake_up_common",
        "autoremove_wake_function",
    ]


# --------------------------------------------------------------------------------------- folded variants


def test_folded_stackcollapse_pid_tid_annotations_and_modern_offwake():
    data = (
        b"java-4242/4250;start_thread;run_[j];write;-;entry_SYSCALL_64_[k];ksys_write_[k] 7\n"
        b"java-4242/4251;start_thread;read 5\n"
        b"\n"
        b"# a comment\n"
        b"not folded at all\n"
        b"cat;main;read;-;entry_SYSCALL_64;schedule;--;pipe_write_wake;pipe_write;-;write;main;bash 30\n"
    )
    # a prose line in the first lines: the per-line path (folded lines still go through the bulk code)
    rows, report = parse_bytes(data)
    assert "layout: multi-line stacks" in report.notes
    assert report.skipped == 2
    assert [(e.line, e.reason) for e in report.examples] == [
        (4, "prose / not part of a stack record"),
        (5, "prose / not part of a stack record"),
    ]
    r = at(rows, 1)
    assert (r["comm"], r["pid"], r["tid"]) == ("java", 4242, 4250)
    assert r["frames"] == ["start_thread", "run", "write", "-", "entry_SYSCALL_64", "ksys_write"]
    assert r["kernel_frames"] == 2 and r["value_us"] == 7
    assert at(rows, 2)["kernel_frames"] == 0  # annotated file: no `_[k]` means no kernel frame
    r = at(rows, 6)
    assert r["kind"] == "offwake" and r["comm"] == "cat" and r["waker_comm"] == "bash"
    assert r["frames"] == ["main", "read", "-", "entry_SYSCALL_64", "schedule"]
    assert r["waker_frames"] == ["main", "write", "-", "pipe_write", "pipe_write_wake"]
    assert r["value_us"] == 30


def test_folded_bulk_skips_bad_lines_after_the_first_chunk(monkeypatch):
    monkeypatch.setattr(offcpu, "CHUNK", 40)  # the layout is decided on the first chunk only
    data = (
        b"a;b;c 1\n" * 5
        + b"# comment\n"
        + b"a;b 1.5\n"
        + b"x;y 12\n"
        + b"\n"
        + b"no count here\n"
        + b"V8 WorkerThread;z 4\n"
    )
    rows, report = parse_bytes(data)
    assert "layout: folded stacks (one stack per line)" in report.notes
    assert [(e.line, e.reason) for e in report.examples] == [
        (6, "comment line"),
        (7, "not a folded stack line (expected 'frame;frame;... <integer count>')"),
        (10, "not a folded stack line (expected 'frame;frame;... <integer count>')"),
    ]
    assert [(r["line"], r["comm"], r["frames"], r["value_us"]) for r in rows[-2:]] == [
        (8, "x", ["y"], 12),
        (11, "V8 WorkerThread", ["z"], 4),
    ]


def test_folded_comm_pid_suffix_when_every_line_has_one():
    rows, _ = parse_bytes(b"mysqld-100;a;b 3\nkworker/0:1-7;c 4\n")
    assert [(r["comm"], r["pid"], r["tid"]) for r in rows] == [("mysqld", 100, None), ("kworker/0:1", 7, None)]


def test_folded_chunk_boundaries_and_values(monkeypatch):
    monkeypatch.setattr(offcpu, "CHUNK", 64)
    lines = [f"comm{i % 3};root;mid{i % 5};leaf_[k] {i * 1000 + 7}\n" for i in range(200)]
    rows, report = parse_bytes("".join(lines).encode())
    assert len(rows) == 200 and report.skipped == 0
    assert [r["line"] for r in rows] == list(range(1, 201))
    assert total(rows) == sum(i * 1000 + 7 for i in range(200))
    assert at(rows, 200)["frames"] == ["root", "mid4", "leaf"] and at(rows, 200)["comm"] == "comm1"


def test_multiline_modern_with_addresses_and_delimiter(monkeypatch):
    monkeypatch.setattr(offcpu, "CHUNK", 48)
    text = (
        "Tracing off-CPU time (us) of all threads by user + kernel stack for 10 secs.\n"
        "\n"
        "    ffffffff810b57b1 finish_task_switch\n"
        "    ffffffff817dffb5 schedule\n"
        "    --\n"
        "    00007f0000001234 read\n"
        "    000055550000abcd main\n"
        "    -                my prog (1234)\n"
        "        8762\n"
        "\n"
        "WARNING: 3 stack traces lost and could not be displayed.\n"
    )
    rows, report = parse_bytes(text.encode())
    [r] = rows
    assert r["line"] == 3 and r["comm"] == "my prog" and r["pid"] == 1234 and r["value_us"] == 8762
    assert r["frames"] == ["main", "read", "-", "schedule", "finish_task_switch"]
    assert r["kernel_frames"] == 2
    assert "window_s=10" in report.notes
    assert any("3 stack traces lost" in n for n in report.notes)
    assert offcpu.header_window_s(text.splitlines()) == 10.0


def test_nothing_to_parse_is_refused():
    with pytest.raises(
        ParseError,
        match=r"no usable event in the file \(expected bcc offcputime/offwaketime output or folded stacks\); first problem at line 1",
    ):
        parse_bytes(b"hello world\nthis is prose\n")


# --------------------------------------------------------------------------------------- sniffing


@pytest.mark.parametrize(
    "path", sorted(OFFCPU.glob("*.txt")) + sorted(OFFWAKE.glob("*.txt")) + [SEED], ids=lambda p: p.name
)
def test_detect_picks_offcpu(path):
    head = path.read_bytes()[: detect.SNIFF_BYTES]
    assert detect.detect(head, path.name) is offcpu
    assert offcpu.sniff(head_lines(head)) >= 0.9


@needs_public
@pytest.mark.parametrize("sub", ["blkparse-text", "ftrace-funcgraph", "trace-cmd-report", "bcc-histogram", "fio"])
def test_sniff_rejects_other_formats(sub):
    files = [p for p in (PUBLIC / sub).rglob("*") if p.is_file()]
    assert files
    for p in files:
        head = p.read_bytes()[: 64 << 10]
        assert offcpu.sniff(head_lines(head)) < 0.3, p.name
    for p in (PUBLIC / "blkparse-text").glob("*"):
        head = p.read_bytes()[: 64 << 10]
        assert detect.detect(head, p.name).FORMAT == "blkparse"


# --------------------------------------------------------------------------------------- flame trees

ROWS = [
    (["main", "read", "schedule"], 60),
    (["main", "write", "schedule"], 30),
    (["main", "read", "io"], 9),
    (["idle"], 1),
    (["ignored"], None),
]


def test_build_tree_exact():
    assert build_tree(ROWS, min_fraction=0) == {
        "name": "all",
        "value": 100,
        "children": [
            {
                "name": "main",
                "value": 99,
                "children": [
                    {
                        "name": "read",
                        "value": 69,
                        "children": [
                            {"name": "schedule", "value": 60, "children": []},
                            {"name": "io", "value": 9, "children": []},
                        ],
                    },
                    {"name": "write", "value": 30, "children": [{"name": "schedule", "value": 30, "children": []}]},
                ],
            },
            {"name": "idle", "value": 1, "children": []},
        ],
    }


def test_build_tree_other_invert_filter():
    # below 10% of 100: `io` (9) under read and `idle` (1) at the root are folded into "other"
    assert build_tree(ROWS, min_fraction=0.1) == {
        "name": "all",
        "value": 100,
        "children": [
            {
                "name": "main",
                "value": 99,
                "children": [
                    {
                        "name": "read",
                        "value": 69,
                        "children": [
                            {"name": "schedule", "value": 60, "children": []},
                            {"name": "other", "value": 9, "children": []},
                        ],
                    },
                    {"name": "write", "value": 30, "children": [{"name": "schedule", "value": 30, "children": []}]},
                ],
            },
            {"name": "other", "value": 1, "children": []},
        ],
    }
    assert build_tree(ROWS, invert=True, filter="schedule", min_fraction=0) == {
        "name": "all",
        "value": 90,
        "children": [
            {
                "name": "schedule",
                "value": 90,
                "children": [
                    {"name": "read", "value": 60, "children": [{"name": "main", "value": 60, "children": []}]},
                    {"name": "write", "value": 30, "children": [{"name": "main", "value": 30, "children": []}]},
                ],
            },
        ],
    }
    assert build_tree([], min_fraction=0.1) == {"name": "all", "value": 0, "children": []}


def test_diff_trees_exact():
    a = [(["main", "read"], 10), (["main", "write"], 10)]
    b = [(["main", "read"], 25), (["main", "open"], 5)]
    assert diff_trees(a, b, min_fraction=0) == {
        "name": "all",
        "value": 30,
        "delta": 10,
        "children": [
            {
                "name": "main",
                "value": 30,
                "delta": 10,
                "children": [
                    {"name": "read", "value": 25, "delta": 15, "children": []},
                    {"name": "open", "value": 5, "delta": 5, "children": []},
                    {"name": "write", "value": 0, "delta": -10, "children": []},
                ],
            },
        ],
    }
    # threshold 0.25 × max(20, 30) = 7.5: `open` (a 0, b 5) folds into "other"; `write` (a 10) stays
    assert diff_trees(a, b, min_fraction=0.25)["children"][0]["children"] == [
        {"name": "read", "value": 25, "delta": 15, "children": []},
        {"name": "other", "value": 5, "delta": 5, "children": []},
        {"name": "write", "value": 0, "delta": -10, "children": []},
    ]
