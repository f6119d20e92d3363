"""Writes a large synthetic bcc `offcputime` dump (reproducible: same seed, same bytes), for benchmarks.

    python bench/gen_offcpu.py OUT [--records 60000] [--seed 1] [--folded]

What a 30 s `offcputime -d` capture of a busy server looks like: ~450 tasks (database backends, web
workers, JVM threads, kworkers, journal and XFS threads, ksoftirqd, rcu, sshd, ...), each record one
(task, user stack, kernel stack) with its total off-CPU µs. Kernel stacks are built from a grammar of real
kernel paths: an entry (syscall, page fault, kthread loop), the syscall's VFS/filesystem/block/network/
futex path, optional nested page faults and helpers, and a wait primitive (mutex, rwsem, folio lock or
writeback, buffer lock, journal commit, XFS log force, block tag, futex, epoll, sleep...) ending in
schedule(); tens of thousands of them are distinct. User stacks come from each program's own call graph
(a libc wrapper that matches the syscall, app frames, main); JIT and stripped code show as `[unknown]`,
some stacks are missed (`[Missed User Stack]`). Values are log-normal, capped at the 30 s window;
records are sorted by value, as bcc prints them.

Default: bcc's multi-line output (kernel frames leaf first, `--` delimiter, user frames leaf first,
`-  comm (pid)`, total µs). --folded writes the same records as `-f` folded lines.
"""

from __future__ import annotations

import argparse
import math
import random

WINDOW_S = 30

# (the grammar is kept as written, one path per line: ruff format would put each frame on a line of its own)
# fmt: off
# ---------------------------------------------------------------------------------------------------
# kernel grammar; every list is ROOT FIRST (the printer reverses it: bcc prints the leaf first)

SYSCALL_ENTRY = ["entry_SYSCALL_64_after_hwframe", "do_syscall_64"]
SCHED_TAIL = ["schedule", "__schedule", "finish_task_switch.isra.0"]

# wait primitives: the frames between the caller and schedule()
WAITS = {
    "mutex": ["mutex_lock", "__mutex_lock_slowpath", "__mutex_lock.constprop.0", "schedule_preempt_disabled"],
    "rwsem_w": ["down_write", "rwsem_down_write_slowpath"],
    "rwsem_r": ["down_read", "rwsem_down_read_slowpath"],
    "folio_lock": ["__folio_lock", "folio_wait_bit_common", "io_schedule"],
    "folio_wb": ["folio_wait_writeback", "folio_wait_bit_common", "io_schedule"],
    "buffer": ["__wait_on_buffer", "out_of_line_wait_on_bit", "__wait_on_bit", "bit_wait_io", "io_schedule"],
    "bio_wait": ["submit_bio_wait", "wait_for_completion_io", "__wait_for_common", "io_schedule_timeout",
                 "schedule_timeout"],
    "completion": ["wait_for_completion", "__wait_for_common", "schedule_timeout"],
    "blk_tag": ["blk_mq_submit_bio", "__blk_mq_alloc_requests", "blk_mq_get_tag", "io_schedule"],
    "xfs_buf": ["xfs_buf_lock", "down", "__down_common", "schedule_timeout"],
    "xfs_ilock": ["xfs_ilock", "down_write", "rwsem_down_write_slowpath"],
    "xfs_ilock_r": ["xfs_ilock", "down_read", "rwsem_down_read_slowpath"],
    "xfs_log": ["xfs_log_force_seq", "xlog_wait_on_iclog", "xlog_wait"],
    "jbd2_commit": ["jbd2_complete_transaction", "jbd2_log_wait_commit", "wait_event_interruptible"],
    "jbd2_start": ["jbd2__journal_start", "start_this_handle", "wait_transaction_locked"],
    "spin_sleep": ["rt_spin_lock", "rtlock_slowlock_locked"],
}

# filesystem / block paths under the VFS, each ending where a wait primitive is called
FS_PATHS = [
    (["xfs_file_write_iter", "xfs_file_buffered_write"], ["xfs_ilock", "mutex", "rwsem_w"]),
    (["xfs_file_write_iter", "xfs_file_buffered_write", "iomap_file_buffered_write", "iomap_write_iter",
      "iomap_write_begin", "__filemap_get_folio"], ["folio_lock", "folio_wb"]),
    (["xfs_file_write_iter", "xfs_file_dio_write_aligned", "iomap_dio_rw", "__iomap_dio_rw"],
     ["completion", "blk_tag", "xfs_ilock_r"]),
    (["xfs_file_read_iter", "xfs_file_buffered_read"], ["xfs_ilock_r", "rwsem_r"]),
    (["xfs_file_read_iter", "xfs_file_buffered_read", "generic_file_read_iter", "filemap_read",
      "filemap_get_pages", "filemap_update_page"], ["folio_lock"]),
    (["xfs_file_fsync"], ["xfs_log", "xfs_ilock_r", "bio_wait"]),
    (["xfs_file_fsync", "file_write_and_wait_range", "__filemap_fdatawait_range", "filemap_fdatawait_range"],
     ["folio_wb"]),
    (["xfs_vn_setattr", "xfs_setattr_size", "xfs_trans_alloc", "xfs_trans_reserve", "xfs_log_reserve",
      "xlog_grant_head_check", "xlog_grant_head_wait"], ["spin_sleep"]),
    (["xfs_create", "xfs_dir_ialloc", "xfs_dialloc", "xfs_read_agi", "xfs_trans_read_buf_map",
      "xfs_buf_read_map", "xfs_buf_get_map", "xfs_buf_find_lock"], ["xfs_buf"]),
    (["xfs_remove", "xfs_trans_read_buf_map", "xfs_buf_read_map", "xfs_buf_get_map", "xfs_buf_find_lock"],
     ["xfs_buf"]),
    (["ext4_file_write_iter", "ext4_buffered_write_iter"], ["rwsem_w", "mutex"]),
    (["ext4_file_write_iter", "ext4_buffered_write_iter", "generic_perform_write", "ext4_da_write_begin",
      "__filemap_get_folio"], ["folio_lock", "folio_wb"]),
    (["ext4_file_write_iter", "ext4_buffered_write_iter", "generic_perform_write", "ext4_da_write_end",
      "ext4_dirty_inode", "__ext4_journal_start_sb"], ["jbd2_start"]),
    (["ext4_sync_file"], ["jbd2_commit", "mutex"]),
    (["ext4_sync_file", "file_write_and_wait_range", "__filemap_fdatawait_range"], ["folio_wb"]),
    (["ext4_file_read_iter", "generic_file_read_iter", "filemap_read", "filemap_get_pages",
      "filemap_update_page"], ["folio_lock"]),
    (["ext4_lookup", "__ext4_find_entry", "ext4_bread_batch", "bh_read_batch"], ["buffer"]),
    (["blkdev_write_iter", "__generic_file_write_iter", "generic_perform_write", "__filemap_get_folio"],
     ["folio_lock", "folio_wb"]),
    (["blkdev_read_iter", "filemap_read", "filemap_get_pages", "filemap_update_page"], ["folio_lock"]),
    (["btrfs_do_write_iter", "btrfs_buffered_write", "btrfs_inode_lock"], ["rwsem_w"]),
    (["btrfs_sync_file", "btrfs_commit_transaction", "btrfs_wait_for_commit"], ["completion"]),
]

