#!/usr/bin/env bash
# make lab SCENARIO=NAME: records one scenario on a real Linux kernel in a virtual machine and writes what it
# recorded to samples/real/NAME/. `make lab` records them all. Nothing runs on the host but qemu and the
# post-processing of the files (trace-cmd report, blkparse), with the host's Debian tools.
#   LAB_CACHE   where the guest is built and cached (default ~/.cache/stallscope-lab)
#   LAB_ACCEL   qemu's accelerator (default tcg,thread=multi: software emulation; kvm where a stock kernel boots)
#   LAB_OUT     where to write (default samples/real)
#   LAB_SMP     the guest's CPUs (default 1: under emulation on a busy host, function_graph's code patching waits for
#               every other CPU, and 2 CPUs met soft lockups while trace-cmd started)
set -euo pipefail

# (one function, read whole before it runs: the script may be edited while a recording runs)
main() {
	here=$(cd "$(dirname "$0")" && pwd)
	repo=$(dirname "$here")
	scenario=${1:?usage: lab/run.sh SCENARIO (one of: $(cd "$here/scenarios" && ls ./*.sh | sed 's|./||; s|\.sh$||' | xargs))}
	[ -f "$here/scenarios/$scenario.sh" ] || { echo "lab: no scenario $scenario in lab/scenarios/" >&2; exit 2; }
	LAB_CACHE=${LAB_CACHE:-$HOME/.cache/stallscope-lab}
	LAB_ACCEL=${LAB_ACCEL:-tcg,thread=multi}
	LAB_OUT=${LAB_OUT:-$repo/samples/real}
	LAB_SMP=${LAB_SMP:-1}
	export LAB_CACHE
	bash "$here/build-guest.sh"

	# The scenario's host side: the data disk's size and qemu drive options (a throttled disk), and its time limit.
	DATA_DISK_MB=1024 DATA_DRIVE_OPTS="" DATA_DEVICE_OPTS="" TIMEOUT_S=1200
	# shellcheck source=/dev/null
	source "$here/scenarios/$scenario.sh"

	out=$(mktemp -d "${TMPDIR:-/tmp}/lab-$scenario.XXXXXX")
	chmod 777 "$out"
	# the guest reads a copy of this folder: editing a scenario while it records changes nothing under it
	labcopy=$out.lab
	cp -r "$here" "$labcopy"
	data=$LAB_CACHE/data-$scenario.img
	rm -f "$data"
	truncate -s "${DATA_DISK_MB}M" "$data"
	append="root=/dev/vda rw console=ttyS0 init=/sbin/lab-init panic=10 lab.scenario=$scenario"
	qemu=(qemu-system-x86_64 -accel "$LAB_ACCEL" -cpu max -m 2G -smp "$LAB_SMP"
		-kernel "$LAB_CACHE/vmlinuz" -initrd "$LAB_CACHE/initrd.img" -append "$append"
		-drive "file=$LAB_CACHE/rootfs.img,if=none,id=root,format=raw,snapshot=on"
		-device virtio-blk-pci,drive=root,addr=0x4
		-drive "file=$data,if=none,id=data,format=raw,cache=none,aio=threads${DATA_DRIVE_OPTS:+,$DATA_DRIVE_OPTS}"
		-device "virtio-blk-pci,drive=data,addr=0x5${DATA_DEVICE_OPTS:+,$DATA_DEVICE_OPTS}"
		-virtfs "local,path=$labcopy,mount_tag=lab,security_model=none,readonly=on"
		-virtfs "local,path=$out,mount_tag=out,security_model=none"
		-nographic -no-reboot)
	echo "lab: $scenario: booting ($LAB_ACCEL, at most $TIMEOUT_S s); console in $out.console.log"
	start=$(date +%s)
	status=0
	timeout "$TIMEOUT_S" "${qemu[@]}" > "$out.console.log" 2>&1 < /dev/null || status=$?
	rm -rf "$data" "$labcopy"
	elapsed=$(($(date +%s) - start))
	if [ ! -f "$out/DONE" ]; then
		echo "lab: $scenario did not finish (qemu exit $status after $elapsed s); the guest's log:" >&2
		tail -40 "$out/guest.log" 2>/dev/null >&2 || tail -40 "$out.console.log" >&2
		cat "$out/ps.log" >&2 2>/dev/null
		exit 1
	fi
	echo "lab: $scenario recorded in $elapsed s"

	# Derived on the host: the blktrace set's blkparse text (its reader has tests too).
	dest=$LAB_OUT/$scenario
	rm -rf "$dest"
	mkdir -p "$dest/blktrace"
	if [ -f "$out/trace.dat" ]; then  # (its report text is ~25x larger: tests render it with trace-cmd report)
		cp "$out/trace.dat" "$dest/trace.dat"
	else  # FTRACE_WITH=tracefs: the tracefs `trace` file as read in the guest
		cp "$out/trace.txt" "$dest/trace.txt"
	fi
	cp "$out"/blktrace/*.blktrace.* "$dest/blktrace/"
	names=$(cd "$dest/blktrace" && ls ./*.blktrace.* | sed 's|^\./||; s|\.blktrace\.[0-9]*$||' | sort -u)
	inputs=()
	for n in $names; do inputs+=(-i "$n"); done
	(cd "$dest/blktrace" && blkparse -q "${inputs[@]}" -o "$dest/blkparse.txt" > /dev/null)
	for f in perf.script.txt offcputime.txt offcputime.folded.txt offwaketime.txt TRUTH.json kernel.txt partitions.txt \
		devices.txt dmsetup-table.txt schedulers.txt guest.log; do
		[ -f "$out/$f" ] && cp "$out/$f" "$dest/$f"
	done
	[ -d "$out/workload" ] && cp -r "$out/workload" "$dest/workload"
	# text outputs past 1 MiB are kept gzipped (tests read them through gunzip): a recording stays a few MB
	find "$dest" -type f -name '*.txt' -size +1M -exec gzip -9 {} +
	{
		echo "# $scenario: recorded by \`make lab SCENARIO=$scenario\`"
		echo
		sed -n 's/^# \{0,1\}//p; /^[^#]/q' "$here/scenarios/$scenario.sh" | sed '/^!/d'
		echo
		echo "- kernel: $(cat "$out/kernel.txt") (Debian bookworm guest), qemu $LAB_ACCEL, $LAB_SMP CPU(s), 2 GiB"
		echo "- recorded on $(date -u +%Y-%m-%d) in $elapsed s; the scenario: \`lab/scenarios/$scenario.sh\`;"
		echo "  the recorders: \`lab/guest/record.sh\`"
		echo "- data disk: ${DATA_DISK_MB} MiB virtio${DATA_DRIVE_OPTS:+, qemu drive options \`$DATA_DRIVE_OPTS\`}${DATA_DEVICE_OPTS:+, device options \`$DATA_DEVICE_OPTS\`}"
		echo
		echo "| file | bytes |"
		echo "|---|---:|"
		(cd "$dest" && find . -type f ! -name README.md | sort | while read -r f; do
			echo "| \`${f#./}\` | $(stat -c %s "$f") |"
		done)
	} > "$dest/README.md"
	rm -rf "$out" "$out.console.log" "$labcopy"
	du -sh "$dest"
}

main "$@"
exit
