-- Deadlock counters per database since the statistics were reset (instance-wide view).
-- Every database: the daemon shares this read between the targets of one server, and each
-- target's check keeps its own database (snapshot.scope). Bounded by LIMIT.
SELECT d.datname AS database,
       d.deadlocks,
       d.stats_reset
FROM pg_stat_database d
WHERE d.datname IS NOT NULL
ORDER BY d.datname
LIMIT %(limit)s