SYSCALLS = {  # syscall -> (frames under do_syscall_64, paths: "fs" = FS_PATHS, or a list of (frames, waits))
    "write": (["__x64_sys_write", "ksys_write", "vfs_write"], "fs_w"),
    "pwrite64": (["__x64_sys_pwrite64", "vfs_write"], "fs_w"),
    "writev": (["__x64_sys_writev", "do_writev", "vfs_writev", "do_iter_write", "do_iter_readv_writev"], "fs_w"),
    "read": (["__x64_sys_read", "ksys_read", "vfs_read"], "fs_r"),
    "pread64": (["__x64_sys_pread64", "vfs_read"], "fs_r"),
    "fsync": (["__x64_sys_fsync", "do_fsync", "vfs_fsync_range"], "fs_s"),
    "fdatasync": (["__x64_sys_fdatasync", "do_fsync", "vfs_fsync_range"], "fs_s"),
    "openat": (["__x64_sys_openat", "do_sys_openat2", "do_filp_open", "path_openat"],
               [(["open_last_lookups"], ["rwsem_r", "rwsem_w"]),
                (["lookup_open", "xfs_vn_create", "xfs_generic_create"], "fs_c"),
                (["lookup_open", "ext4_lookup"], "fs_l")]),
    "unlinkat": (["__x64_sys_unlinkat", "do_unlinkat"], [(["vfs_unlink", "xfs_vn_unlink"], "fs_d"),
                                                        (["inode_lock_nested"], ["rwsem_w"])]),
    "ftruncate": (["__x64_sys_ftruncate", "do_sys_ftruncate", "do_truncate", "notify_change"], "fs_t"),
    "futex": (["__x64_sys_futex", "do_futex", "futex_wait", "futex_wait_queue"], None),
    "epoll_wait": (["__x64_sys_epoll_wait", "do_epoll_wait", "ep_poll", "schedule_hrtimeout_range",
                    "schedule_hrtimeout_range_clock"], None),
    "nanosleep": (["__x64_sys_clock_nanosleep", "common_nsleep", "hrtimer_nanosleep", "do_nanosleep"], None),
    "recvfrom": (["__x64_sys_recvfrom", "__sys_recvfrom", "sock_recvmsg", "inet_recvmsg", "tcp_recvmsg",
                  "tcp_recvmsg_locked", "sk_wait_data", "wait_woken", "schedule_timeout"], None),
    "sendmsg": (["__x64_sys_sendmsg", "___sys_sendmsg", "____sys_sendmsg", "sock_sendmsg", "tcp_sendmsg",
                 "lock_sock_nested", "__lock_sock"], None),
    "accept4": (["__x64_sys_accept4", "__sys_accept4", "do_accept", "inet_accept", "inet_csk_accept",
                 "inet_csk_wait_for_connect", "schedule_timeout"], None),
    "read_pipe": (["__x64_sys_read", "ksys_read", "vfs_read", "pipe_read"], None),
    "wait4": (["__x64_sys_wait4", "kernel_wait4", "do_wait"], None),
    "io_getevents": (["__x64_sys_io_getevents", "do_io_getevents", "read_events"], None),
    "io_uring_enter": (["__x64_sys_io_uring_enter", "io_cqring_wait", "io_cqring_wait_schedule"], None),
    "mmap": (["__x64_sys_mmap", "ksys_mmap_pgoff", "vm_mmap_pgoff"], [([], ["rwsem_w"])]),
    "munmap": (["__x64_sys_munmap", "__vm_munmap"], [([], ["rwsem_w"])]),
    "madvise": (["__x64_sys_madvise", "do_madvise"], [([], ["rwsem_r"])]),
    "select": (["__x64_sys_pselect6", "do_pselect.constprop.0", "core_sys_select", "do_select",
                "poll_schedule_timeout.constprop.0", "schedule_hrtimeout_range", "schedule_hrtimeout_range_clock"],
               None),
}

