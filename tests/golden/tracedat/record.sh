#!/bin/bash
# A capture recorded through tracefs by hand (trace-cmd record cannot write /proc/sys/kernel/ftrace_enabled in this
# sandbox; function_graph is not available), extracted with trace-cmd extract; the tracing state is restored.
T=/sys/kernel/tracing
EVENTS="sched/sched_switch sched/sched_wakeup sched/sched_waking block/block_rq_insert block/block_rq_issue block/block_rq_complete"
restore() {
  echo 0 > $T/tracing_on
  for e in $EVENTS; do echo 0 > $T/events/$e/enable; done
  echo 0 > $T/options/stacktrace
  echo > $T/trace
  echo 1 > $T/tracing_on
}
trap restore EXIT
echo 0 > $T/tracing_on
echo > $T/trace
for e in $EVENTS; do echo 1 > $T/events/$e/enable; done
echo 1 > $T/options/stacktrace
echo 1 > $T/tracing_on
echo "stallscope: start" > $T/trace_marker
dd if=/dev/zero of=/tmp/rec-io.bin bs=64k count=8 conv=fsync status=none
echo "stallscope: end" > $T/trace_marker
echo 0 > $T/tracing_on
rm -f /tmp/rec-io.bin
cd /tmp && trace-cmd extract -o "$1" > /dev/null 2>&1
