"""Stacks the trace recorded itself (trace-cmd record -T, the stacktrace trigger, userstacktrace) attached to the wait
or wake-up they belong to: the stack events right after an event on its CPU, written as the same task."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.derive.recorded import frames_of_stack_text
from backend.store import Store
from tests.conftest import PUBLIC, ingest_bytes, ingest_paths, needs_public

LANGRAPH = PUBLIC / "trace-cmd-report" / "derived-langraph-report-sched-softirq-kstack.txt"


@pytest.fixture(scope="module")
def langraph_store(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("lg") / "t.duckdb")
    aid = ingest_paths(store, LANGRAPH)["id"]
    yield store, aid
    store.close()


@pytest.fixture
def langraph(langraph_store):  # an app per test (the server's settings are a test's), on the ingest of the module
    store, aid = langraph_store
    with TestClient(create_app(store)) as c:
        yield c, aid


def test_frames_of_a_stack_event():
    text = (
        "<stack trace >\n=> __traceiter_sched_switch (ffffffffa88f47ff)\n=> __schedule (ffffffffa95a7aa6)\n"
        "=> schedule (ffffffffa95a7d4e)\n=> do_nanosleep (ffffffffa95ac406)"
    )
    assert frames_of_stack_text(text) == ["do_nanosleep", "schedule", "__schedule"]
    assert frames_of_stack_text("<stack trace>\n => a\n => b") == ["b", "a"]
    assert frames_of_stack_text("<user stack trace>\n =>  <00007f0a1b2c3d4e>") == ["<00007f0a1b2c3d4e>"]
    assert frames_of_stack_text(None) == []


@needs_public
def test_langraph_waits_carry_their_stacks_and_locks(langraph):
    c, aid = langraph
    waits = c.get(f"/api/analyses/{aid}/waits", params={"limit": 2000, "idle": True}).json()
    assert len(waits) == 1126
    with_stack = [w for w in waits if w["stack"]]
    assert len(with_stack) == 1126  # every switch-out of this capture has its kernel_stack
    assert not [w for w in waits if w["lock"] in (None, "?")]
    # jbd2 commit: switched out (D) at line 120324 (CPU 0), its kernel_stack at line 120333, 4 µs later (other CPUs'
    # events in between); io_schedule <- bit_wait_io <- __wait_on_buffer <- jbd2_journal_commit_transaction
    (j,) = [w for w in waits if w["line"] == 120324]
    assert (j["comm"], j["pid"], j["lock"], j["duration_ns"]) == (
        "jbd2/sda3-8",
        216,
        "__wait_on_buffer via I/O",
        229746000,
    )
    assert j["stack"][-8:] == [
        "jbd2_journal_commit_transaction",
        "__wait_on_buffer",
        "out_of_line_wait_on_bit",
        "__wait_on_bit",
        "bit_wait_io",
        "io_schedule",
        "schedule",
        "__schedule",
    ]
    assert "stack from the kernel_stack event at line 120333 (same CPU and task, 4.0 µs after it)" in j["evidence"]
    # woken by the I/O completion in the softirq on CPU 0's idle task: the waker's stack from line 127457
    assert j["waker_pid"] == 0 and "the waker's stack from the kernel_stack event at line 127457" in j["evidence"]
    assert j["waker_stack"][-3:] == ["autoremove_wake_function", "default_wake_function", "try_to_wake_up"]
    assert "bio_endio" in j["waker_stack"] and "unlock_buffer" in j["waker_stack"]
    (by_lock,) = c.get(f"/api/analyses/{aid}/waits/by-lock", params={"lock_key": "__wait_on_buffer"}).json()
    assert (by_lock["waits"], by_lock["total_ns"]) == (4, 305879000)


@needs_public
def test_langraph_chain_shows_the_stack(langraph):
    c, aid = langraph
    chains = c.get(f"/api/analyses/{aid}/chains", params={"limit": 500}).json()
    links = [ln for ch in chains for ln in ch["links"] if ln["line"] == 120324]
    assert links and links[0]["stack"][-1] == "__schedule" and links[0]["lock"] == "__wait_on_buffer via I/O"


TRACEFS = b"""\
# tracer: nop
#
           <...>-20    [001] d..2.   100.000100: sched_switch: prev_comm=kworker prev_pid=20 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
           <...>-20    [001] d..2.   100.000104: <stack trace>
 => __traceiter_sched_switch
 => __schedule
 => schedule
 => io_schedule
 => folio_wait_bit_common
 => __folio_lock
 => worker
           <...>-20    [001] d..2.   100.000105: <user stack trace>
 =>  <00007f0000001000>
 =>  <00007f0000002000>
            bash-30    [000] d..2.   100.000200: sched_switch: prev_comm=bash prev_pid=30 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
            bash-30    [000] d..2.   100.000201: irq_handler_entry: irq=19 name=eth0
            bash-30    [000] d..2.   100.000202: <stack trace>
 => handle_irq
 => mutex_lock
          <idle>-0     [001] d.h2.   100.000300: sched_waking: comm=kworker pid=20 prio=120 target_cpu=001
          <idle>-0     [001] d.h2.   100.000301: <stack trace>
 => try_to_wake_up
 => wake_up_page_bit
 => folio_unlock
 => end_bio
            sshd-40    [002] d..2.   100.000302: sched_switch: prev_comm=sshd prev_pid=40 prev_prio=120 prev_state=S ==> next_comm=swapper/2 next_pid=0 next_prio=120
           <...>-41    [002] d..2.   100.000303: <stack trace>
 => mutex_lock
          <idle>-0     [001] d..2.   100.000400: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker next_pid=20 next_prio=120
"""


def test_tracefs_stacks_by_the_kernels_rules(client, store):
    aid = ingest_bytes(store, **{"trace.txt": TRACEFS})["id"]
    waits = {w["line"]: w for w in client.get(f"/api/analyses/{aid}/waits", params={"idle": True}).json()}
    k = waits[3]
    # the kernel stack (line 4) then the user stack (line 12) follow the switch on CPU 1: user frames, then kernel's
    assert k["stack"] == [
        "<00007f0000002000>",
        "<00007f0000001000>",
        "worker",
        "__folio_lock",
        "folio_wait_bit_common",
        "io_schedule",
        "schedule",
        "__schedule",
    ]
    assert k["lock"] == "__folio_lock via io_schedule"
    assert "stack from the kernel_stack event at line 4 and user_stack event at line 12" in k["evidence"]
    assert k["waker_stack"] == ["end_bio", "folio_unlock", "wake_up_page_bit", "try_to_wake_up"]
    # an irq event sits between bash's switch and the stack on CPU 0: the stack is the irq's, not the wait's
    assert waits[15]["stack"] == [] and "kernel_stack" not in waits[15]["evidence"]
    # the stack after sshd's switch on CPU 2 was written by another task: not sshd's
    assert waits[26]["stack"] == [] and "kernel_stack" not in waits[26]["evidence"]
