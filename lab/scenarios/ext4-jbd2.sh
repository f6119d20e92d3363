# ext4's journal behind a slow device-mapper layer: small fsyncs wait in jbd2_log_wait_commit.
#
# Injected cause: ext4 on a device-mapper `delay` target over the virtio disk, every write held 200 ms in
# device-mapper (reads not delayed). A loop of small `dd conv=fsync` (one 4 KiB block each) runs beside large
# ones (16 MiB, conv=fsync). Each small fsync waits in `jbd2_log_wait_commit` for the journal thread
# `jbd2/dm-0-8`, which waits on its journal writes to dm-0: each sits ~200 ms in device-mapper and well under
# a few ms on the disk below (vdb). The excessive-stall-time report on ext4 (shared/seed-excerpts) in small.
# Truth: the delay (200 ms per write, dmsetup-table.txt) and the small dd's own times (workload/small-dd.tsv:
# wall-clock start and end, and dd's own figure), each also marked in the trace (`small dd N start/done`).

DATA_DISK_MB=1024
TIMEOUT_S=1500
GRAPH_FUNCS="vfs_fsync_range jbd2_log_wait_commit jbd2_journal_commit_transaction"
GRAPH_DEPTH=4
TRACE_EVENTS="jbd2"
BLK_DEVICES="/dev/dm-0 /dev/vdb"
DELAY_MS=200

setup() {
	export DM_DISABLE_UDEV=1
	local sectors
	sectors=$(blockdev --getsz /dev/vdb)
	dmsetup create slow --table "0 $sectors delay /dev/vdb 0 0 /dev/vdb 0 $DELAY_MS"
	dmsetup mknodes
	mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/slow
	mount /dev/mapper/slow /mnt/test
	sync
}

workload() {
	( for i in 1 2 3; do dd if=/dev/zero of=/mnt/test/large.$i bs=1M count=16 conv=fsync 2>> "$WORK/large-dd.log"; done ) &
	local large=$! i t0 t1
	printf 'n\tstart_s\tend_s\tdd_says\n' > "$WORK/small-dd.tsv"
	for i in $(seq 1 8); do
		mark "small dd $i start"
		t0=$(now)
		dd if=/dev/zero of="/mnt/test/small.$i" bs=4k count=1 conv=fsync 2> "$WORK/small-dd.$i.log"
		t1=$(now)
		mark "small dd $i done"
		printf '%s\t%s\t%s\t%s\n' "$i" "$t0" "$t1" "$(tail -1 "$WORK/small-dd.$i.log")" >> "$WORK/small-dd.tsv"
		sleep 0.3
	done
	wait "$large"
}

truth() {
	python3 - "$WORK/small-dd.tsv" "$DELAY_MS" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
secs = [float(r["end_s"]) - float(r["start_s"]) for r in rows]
print(json.dumps({
    "scenario": "ext4-jbd2",
    "cause": {"kind": "dm-delay", "device": "dm-0", "layer": "device-mapper", "write_delay_ms": int(sys.argv[2]),
              "below": "vdb", "read_delay_ms": 0},
    "stalled": {"comm": "dd", "count": len(secs), "wait": "jbd2_log_wait_commit", "family": "io",
                "measured_ms": [round(s * 1000, 3) for s in secs],
                "min_ms": round(min(secs) * 1000, 3), "max_ms": round(max(secs) * 1000, 3)},
    "through": ["dd", "jbd2/dm-0-8"],
    "terminal": {"device": "dm-0", "layer": "device-mapper", "op": "write", "held_ms_at_least": int(sys.argv[2]),
                 "disk_below": "vdb", "disk_ms_at_most": 50},
}, indent=2))
PY
}