FS_KIND = {  # which FS_PATHS fit which syscall kind (by the path's first frame)
    "fs_w": ("xfs_file_write_iter", "ext4_file_write_iter", "blkdev_write_iter", "btrfs_do_write_iter"),
    "fs_r": ("xfs_file_read_iter", "ext4_file_read_iter", "blkdev_read_iter"),
    "fs_s": ("xfs_file_fsync", "ext4_sync_file", "btrfs_sync_file"),
    "fs_c": ("xfs_create",),
    "fs_l": ("ext4_lookup",),
    "fs_d": ("xfs_remove",),
    "fs_t": ("xfs_vn_setattr",),
}

# a page fault taken inside a syscall (copy_from/to_user) or by user code: frames root first
FAULT = ["asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault"]
FAULT_PATHS = [
    (["handle_mm_fault", "__handle_mm_fault", "handle_pte_fault", "do_fault", "do_read_fault", "filemap_fault"],
     ["folio_lock", "rwsem_r"]),
    (["handle_mm_fault", "__handle_mm_fault", "handle_pte_fault", "do_fault", "do_read_fault", "filemap_fault",
      "__filemap_get_folio"], ["folio_lock"]),
    (["handle_mm_fault", "__handle_mm_fault", "handle_pte_fault", "do_fault", "do_shared_fault",
      "do_page_mkwrite", "xfs_filemap_page_mkwrite", "__xfs_filemap_fault", "iomap_page_mkwrite"],
     ["folio_wb", "folio_lock"]),
    (["handle_mm_fault", "__handle_mm_fault", "handle_pte_fault", "do_fault", "do_shared_fault",
      "do_page_mkwrite", "ext4_page_mkwrite", "ext4_journal_start"], ["jbd2_start"]),
    (["handle_mm_fault", "__handle_mm_fault", "do_huge_pmd_anonymous_page", "vma_alloc_folio",
      "__alloc_pages", "__alloc_pages_slowpath.constprop.0", "__alloc_pages_direct_compact",
      "try_to_compact_pages", "compact_zone", "migrate_pages", "migrate_pages_batch"], ["folio_lock", "folio_wb"]),
    ([], ["rwsem_r"]),  # lock_mm_and_find_vma -> mmap_lock
]
FAULT_UNDER = ["_copy_from_user", "copy_page_from_iter_atomic", "_copy_to_user", "copy_page_to_iter",
               "strncpy_from_user", "fault_in_readable", "fault_in_iov_iter_readable"]

# optional helpers inserted between a path and its wait (more distinct stacks, all real call sites)
HELPERS = {
    "mutex": [[], ["xfs_file_fsync"], ["ext4_file_write_iter"], ["pipe_lock"], ["inode_lock"], ["fdget_pos"],
              ["blkdev_fsync"], ["btrfs_inode_lock"], ["kernfs_iop_permission"], ["cgroup_kn_lock_live"]],
    "rwsem_w": [[], ["inode_lock"], ["lock_two_nondirectories"], ["mmap_write_lock_killable"],
                ["xfs_ilock_for_iomap"], ["filemap_invalidate_lock"]],
    "rwsem_r": [[], ["inode_lock_shared"], ["lock_mm_and_find_vma"], ["mmap_read_lock"],
                ["filemap_invalidate_lock_shared"], ["percpu_down_read"]],
    "folio_lock": [[], ["filemap_lock_folio"], ["lock_page"], ["folio_lock_killable"]],
    "folio_wb": [[], ["folio_wait_stable"], ["wait_on_page_writeback"]],
}

# kernel threads: (comm pattern, count, stacks root first ending in a wait)
KTHREAD_ROOT = ["ret_from_fork_asm", "ret_from_fork", "kthread"]
KTHREADS = [
    ("kworker/{i}:{j}", 24, [["worker_thread"], ["worker_thread", "process_one_work", "wb_workfn", "wb_writeback",
                                                  "__writeback_inodes_wb", "writeback_sb_inodes",
                                                  "__writeback_single_inode", "do_writepages", "xfs_vm_writepages",
                                                  "iomap_writepages", "write_cache_pages", "blk_mq_submit_bio",
                                                  "__blk_mq_alloc_requests", "blk_mq_get_tag", "io_schedule"],
                             ["worker_thread", "process_one_work", "xfs_end_io", "xfs_end_ioend",
                              "xfs_iomap_write_unwritten", "xfs_trans_alloc_inode", "xfs_ilock", "down_write",
                              "rwsem_down_write_slowpath"],
                             ["worker_thread", "process_one_work", "xlog_cil_push_work", "xlog_wait"],
                             ["worker_thread", "process_one_work", "flush_to_ldisc", "n_tty_receive_buf_common",
                              "mutex_lock", "__mutex_lock_slowpath", "__mutex_lock.constprop.0",
                              "schedule_preempt_disabled"]]),
    ("kworker/u{i}:{j}", 16, [["worker_thread"], ["worker_thread", "process_one_work", "blk_mq_requeue_work",
                                                   "blk_mq_run_hw_queues", "mutex_lock", "__mutex_lock_slowpath",
                                                   "__mutex_lock.constprop.0", "schedule_preempt_disabled"]]),
    ("jbd2/nvme0n1p{i}-8", 3, [["kjournald2"], ["kjournald2", "jbd2_journal_commit_transaction"],
                               ["kjournald2", "jbd2_journal_commit_transaction", "__wait_on_buffer",
                                "out_of_line_wait_on_bit", "__wait_on_bit", "bit_wait_io", "io_schedule"],
                               ["kjournald2", "jbd2_journal_commit_transaction", "jbd2_journal_wait_updates"]]),
    ("xfsaild/dm-{i}", 3, [["xfsaild", "schedule_timeout"], ["xfsaild", "xfsaild_push", "xfs_log_force",
                                                            "xfs_log_force_seq", "xlog_wait_on_iclog", "xlog_wait"],
                           ["xfsaild", "xfsaild_push", "xfs_buf_delwri_submit_nowait", "xfs_buf_lock", "down",
                            "__down_common", "schedule_timeout"]]),
    ("ksoftirqd/{i}", 16, [["smpboot_thread_fn"]]),
    ("migration/{i}", 16, [["smpboot_thread_fn"]]),
    ("rcu_preempt", 1, [["rcu_gp_kthread", "rcu_gp_fqs_loop", "schedule_timeout"],
                        ["rcu_gp_kthread", "swait_event_idle_exclusive"]]),
    ("kswapd{i}", 2, [["kswapd"], ["kswapd", "balance_pgdat", "shrink_node", "shrink_node_memcgs",
                                   "shrink_lruvec", "shrink_inactive_list", "shrink_folio_list",
                                   "folio_wait_writeback", "folio_wait_bit_common", "io_schedule"],
                      ["kswapd", "balance_pgdat", "shrink_node", "super_cache_scan", "xfs_fs_free_cached_objects",
                       "xfs_reclaim_inodes_nr", "xfs_icwalk_ag", "xfs_ilock", "down_write",
                       "rwsem_down_write_slowpath"]]),
    ("khugepaged", 1, [["khugepaged", "khugepaged_wait_work"], ["khugepaged", "khugepaged_do_scan",
                                                               "collapse_huge_page", "mmap_write_lock",
                                                               "down_write", "rwsem_down_write_slowpath"]]),
    ("kcompactd{i}", 2, [["kcompactd", "schedule_timeout"]]),
]

