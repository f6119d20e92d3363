# Shared by iosched-starve and xfs-metadata: a 4-deep virtio disk at 20 IOPS (their DATA_* settings) and mq-deadline
# told to prefer reads for ever, with room in its queue for the whole read flood (its default nr_requests, twice the
# device's 4, makes the reads wait for a tag before the scheduler, and the writes beside them: no starvation there).
# The settings as the kernel took them are kept in workload/iosched.txt.
starve_writes() {
	echo mq-deadline > /sys/block/vdb/queue/scheduler
	echo 1000000 > /sys/block/vdb/queue/iosched/writes_starved
	echo 60000 > /sys/block/vdb/queue/iosched/write_expire
	echo 256 > /sys/block/vdb/queue/nr_requests
	grep . /sys/block/vdb/queue/iosched/* /sys/block/vdb/queue/nr_requests > "$WORK/iosched.txt"
}
