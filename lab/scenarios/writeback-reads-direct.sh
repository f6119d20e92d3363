# Writeback against reads, the writer direct: random readers' latency beside a direct writer.
#
# See lab/shared-steps/writeback-reads.sh (XFS, an 8 MB/s disk, mq-deadline, fio 4 random direct readers, a 64
# MiB dd from the 3rd second). Truth: fio's own read latencies (workload/fio.json and its clat log) and dd's time;
# compare with writeback-reads-buffered.
WRITE_MODE=direct
# shellcheck source=lab/shared-steps/writeback-reads.sh
source "$(dirname "${BASH_SOURCE[0]}")/../shared-steps/writeback-reads.sh"
