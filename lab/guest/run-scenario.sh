#!/bin/bash
# Runs inside the lab's guest as PID 1's successor (see lab-init): the scenario named on the kernel command line
# (lab.scenario=NAME) sets its devices up, the recorders start (guest/record.sh), its workload runs, the recorders
# stop, and everything is copied to /out (the host's output folder). Then the guest powers off, whatever happened.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
echo 1 > /proc/sys/kernel/sysrq
power_off() { sync; echo o > /proc/sysrq-trigger; sleep 60; }
trap power_off EXIT
exec > >(tee /out/guest.log) 2>&1
scenario=$(sed -n 's/.*lab\.scenario=\([A-Za-z0-9_-]*\).*/\1/p' /proc/cmdline)
echo "lab: scenario $scenario on $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
export OUT=/out WORK=/out/workload
mkdir -p "$WORK"
# shellcheck source=/dev/null
source /lab/guest/record.sh
# shellcheck source=/dev/null
source "/lab/scenarios/$scenario.sh"
# Tracers write their marks with the trace's own clock: the workload says when each step began and ended.
mark() { echo "$*" > /sys/kernel/tracing/trace_marker; }
# Times the workload measures itself: wall-clock seconds from bash itself (no process started).
now() { echo "$EPOCHREALTIME"; }

# what the guest is doing, every 15 s, for a recording that hangs (the host keeps it beside the console log)
( while sleep 15; do
	{ date +%T; ps -eo pid,stat,etime,time,args --sort=start_time | tail -n 25
		echo "tracer $(cat /sys/kernel/tracing/current_tracer) on $(cat /sys/kernel/tracing/tracing_on)"; } > /out/ps.log
done ) &
step() { echo "lab: $(date +%T) $*" >&2; "$@"; }
step setup
cat /proc/partitions > "$OUT/partitions.txt"
ls -l /dev/mapper/ /dev/dm-* /dev/vd* > "$OUT/devices.txt" 2>&1
dmsetup table > "$OUT/dmsetup-table.txt" 2>&1
for q in /sys/block/*/queue/scheduler; do echo "$q: $(cat "$q")"; done > "$OUT/schedulers.txt"
step record_start
step workload
step record_stop
step record_collect
step truth > "$OUT/TRUTH.json"
uname -r > "$OUT/kernel.txt"
echo "lab: scenario $scenario done"
touch "$OUT/DONE"