# programs: (comm, processes, threads each, thread comms or None, frames every stack starts with (root
# first), paths: (app frames root first, the syscall they end in, weight)). "-" as the syscall: preempted in
# user code (no libc frame).
PROGRAMS = [
    ("postgres", 40, 1, None, ["__libc_start_call_main", "main", "PostmasterMain", "ServerLoop",
                               "BackendStartup", "BackendRun", "PostgresMain"],
     [(["exec_simple_query", "PortalRun", "PortalRunSelect", "standard_ExecutorRun", "ExecutePlan", "ExecScan",
        "SeqNext", "heap_getnextslot", "heapgettup_pagemode", "ReadBufferExtended", "ReadBuffer_common",
        "smgrread", "mdread", "FileRead"], "pread64", 6),
      (["exec_simple_query", "PortalRun", "PortalRunMulti", "ProcessQuery", "standard_ExecutorRun",
        "ExecModifyTable", "ExecInsert", "heap_insert", "RelationGetBufferForTuple", "ReadBufferBI",
        "ReadBuffer_common", "BufferAlloc", "FlushBuffer", "smgrwrite", "mdwrite", "FileWrite"], "pwrite64", 4),
      (["exec_simple_query", "finish_xact_command", "CommitTransactionCommand", "CommitTransaction",
        "RecordTransactionCommit", "XLogFlush", "XLogWrite", "issue_xlog_fsync"], "fdatasync", 3),
      (["exec_simple_query", "finish_xact_command", "CommitTransactionCommand", "CommitTransaction",
        "RecordTransactionCommit", "XLogFlush", "XLogWrite"], "pwrite64", 2),
      (["ProcessClientReadInterrupt", "secure_read", "WaitEventSetWait", "WaitEventSetWaitBlock"], "epoll_wait", 5),
      (["pq_getbyte", "pq_recvbuf", "secure_read", "be_tls_read", "SSL_read"], "recvfrom", 2),
      (["exec_simple_query", "LockAcquireExtended", "WaitOnLock", "ProcSleep", "WaitLatch", "WaitEventSetWait",
        "WaitEventSetWaitBlock"], "epoll_wait", 2),
      (["exec_simple_query", "LWLockAcquire", "PGSemaphoreLock"], "futex", 1),
      (["exec_simple_query", "PortalRun", "standard_ProcessUtility", "ExecuteTruncate", "smgrtruncate",
        "mdtruncate", "FileTruncate"], "ftruncate", 0.5),
      (["exec_simple_query", "PortalRun", "standard_ProcessUtility", "RemoveRelations", "smgrdounlinkall",
        "mdunlink"], "unlinkat", 0.3),
      (["exec_simple_query", "PortalRun", "PortalRunSelect", "standard_ExecutorRun", "ExecutePlan", "ExecSort",
        "tuplesort_performsort"], "-", 1)]),
    ("postgres: walwriter", 1, 1, None, ["__libc_start_call_main", "main", "PostmasterMain", "ServerLoop",
                                         "StartChildProcess", "AuxiliaryProcessMain", "WalWriterMain"],
     [(["XLogBackgroundFlush", "XLogWrite", "issue_xlog_fsync"], "fdatasync", 5),
      (["XLogBackgroundFlush", "XLogWrite"], "pwrite64", 3),
      (["WaitLatch", "WaitEventSetWait", "WaitEventSetWaitBlock"], "epoll_wait", 4)]),
    ("postgres: checkpointer", 1, 1, None, ["__libc_start_call_main", "main", "PostmasterMain", "ServerLoop",
                                            "StartChildProcess", "AuxiliaryProcessMain", "CheckpointerMain"],
     [(["CreateCheckPoint", "CheckPointGuts", "CheckPointBuffers", "BufferSync", "SyncOneBuffer", "FlushBuffer",
        "smgrwrite", "mdwrite", "FileWrite"], "pwrite64", 4),
      (["CreateCheckPoint", "CheckPointGuts", "ProcessSyncRequests", "SyncPostCheckpoint", "mdsyncfiletag",
        "FileSync"], "fsync", 3),
      (["WaitLatch", "WaitEventSetWait", "WaitEventSetWaitBlock"], "epoll_wait", 3)]),
    ("nginx", 8, 1, None, ["__libc_start_call_main", "main", "ngx_master_process_cycle",
                           "ngx_start_worker_processes", "ngx_spawn_process", "ngx_worker_process_cycle",
                           "ngx_process_events_and_timers"],
     [(["ngx_epoll_process_events"], "epoll_wait", 8),
      (["ngx_event_accept"], "accept4", 2),
      (["ngx_epoll_process_events", "ngx_http_wait_request_handler", "ngx_http_process_request",
        "ngx_http_handler", "ngx_http_core_run_phases", "ngx_http_static_handler", "ngx_open_cached_file",
        "ngx_open_and_stat_file"], "openat", 2),
      (["ngx_epoll_process_events", "ngx_http_request_handler", "ngx_http_writer", "ngx_http_write_filter",
        "ngx_linux_sendfile_chain", "ngx_writev"], "writev", 2),
      (["ngx_epoll_process_events", "ngx_http_upstream_handler", "ngx_http_upstream_process_non_buffered_request",
        "ngx_unix_recv"], "recvfrom", 2),
      (["ngx_epoll_process_events", "ngx_http_request_handler", "ngx_http_upstream_send_request",
        "ngx_output_chain", "ngx_write_chain_to_file", "ngx_write_file"], "pwrite64", 1),
      (["ngx_http_log_handler", "ngx_http_log_write", "ngx_write_fd"], "write", 1)]),
    ("java", 3, 30, ["C2 CompilerThre", "GC Thread#0", "http-nio-8080-e", "pool-3-thread-", "kafka-producer-",
                     "Signal Dispatch", "VM Thread", "G1 Conc#0", "Common-Cleaner"],
     ["start_thread", "thread_native_entry", "Thread::call_run", "JavaThread::thread_main_inner",
      "JavaCalls::call_virtual", "JavaCalls::call_helper", "call_stub"],
     [(["[unknown]", "[unknown]", "[unknown]", "Unsafe_Park", "Parker::park", "__pthread_cond_wait"], "futex", 8),
      (["[unknown]", "[unknown]", "JVM_Sleep", "os::PlatformEvent::park", "__pthread_cond_timedwait"], "futex", 3),
      (["[unknown]", "[unknown]", "[unknown]", "Java_sun_nio_ch_EPoll_wait"], "epoll_wait", 4),
      (["[unknown]", "[unknown]", "Java_sun_nio_ch_SocketDispatcher_read0", "handleRead"], "recvfrom", 3),
      (["[unknown]", "[unknown]", "[unknown]", "Java_java_io_RandomAccessFile_writeBytes", "writeBytes",
        "handleWrite"], "write", 2),
      (["[unknown]", "Java_sun_nio_ch_FileDispatcherImpl_force0"], "fdatasync", 1),
      (["[unknown]", "[unknown]", "[unknown]", "[unknown]"], "-", 2),
      (["G1ConcurrentMarkThread::run_service", "G1ConcurrentMark::mark_from_roots", "os::commit_memory"],
       "madvise", 0.5),
      (["VMThread::run", "VMThread::wait_for_operation", "Monitor::wait", "PlatformMonitor::wait"], "futex", 1)]),
    ("mysqld", 1, 40, ["connection", "ib_io_wr", "ib_log_flush", "ib_pg_flush_co", "ib_src_main", "ib_io_rd"],
     ["start_thread", "pfs_spawn_thread"],
     [(["handle_connection", "do_command", "dispatch_command", "mysql_execute_command", "Sql_cmd_dml::execute",
        "JOIN::exec", "handler::ha_rnd_next", "ha_innobase::rnd_next", "row_search_mvcc", "buf_page_get_gen",
        "buf_read_page", "fil_io", "os_aio_func"], "pread64", 5),
      (["handle_connection", "do_command", "Protocol_classic::get_command", "vio_read"], "recvfrom", 4),
      (["log_flusher", "log_flush_low", "os_file_flush_func"], "fsync", 2),
      (["io_handler_thread", "fil_aio_wait", "os_aio_handler", "LinuxAIOHandler::poll"], "io_getevents", 3),
      (["buf_flush_page_coordinator_thread", "buf_flush_do_batch", "buf_flush_page", "os_file_write_func"],
       "pwrite64", 3),
      (["srv_master_thread", "os_event::wait_time_low"], "futex", 2),
      (["handle_connection", "do_command", "dispatch_command", "mysql_execute_command", "trans_commit",
        "ha_commit_trans", "MYSQL_BIN_LOG::commit", "MYSQL_BIN_LOG::ordered_commit", "MYSQL_BIN_LOG::sync_binlog_file",
        "my_sync"], "fdatasync", 2),
      (["handle_connection", "do_command", "dispatch_command", "mysql_execute_command", "lock_tables",
        "mysql_lock_tables", "thr_multi_lock", "thr_lock", "wait_for_lock"], "futex", 1)]),
    ("redis-server", 2, 1, None, ["__libc_start_call_main", "main", "aeMain", "aeProcessEvents"],
     [(["aeApiPoll"], "epoll_wait", 8), (["beforeSleep", "flushAppendOnlyFile", "aofWrite"], "write", 2),
      (["beforeSleep", "flushAppendOnlyFile", "redis_fsync"], "fdatasync", 1),
      (["processCommand", "call", "getCommand", "lookupKeyRead"], "-", 1)]),
    ("node", 4, 6, ["node", "libuv-worker", "V8 WorkerThread"],
     ["__libc_start_call_main", "main", "node::Start", "node::NodeMainInstance::Run", "node::SpinEventLoop",
      "uv_run"],
     [(["uv__io_poll"], "epoll_wait", 6), (["uv__work_done", "[unknown]", "[unknown]"], "-", 2),
      (["worker", "uv__fs_work", "uv__fs_write"], "write", 2),
      (["worker", "uv__fs_work", "uv__fs_read"], "read", 1),
      (["worker", "uv__fs_work", "uv__fs_open"], "openat", 1),
      (["worker", "uv_cond_wait", "pthread_cond_wait"], "futex", 4)]),
    ("python3", 6, 2, None, ["__libc_start_call_main", "main", "Py_BytesMain", "Py_RunMain", "pymain_run_python",
                             "_PyRun_AnyFileObject", "_PyRun_SimpleFileObject", "run_mod", "run_eval_code_obj",
                             "PyEval_EvalCode", "_PyEval_EvalFrameDefault"],
     [(["_PyEval_EvalFrameDefault", "method_vectorcall_O", "_io_FileIO_write", "_Py_write"], "write", 2),
      (["_PyEval_EvalFrameDefault", "take_gil", "pthread_cond_timedwait"], "futex", 4),
      (["_PyEval_EvalFrameDefault", "time_sleep", "pysleep"], "nanosleep", 2),
      (["_PyEval_EvalFrameDefault", "sock_recv_impl", "sock_call_ex", "sock_recv_impl"], "recvfrom", 2),
      (["_PyEval_EvalFrameDefault", "os_fsync_impl"], "fsync", 1),
      (["_PyEval_EvalFrameDefault", "_io_FileIO_readall_impl", "_Py_read"], "read", 1),
      (["_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault", "list_sort_impl"], "-", 1)]),
    ("containerd", 1, 20, None, ["runtime.goexit.abi0"],
     [(["runtime.gcBgMarkWorker", "runtime.gopark", "runtime.mcall", "runtime.park_m", "runtime.schedule",
        "runtime.findRunnable", "runtime.stopm", "runtime.notesleep", "runtime.futexsleep", "runtime.futex.abi0"],
       "futex", 8),
      (["internal/poll.(*FD).Read", "internal/poll.ignoringEINTRIO", "syscall.Read", "syscall.Syscall",
        "syscall.RawSyscall6"], "read", 2),
      (["runtime.mstart", "runtime.mstart1", "runtime.schedule", "runtime.findRunnable", "runtime.netpoll",
        "runtime.epollwait.abi0"], "epoll_wait", 3),
      (["os.(*File).Sync", "internal/poll.(*FD).Fsync", "syscall.Fsync", "syscall.Syscall"], "fsync", 0.5),
      (["github.com/containerd/containerd/metadata.(*DB).Update", "go.etcd.io/bbolt.(*Tx).Commit",
        "go.etcd.io/bbolt.(*Tx).write", "os.(*File).WriteAt", "internal/poll.(*FD).Pwrite", "syscall.Pwrite"],
       "pwrite64", 1)]),
    ("sshd", 6, 1, None, ["__libc_start_call_main", "main", "server_loop2"],
     [(["wait_until_can_do_something"], "select", 5), (["process_input"], "read_pipe", 2),
      (["channel_handle_rfd"], "read", 1)]),
    ("systemd-journal", 1, 1, None, ["__libc_start_call_main", "main", "sd_event_run"],
     [(["sd_event_wait"], "epoll_wait", 6),
      (["sd_event_dispatch", "server_dispatch_message", "journal_file_append_entry", "journal_file_post_change"],
       "ftruncate", 1),
      (["sd_event_dispatch", "server_sync", "journal_file_set_offline"], "fsync", 2),
      (["sd_event_dispatch", "server_dispatch_message", "journal_file_append_entry", "journal_file_append_data",
        "journal_file_allocate"], "pwrite64", 1)]),
    ("bash", 6, 1, None, ["__libc_start_call_main", "main", "reader_loop", "execute_command",
                          "execute_command_internal"],
     [(["execute_simple_command", "execute_disk_command", "wait_for", "waitchld"], "wait4", 4),
      (["readline", "rl_getc"], "read", 2), (["execute_pipeline", "wait_for"], "wait4", 1)]),
    ("rsync", 2, 1, None, ["__libc_start_call_main", "main", "client_run", "do_recv", "recv_files"],
     [(["receive_data", "write_file", "full_write"], "write", 5), (["receive_data", "read_buf", "safe_read"],
                                                                   "read", 2),
      (["finish_transfer", "do_fsync"], "fsync", 2), (["open_tmpfile", "do_open"], "openat", 1),
      (["finish_transfer", "robust_rename", "do_rename", "delete_item", "do_unlink"], "unlinkat", 1)]),
]

