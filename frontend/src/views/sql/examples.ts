// Example questions for the SQL console: each a SELECT over the documented views (GET /api/sql/views).
export const EXAMPLES: { title: string; sql: string }[] = [
  {
    title: 'Waits longer than 10 ms on xfs_buf_lock, by pid',
    sql: `SELECT pid, comm, count(*) AS waits, sum(duration_ns) AS total_ns, max(duration_ns) AS longest_ns
FROM waits
WHERE lock LIKE 'xfs_buf_lock%' AND duration_ns > 10000000
GROUP BY pid, comm
ORDER BY total_ns DESC`,
  },
  {
    title: 'Requests by I2D bucket per process',
    sql: `SELECT comm, pid,
  CASE WHEN i2d_ns < 1000000 THEN '< 1 ms'
       WHEN i2d_ns < 10000000 THEN '1-10 ms'
       WHEN i2d_ns < 100000000 THEN '10-100 ms'
       ELSE '>= 100 ms' END AS i2d_bucket,
  count(*) AS requests, max(i2d_ns) AS longest_i2d_ns
FROM requests
WHERE i2d_ns IS NOT NULL
GROUP BY ALL
ORDER BY comm, pid, min(i2d_ns)`,
  },
  {
    title: 'Stalls over time (start, duration)',
    sql: `SELECT start_ns, duration_ns, comm, pid, lock
FROM waits
WHERE NOT idle
ORDER BY start_ns`,
  },
  {
    title: 'Frames holding the most wait time',
    sql: `SELECT s.frame, count(DISTINCT (w.source_id, w.line)) AS waits, sum(w.duration_ns) AS total_ns
FROM stacks s JOIN waits w ON w.source_id = s.source_id AND w.line = s.wait_line
WHERE s.side = 'task' AND NOT w.idle
GROUP BY s.frame
ORDER BY total_ns DESC
LIMIT 20`,
  },
  {
    title: 'Functions by total time',
    sql: `SELECT func, count(*) AS calls, sum(duration_ns) AS total_ns, max(duration_ns) AS longest_ns
FROM calls
GROUP BY func
ORDER BY total_ns DESC
LIMIT 20`,
  },
];
