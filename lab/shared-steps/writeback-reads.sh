# Shared by the two writeback-reads scenarios (lab/scenarios/writeback-reads-*.sh set WRITE_MODE first): XFS on a
# disk that serves at most 8 MB/s (qemu throttling); mq-deadline; fio's 4 random 4 KiB direct readers run for 14 s
# and a 64 MiB dd writes beside them from the 3rd second, buffered (its writeback floods the device's queue ahead
# of the reads) or direct (one 1 MiB write at a time). The writeback-vs-direct-I/O report of shared/seed-excerpts.
DATA_DISK_MB=1024
TIMEOUT_S=1500
DATA_DRIVE_OPTS="throttling.bps-total=8388608"
GRAPH_FUNCS="xfs_file_read_iter"
GRAPH_DEPTH=2
TRACE_EVENTS=""
BLK_DEVICES="/dev/vdb"
BCC_TOOLS="offcputime-folded"

setup() {
	echo mq-deadline > /sys/block/vdb/queue/scheduler
	mkfs.xfs -q -f /dev/vdb
	mount /dev/vdb /mnt/test
	dd if=/dev/urandom of=/mnt/test/readfile bs=1M count=32 oflag=direct status=none
	sync
}

workload() {
	mark "readers start"
	(cd "$WORK" && fio --name=readers --filename=/mnt/test/readfile --rw=randread --bs=4k --ioengine=sync \
		--numjobs=4 --direct=1 --runtime=14 --time_based --group_reporting \
		--output-format=json --output="$WORK/fio.json") &
	local readers=$! t0 t1 flag=""
	sleep 3
	[ "$WRITE_MODE" = direct ] && flag="oflag=direct"
	mark "dd $WRITE_MODE start"
	t0=$(now)
	# shellcheck disable=SC2086
	dd if=/dev/zero of=/mnt/test/written bs=1M count=64 $flag 2> "$WORK/dd.log"
	[ "$WRITE_MODE" = buffered ] && sync
	t1=$(now)
	mark "dd $WRITE_MODE done"
	printf 'start_s\tend_s\n%s\t%s\n' "$t0" "$t1" > "$WORK/dd.tsv"
	wait "$readers"
}

truth() {
	python3 - "$WORK/fio.json" "$WORK/dd.tsv" "$WRITE_MODE" <<'PY'
import csv, json, sys
reads = json.load(open(sys.argv[1]))["jobs"][0]["read"]
dd = next(csv.DictReader(open(sys.argv[2]), delimiter="\t"))
pct = reads["clat_ns"]["percentile"]
print(json.dumps({
    "scenario": f"writeback-reads-{sys.argv[3]}",
    "cause": {"kind": "writeback" if sys.argv[3] == "buffered" else "direct-writes", "device": "vdb",
              "scheduler": "mq-deadline", "device_bps_limit": 8388608,
              "writer": f"dd bs=1M count=64 {'oflag=direct' if sys.argv[3] == 'direct' else '(buffered, then sync)'}"},
    "stalled": {"comm": "fio", "op": "read", "family": "io", "reads": reads["total_ios"],
                "clat_p50_ms": round(pct["50.000000"] / 1e6, 3), "clat_p99_ms": round(pct["99.000000"] / 1e6, 3),
                "clat_max_ms": round(reads["clat_ns"]["max"] / 1e6, 3)},
    "writer_s": round(float(dd["end_s"]) - float(dd["start_s"]), 3),
    "terminal": {"device": "vdb", "layer": "device", "phase": "D2C", "op": "read"},
}, indent=2))
PY
}