LIBC = {  # syscall -> libc leaf frames root first
    "write": ["__GI___libc_write"], "pwrite64": ["__libc_pwrite64"], "writev": ["__writev"],
    "read": ["__GI___libc_read"], "pread64": ["__libc_pread64"], "fsync": ["fsync"], "fdatasync": ["fdatasync"],
    "openat": ["__libc_open64"], "unlinkat": ["unlink"], "ftruncate": ["ftruncate64"],
    "futex": ["___pthread_cond_wait", "__pthread_cond_wait_common", "__futex_abstimed_wait_common",
              "__futex_abstimed_wait_common64"],
    "epoll_wait": ["epoll_wait"], "nanosleep": ["__GI___clock_nanosleep"], "recvfrom": ["__libc_recv"],
    "sendmsg": ["__libc_sendmsg"], "accept4": ["accept4"], "read_pipe": ["__GI___libc_read"],
    "wait4": ["__GI___wait4"], "io_getevents": ["io_getevents"], "io_uring_enter": ["io_uring_wait_cqe"],
    "mmap": ["mmap64"], "munmap": ["__munmap"], "madvise": ["madvise"], "select": ["__GI_ppoll"],
}


# preempted rather than blocked (offcputime counts every switch-out): in the kernel at any frame, or in user code
PREEMPT_IRQ = ["asm_sysvec_apic_timer_interrupt", "sysvec_apic_timer_interrupt", "irqentry_exit",
               "preempt_schedule_irq", "__schedule", "finish_task_switch.isra.0"]
