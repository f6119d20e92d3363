# Stable page writes on XFS: a writer re-dirtying a page under writeback waits for that writeback.
#
# Injected cause: XFS on a device-mapper `delay` target (every write held 200 ms in device-mapper) over a virtio
# disk whose queue asks for stable writes (`queue/stable_writes` = 1, which device-mapper inherits), and the
# flusher woken every 0.5 s for pages dirty over 1 s. fio appends 1 KiB buffered writes (`rw=write bs=1k
# ioengine=sync rate=256k`), re-dirtying the page the flusher is writing: fio waits in `folio_wait_writeback`
# (via `folio_wait_stable` from `iomap_write_begin`) until `folio_end_writeback` in a kworker's `xfs_end_io`.
# The stable-page-write and mmap-write latency reports (shared/seed-excerpts) in small.
# Truth: the delay (dmsetup-table.txt) and fio's own completion latencies (workload/fio.json, its clat log).

DATA_DISK_MB=1024
TIMEOUT_S=1500
GRAPH_FUNCS="folio_wait_writeback folio_wait_stable xfs_end_io"
GRAPH_DEPTH=3
TRACE_EVENTS="writeback:writeback_single_inode writeback:writeback_written"
BLK_DEVICES="/dev/dm-0 /dev/vdb"
DELAY_MS=200

setup() {
	export DM_DISABLE_UDEV=1
	echo 1 > /sys/block/vdb/queue/stable_writes
	local sectors
	sectors=$(blockdev --getsz /dev/vdb)
	dmsetup create slow --table "0 $sectors delay /dev/vdb 0 0 /dev/vdb 0 $DELAY_MS"
	dmsetup mknodes
	echo "dm-0 stable_writes: $(cat /sys/block/dm-0/queue/stable_writes)"
	mkfs.xfs -q -f /dev/mapper/slow
	mount /dev/mapper/slow /mnt/test
	sysctl -q vm.dirty_expire_centisecs=100 vm.dirty_writeback_centisecs=50
	sync
}

workload() {
	mark "fio append start"
	(cd "$WORK" && fio --name=append --filename=/mnt/test/append --rw=write --bs=1k --ioengine=sync --iodepth=1 \
		--rate=256k --size=64m --runtime=12 --time_based --direct=0 --write_lat_log=append --log_avg_msec=0 \
		--output-format=json --output="$WORK/fio.json")
	mark "fio append done"
}

truth() {
	python3 - "$WORK/fio.json" "$DELAY_MS" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]["write"]
clat = job["clat_ns"]
print(json.dumps({
    "scenario": "stable-pages",
    "cause": {"kind": "dm-delay", "device": "dm-0", "layer": "device-mapper", "write_delay_ms": int(sys.argv[2]),
              "below": "vdb", "stable_writes": True},
    "stalled": {"comm": "fio", "wait": "folio_wait_writeback", "family": "io",
                "fio_writes": job["total_ios"], "fio_clat_max_ms": round(clat["max"] / 1e6, 3),
                "fio_clat_p99_ms": round(clat["percentile"]["99.000000"] / 1e6, 3),
                "fio_clat_mean_ms": round(clat["mean"] / 1e6, 3)},
    "through": ["fio", "kworker"],
    "terminal": {"device": "dm-0", "layer": "device-mapper", "op": "write", "held_ms_at_least": int(sys.argv[2]),
                 "disk_below": "vdb", "disk_ms_at_most": 50},
}, indent=2))
PY
}
