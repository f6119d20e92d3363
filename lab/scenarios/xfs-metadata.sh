# XFS metadata under a starved write: a file create blocks on xfs_buf_lock while its directory's buffer is written.
#
# Injected cause: as in iosched-starve, the virtio disk holds at most 4 requests (qemu `queue-size=4`, at most
# 20 per second) and mq-deadline prefers reads for ever (`writes_starved` 1000000, `write_expire` 60 s, 256 requests of room); XFS
# pushes its log every second (`fs.xfs.xfssyncd_centisecs` 100), so xfsaild writes the directory's metadata
# buffer back while a reader floods the disk with direct random reads for 12 s. A creator makes a file in that
# directory every 0.2 s and times each open(O_CREAT): once xfsaild's write of the buffer is starved in the
# scheduler, the create sleeps in `xfs_buf_lock` (down) until that write completes. The database open() stall of
# shared/seed-excerpts (xfs-open-stall offcputime stack, cfq-dispatch-starvation blkparse).
# Truth: the scheduler's settings (workload/iosched.txt) and the creator's own open() times (workload/creates.tsv,
# CLOCK_MONOTONIC), its slowest marked in the trace (`create N slow`).

DATA_DISK_MB=1024
TIMEOUT_S=1500
DATA_DRIVE_OPTS="throttling.iops-total=20"
DATA_DEVICE_OPTS="queue-size=4"
GRAPH_FUNCS="xfs_buf_lock xfs_create"
GRAPH_DEPTH=3
TRACE_EVENTS="xfs:xfs_buf_lock xfs:xfs_buf_lock_done xfs:xfs_buf_iodone xfs:xfs_ail_push"
BLK_DEVICES="/dev/vdb"

# shellcheck source=lab/shared-steps/starve-writes.sh
source "$(dirname "${BASH_SOURCE[0]}")/../shared-steps/starve-writes.sh"

setup() {
	starve_writes
	mkfs.xfs -q -f /dev/vdb
	mount /dev/vdb /mnt/test
	mkdir /mnt/test/db
	dd if=/dev/urandom of=/mnt/test/readfile bs=1M count=32 oflag=direct status=none
	sysctl -q fs.xfs.xfssyncd_centisecs=100
	sync
}

workload() {
	python3 - "$WORK/creates.tsv" <<'PY' &
import os, sys, time
out = open(sys.argv[1], "w")
out.write("n\tstart_s\tend_s\n")
end = time.monotonic() + 16
n = 0
while time.monotonic() < end:
    n += 1
    t0 = time.monotonic()
    fd = os.open(f"/mnt/test/db/table.{n}", os.O_CREAT | os.O_WRONLY, 0o644)
    t1 = time.monotonic()
    os.write(fd, b"x" * 512)
    os.close(fd)
    out.write(f"{n}\t{t0:.6f}\t{t1:.6f}\n")
    out.flush()
    if t1 - t0 > 0.5:
        with open("/sys/kernel/tracing/trace_marker", "w") as m:
            m.write(f"create {n} slow {t1 - t0:.3f} s")
    time.sleep(0.2)
PY
	local creator=$!
	sleep 2
	mark "read flood start"
	fio --name=flood --filename=/mnt/test/readfile --rw=randread --bs=4k --ioengine=libaio --iodepth=32 --direct=1 \
		--runtime=12 --time_based --output-format=json --output="$WORK/fio.json"
	mark "read flood done"
	wait "$creator"
}

truth() {
	python3 - "$WORK/creates.tsv" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
secs = sorted(((float(r["end_s"]) - float(r["start_s"]), int(r["n"])) for r in rows), reverse=True)
print(json.dumps({
    "scenario": "xfs-metadata",
    "cause": {"kind": "scheduler", "device": "vdb", "scheduler": "mq-deadline", "writes_starved": 1000000,
              "write_expire_ms": 60000, "device_queue_depth": 4, "nr_requests": 256, "device_iops_limit": 20, "xfssyncd_centisecs": 100,
              "flood": "fio randread 4k libaio iodepth 32 direct, 12 s"},
    "stalled": {"comm": "python3", "call": "open(O_CREAT)", "wait": "xfs_buf_lock", "family": "lock",
                "creates": len(rows), "slowest_ms": round(secs[0][0] * 1000, 3), "slowest_n": secs[0][1],
                "over_500ms": sum(1 for s, _ in secs if s > 0.5)},
    "through": ["python3", "xfsaild/vdb"],
    "terminal": {"device": "vdb", "layer": "scheduler", "phase": "I2D", "op": "write", "comm": "xfsaild/vdb"},
}, indent=2))
PY
}