COND_RESCHED = ["__cond_resched", "__schedule", "finish_task_switch.isra.0"]
PREEMPT_USER = [["asm_sysvec_apic_timer_interrupt", "irqentry_exit_to_user_mode"],
                ["asm_sysvec_reschedule_ipi", "irqentry_exit_to_user_mode"],
                ["entry_SYSCALL_64_after_hwframe", "do_syscall_64", "syscall_exit_to_user_mode"]]
PREEMPT_USER_TAIL = ["exit_to_user_mode_prepare", "exit_to_user_mode_loop", "schedule", "__schedule",
                     "finish_task_switch.isra.0"]

# direct reclaim from an allocation anywhere in a path: an allocator, the reclaim path, where reclaim waits
ALLOCATORS = [["kmem_cache_alloc"], ["kmem_cache_alloc_lru"], ["__kmalloc"], ["filemap_alloc_folio", "folio_alloc"],
              ["__filemap_get_folio", "filemap_alloc_folio", "folio_alloc"], ["bio_alloc_bioset", "mempool_alloc"],
              ["xfs_buf_alloc_pages", "alloc_pages_bulk_array"], ["__mem_cgroup_charge", "charge_memcg"]]
RECLAIM = {
    "global": ["__alloc_pages", "__alloc_pages_slowpath.constprop.0", "__alloc_pages_direct_reclaim",
               "__perform_reclaim", "try_to_free_pages", "do_try_to_free_pages", "shrink_zones", "shrink_node"],
    "memcg": ["try_charge_memcg", "try_to_free_mem_cgroup_pages", "do_try_to_free_pages", "shrink_zones",
              "shrink_node"],
}
RECLAIM_TAILS = [
    (["shrink_node_memcgs", "shrink_lruvec", "shrink_inactive_list", "shrink_folio_list"], ["folio_wb", "folio_lock"]),
    (["shrink_slab", "do_shrink_slab", "super_cache_scan", "xfs_fs_free_cached_objects", "xfs_reclaim_inodes_nr",
      "xfs_icwalk", "xfs_icwalk_ag", "xfs_reclaim_inode"], ["xfs_ilock", "xfs_buf"]),
    (["shrink_slab", "do_shrink_slab", "super_cache_scan", "prune_icache_sb", "dispose_list", "evict",
      "ext4_evict_inode", "truncate_inode_pages_final", "truncate_inode_pages_range"], ["folio_wb", "folio_lock"]),
    (["shrink_slab", "do_shrink_slab", "super_cache_scan", "prune_dcache_sb", "shrink_dentry_list", "__dentry_kill",
      "dentry_unlink_inode", "iput", "evict", "xfs_fs_destroy_inode", "xfs_inode_mark_reclaimable"], ["mutex"]),
    (["shrink_node_memcgs", "shrink_lruvec", "shrink_active_list"], ["rwsem_r"]),
]

