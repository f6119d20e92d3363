# The I/O scheduler starves writes: a direct write waits in mq-deadline's queue behind a flood of reads.
#
# Injected cause: the virtio disk holds at most 4 requests (qemu `queue-size=4`) and serves at most 20 per
# second (qemu throttling), and mq-deadline is told to prefer reads for ever (`writes_starved` 1000000,
# `write_expire` 60 s, 256 requests of room). fio floods the disk with 4 KiB direct random reads (libaio, iodepth 32) for 12 s; meanwhile
# one 4 KiB direct write (`dd oflag=direct`) starts every 3 s. Each write is inserted (I) at once and dispatched
# (D) only when the flood ends: its dispatch wait is most of its time, as in the CFQ starvation report
# (shared/seed-excerpts/cfq-dispatch-starvation) where xfsaild's write waited 15.6 s between I and D.
# Truth: the scheduler's settings (schedulers.txt and workload/iosched.txt) and each dd's own time
# (workload/writes.tsv, wall clock), marked in the trace (`write N start/done`); fio's read latencies.

DATA_DISK_MB=1024
TIMEOUT_S=1500
DATA_DRIVE_OPTS="throttling.iops-total=20"
DATA_DEVICE_OPTS="queue-size=4"
# ftrace through tracefs' files, read back as the `trace` text (trace.txt), not trace-cmd
FTRACE_WITH=tracefs
GRAPH_FUNCS="blkdev_write_iter blk_mq_dispatch_rq_list"
GRAPH_DEPTH=2
TRACE_EVENTS=""
BLK_DEVICES="/dev/vdb"
BCC_TOOLS="offcputime-folded"

# shellcheck source=lab/shared-steps/starve-writes.sh
source "$(dirname "${BASH_SOURCE[0]}")/../shared-steps/starve-writes.sh"

setup() {
	starve_writes
	dd if=/dev/zero of=/dev/vdb bs=1M count=64 oflag=direct status=none
}

workload() {
	mark "read flood start"
	fio --name=flood --filename=/dev/vdb --rw=randread --bs=4k --ioengine=libaio --iodepth=32 --direct=1 \
		--size=64m --runtime=12 --time_based --output-format=json --output="$WORK/fio.json" &
	local flood=$! i t0 t1
	printf 'n\tstart_s\tend_s\tdd_says\n' > "$WORK/writes.tsv"
	for i in 1 2 3; do
		sleep 2.5
		mark "write $i start"
		t0=$(now)
		dd if=/dev/urandom of=/dev/vdb bs=4k count=1 seek=$((100000 + i * 8)) oflag=direct 2> "$WORK/write.$i.log"
		t1=$(now)
		mark "write $i done"
		printf '%s\t%s\t%s\t%s\n' "$i" "$t0" "$t1" "$(tail -1 "$WORK/write.$i.log")" >> "$WORK/writes.tsv"
	done
	wait "$flood"
	mark "read flood done"
}

truth() {
	python3 - "$WORK/writes.tsv" "$WORK/fio.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
secs = [float(r["end_s"]) - float(r["start_s"]) for r in rows]
reads = json.load(open(sys.argv[2]))["jobs"][0]["read"]
print(json.dumps({
    "scenario": "iosched-starve",
    "cause": {"kind": "scheduler", "device": "vdb", "scheduler": "mq-deadline", "writes_starved": 1000000,
              "write_expire_ms": 60000, "device_queue_depth": 4, "nr_requests": 256, "device_iops_limit": 20,
              "flood": "fio randread 4k libaio iodepth 32, 12 s"},
    "stalled": {"comm": "dd", "count": len(secs), "family": "io", "op": "write",
                "measured_ms": [round(s * 1000, 3) for s in secs], "max_ms": round(max(secs) * 1000, 3),
                "min_ms": round(min(secs) * 1000, 3)},
    "terminal": {"device": "vdb", "layer": "scheduler", "phase": "I2D", "op": "write"},
    "reads": {"comm": "fio", "count": reads["total_ios"], "clat_p50_ms": round(reads["clat_ns"]["percentile"]["50.000000"] / 1e6, 3),
              "clat_max_ms": round(reads["clat_ns"]["max"] / 1e6, 3)},
}, indent=2))
PY
}
