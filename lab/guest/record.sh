# The lab's recorders, all at once (sourced by run-scenario.sh inside the guest). A scenario sets:
#   GRAPH_FUNCS   function_graph filters (trace-cmd -g), GRAPH_DEPTH its --max-graph-depth
#   TRACE_EVENTS  extra ftrace events (the filesystem's, jbd2's) beside sched and block
#   BLK_DEVICES   every layer of the block stack to blktrace (/dev/dm-0 /dev/vdb)
#   BCC_TOOLS     which of bcc's outputs (default all: offcputime offcputime-folded offwaketime); each costs a
#                 minute or more of compiling under emulation
# What it records (into $REC, then $OUT):
#   trace.dat            trace-cmd record: function_graph, sched_switch/wakeup/waking, block:*, the scenario's
#                        events, a kernel stack on every event (-T); file version 7, zstd
#   blktrace/            blktrace of every layer, per-CPU files (NAME.blktrace.CPU)
#   perf.script.txt      perf record -a -g of sched and block tracepoints, then perf script
#   offcputime*.txt      bcc offcputime -K --state 2, multi-line and folded (-f); offwaketime.txt likewise
# bcc's tools compile their programs first (minutes under software emulation): each is attached before the next
# starts, and trace-cmd starts last (bcc and function_graph starting together once hung a guest).
REC=/tmp/rec
BCC_TOOLS=${BCC_TOOLS:-offcputime offcputime-folded offwaketime}
declare -a REC_PIDS=()

wait_for_bpf() {  # a bcc tool is attached once it holds a loaded BPF program
	local pid=$1 i
	for i in $(seq 900); do
		kill -0 "$pid" 2>/dev/null || { echo "lab: bcc tool $pid exited early" >&2; return 1; }
		if ls -l "/proc/$pid/fd" 2>/dev/null | grep -q 'bpf-prog'; then sleep 2; return 0; fi
		sleep 1
	done
	echo "lab: bcc tool $pid not attached after 900 s" >&2
	return 1
}

start_bcc() {  # start_bcc OUTPUT TOOL ARGS...
	local output=$1
	shift
	# a script's background job ignores SIGINT, and Python then never sees it: bcc's tool would not print and exit
	env --default-signal=INT "$@" > "$REC/$output" 2> "$REC/$output.err" &
	REC_PIDS+=($!)
	wait_for_bpf $!
}

record_start() {
	mkdir -p "$REC/blktrace"
	local t0
	t0=$(date +%s)
	[[ " $BCC_TOOLS " == *" offcputime "* ]] && start_bcc offcputime.txt offcputime-bpfcc -K --state 2
	[[ " $BCC_TOOLS " == *" offcputime-folded "* ]] && start_bcc offcputime.folded.txt offcputime-bpfcc -K -f --state 2
	[[ " $BCC_TOOLS " == *" offwaketime "* ]] && start_bcc offwaketime.txt offwaketime-bpfcc -K --state 2
	echo "lab: bcc attached in $(($(date +%s) - t0)) s"
	local devs=() d
	for d in $BLK_DEVICES; do devs+=(-d "$d"); done
	blktrace -D "$REC/blktrace" "${devs[@]}" > "$REC/blktrace.log" 2>&1 &
	BLKTRACE_PID=$!
	perf record -a -g -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_waking \
		-e block:block_rq_insert -e block:block_rq_issue -e block:block_rq_complete \
		-e block:block_bio_queue -e block:block_bio_remap \
		-o "$REC/perf.data" > "$REC/perf.log" 2>&1 &
	PERF_PID=$!
	if [ "${FTRACE_WITH:-trace-cmd}" = tracefs ]; then
		tracefs_start
		echo "lab: recording since $(($(date +%s) - t0)) s after the start"
		return
	fi
	local graph=() events=() f
	for f in $GRAPH_FUNCS; do graph+=(-g "$f"); done
	for f in $TRACE_EVENTS; do events+=(-e "$f"); done
	trace-cmd record --file-version 7 --compression zstd -o "$REC/trace.dat" -b 20000 \
		-p function_graph --max-graph-depth "$GRAPH_DEPTH" "${graph[@]}" \
		-e sched:sched_switch -e sched:sched_wakeup -e sched:sched_waking -e block "${events[@]}" -T \
		> "$REC/trace-cmd.log" 2>&1 &
	TRACECMD_PID=$!
	local i  # recording once the tracer is set and on (its "Hit Ctrl^C" is buffered until it exits)
	for i in $(seq 300); do
		[ "$(cat /sys/kernel/tracing/current_tracer)" = function_graph ] &&
			[ "$(cat /sys/kernel/tracing/tracing_on)" = 1 ] && break
		sleep 1
	done
	sleep 3
	echo "lab: recording since $(($(date +%s) - t0)) s after the start"
}

# FTRACE_WITH=tracefs: the same ftrace capture made through tracefs' own files (no trace-cmd), read back as the
# `trace` text file (trace.txt): what a user without trace-cmd has.
tracefs_start() {
	local t=/sys/kernel/tracing f
	echo 0 > $t/tracing_on
	echo 16384 > $t/buffer_size_kb
	echo > $t/trace
	: > $t/set_graph_function
	for f in $GRAPH_FUNCS; do echo "$f" >> $t/set_graph_function; done
	echo "$GRAPH_DEPTH" > $t/max_graph_depth
	for f in sched/sched_switch sched/sched_wakeup sched/sched_waking block $TRACE_EVENTS; do
		echo 1 > "$t/events/${f/://}/enable"
	done
	echo 1 > $t/options/stacktrace
	# each line with its time and task, as trace-cmd report prints them (the default has neither on an event's line)
	echo 1 > $t/options/funcgraph-abstime
	echo 1 > $t/options/funcgraph-proc
	echo function_graph > $t/current_tracer
	echo 1 > $t/tracing_on
}

tracefs_stop() {
	local t=/sys/kernel/tracing
	echo 0 > $t/tracing_on
	cat $t/trace > "$REC/trace.txt"
	echo nop > $t/current_tracer
}

record_stop() {
	if [ "${FTRACE_WITH:-trace-cmd}" = tracefs ]; then
		tracefs_stop
	else
		stop_pid "$TRACECMD_PID" trace-cmd 1200  # it merges its per-CPU files and compresses them
	fi
	stop_pid "$PERF_PID" perf
	stop_pid "$BLKTRACE_PID" blktrace
	local pid
	for pid in "${REC_PIDS[@]}"; do stop_pid "$pid" bcc; done
}

stop_pid() {  # stop_pid PID WHAT [SECONDS]: SIGINT, then SECONDS (300) to write out and exit; else SIGKILL (logged)
	local pid=$1 what=$2 limit=${3:-300} i
	kill -INT "$pid"
	for i in $(seq "$limit"); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
	if kill -0 "$pid" 2>/dev/null; then
		echo "lab: $what ($pid) did not stop after SIGINT; killed" >&2
		kill -KILL "$pid"
	fi
	wait "$pid"
	echo "lab: $(date +%T) $what stopped" >&2
}

record_collect() {
	perf script -i "$REC/perf.data" > "$REC/perf.script.txt" 2> "$REC/perf-script.log"
	rm -f "$REC/perf.data"
	cp -r "$REC"/. "$OUT/"
}