KERNEL_PREEMPT = 0.10  # of the kernel stacks: preempted in the middle of the path
RECLAIM_P = 0.08  # of the kernel stacks: blocked in direct reclaim from an allocation in the path
# fmt: on


def kernel_stack(rnd: random.Random, syscall: str) -> list[str]:
    """One kernel stack (root first) for a task switched out in `syscall`, in a user page fault ("fault"), or
    preempted in user code ("-")."""
    if syscall == "-":
        return rnd.choice(PREEMPT_USER) + PREEMPT_USER_TAIL
    if syscall == "fault":
        path, waits = rnd.choice(FAULT_PATHS)
        path = FAULT + path
    else:
        frames, kind = SYSCALLS[syscall]
        path, waits = list(SYSCALL_ENTRY + frames), None
        if isinstance(kind, str):
            sub, waits = rnd.choice([p for p in FS_PATHS if p[0][0] in FS_KIND[kind]])
            path += sub
        elif kind is not None:
            sub, waits = rnd.choice(kind)
            path += sub
            if isinstance(waits, str):
                sub, waits = rnd.choice([p for p in FS_PATHS if p[0][0] in FS_KIND[waits]])
                path += sub
        if waits and rnd.random() < 0.2 and syscall in ("write", "pwrite64", "writev", "read", "pread64"):
            # a page fault taken while copying from/to user memory, in the middle of the path
            cut = rnd.randint(len(SYSCALL_ENTRY) + 2, len(path))
            fpath, waits = rnd.choice(FAULT_PATHS)
            path = path[:cut] + [rnd.choice(FAULT_UNDER)] + FAULT + fpath
    r = rnd.random()
    if r < KERNEL_PREEMPT and len(path) > 3:
        return path[: rnd.randint(3, len(path))] + (PREEMPT_IRQ if rnd.random() < 0.6 else COND_RESCHED)
    if r < KERNEL_PREEMPT + RECLAIM_P and waits and len(path) > 3:
        where = rnd.choice(list(RECLAIM))
        tail, rwaits = rnd.choice(RECLAIM_TAILS)
        return (
            path[: rnd.randint(3, len(path))]
            + rnd.choice(ALLOCATORS)
            + RECLAIM[where]
            + tail
            + _wait(rnd, rnd.choice(rwaits))
            + SCHED_TAIL
        )
    return path + (_wait(rnd, rnd.choice(waits)) if waits else []) + SCHED_TAIL


def _wait(rnd: random.Random, name: str) -> list[str]:
    helper = rnd.choice(HELPERS[name]) if name in HELPERS else []
    return helper + WAITS[name]


def tasks(rnd: random.Random) -> list[dict]:
    out = []
    pid = 700
    for comm, n, kstacks in KTHREADS:
        for i in range(n):
            pid += rnd.randint(1, 9)
            name = comm.format(i=i % 8, j=i // 8) if "{j}" in comm else comm.format(i=i)
            out.append({"comm": name, "pid": pid, "kthread": kstacks})
    for comm, procs, threads, thread_comms, base, paths in PROGRAMS:
        for _ in range(procs):
            pid += rnd.randint(3, 400)
            for t in range(threads):
                out.append(
                    {
                        "comm": rnd.choice(thread_comms) if thread_comms else comm,
                        "pid": pid + t,
                        "base": base,
                        "paths": paths,
                        "weights": [w for _, _, w in paths],
                    }
                )
    return out


def user_stack(rnd: random.Random, task: dict) -> tuple[list[str], str]:
    """(user stack root first, the syscall it is in or "-" for user code): the program's frames, one of its
    paths (sometimes a caller higher up: the same syscall from another call site), the libc wrapper."""
    app, syscall, _ = rnd.choices(task["paths"], task["weights"])[0]
    if rnd.random() < 0.3:
        app = app[: rnd.randint(1, len(app))]
    if rnd.random() < 0.02:
        return ["[Missed User Stack]"], syscall
    return task["base"] + app + (LIBC[syscall] if syscall != "-" else []), syscall


def records(n: int, seed: int) -> list[tuple[str, int, list[str], list[str], int]]:
    """n records (comm, pid, kernel frames root first, user frames root first, µs), sorted as bcc prints."""
    rnd = random.Random(seed)
    ts = tasks(rnd)
    weights = [rnd.paretovariate(1.2) for _ in ts]  # skewed: a few tasks hold most records
    seen: set[tuple] = set()
    out = []
    attempts = 0
    while len(out) < n and attempts < n * 20:
        attempts += 1
        t = rnd.choices(ts, weights)[0]
        if "kthread" in t:
            k = KTHREAD_ROOT + rnd.choice(t["kthread"])
            if rnd.random() < KERNEL_PREEMPT:
                k = k[: rnd.randint(len(KTHREAD_ROOT) + 1, len(k))] + COND_RESCHED
            else:
                k = k + SCHED_TAIL
            u: list[str] = []
        else:
            u, syscall = user_stack(rnd, t)
            if syscall != "-" and rnd.random() < 0.06:
                # a page fault in user code: the user stack is where it touched memory (no libc wrapper)
                if u[-1:] == LIBC[syscall][-1:]:
                    u = u[: len(u) - len(LIBC[syscall])]
                syscall = "fault"
            k = kernel_stack(rnd, syscall)
        key = (t["pid"], tuple(k), tuple(u))
        if key in seen:
            continue
        seen.add(key)
        us = int(min(WINDOW_S * 1e6, math.exp(rnd.gauss(7.5, 2.6)))) + 1
        out.append((t["comm"], t["pid"], k, u, us))
    out.sort(key=lambda r: (r[4], r[1]))
    return out


def write(path: str, n: int, seed: int = 1, folded: bool = False) -> dict:
    recs = records(n, seed)
    lines = 0
    with open(path, "w") as f:
        buf: list[str] = []
        if not folded:
            buf.append(f"Tracing off-CPU time (us) of all threads by user + kernel stack for {WINDOW_S} secs.\n")
            lines += 1
        for comm, pid, k, u, us in recs:
            if folded:
                user = ";".join(u) if u else ""
                buf.append(f"{comm};{user + ';-;' if u else ''}{';'.join(k)} {us}\n")
                lines += 1
            else:
                buf.append("\n")
                buf.extend(f"    {fr}\n" for fr in reversed(k))
                if u:
                    buf.append("    --\n")
                    buf.extend(f"    {fr}\n" for fr in reversed(u))
                buf.append(f"    {'-':<16} {comm} ({pid})\n        {us}\n")
                lines += len(k) + (len(u) + 1 if u else 0) + 3
            if len(buf) > 50_000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
    kstacks = len({tuple(r[2]) for r in recs})
    return {"records": len(recs), "lines": lines, "kernel_stacks": kstacks, "tasks": len({r[1] for r in recs})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--records", type=int, default=60_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--folded", action="store_true", help="bcc -f folded lines instead of the multi-line output")
    a = ap.parse_args()
    info = write(a.out, a.records, a.seed, a.folded)
    print(
        f"{a.out}: {info['records']:,} records, {info['lines']:,} lines, {info['kernel_stacks']:,} distinct "
        f"kernel stacks, {info['tasks']} tasks"
    )


if __name__ == "__main__":
    main()
