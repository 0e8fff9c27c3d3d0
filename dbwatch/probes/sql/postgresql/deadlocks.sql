-- Deadlock counters per database since the statistics were reset (instance-wide view).
SELECT d.datname AS database,
       d.deadlocks,
       d.stats_reset
FROM pg_stat_database d
WHERE d.datname IS NOT NULL
ORDER BY d.datname
LIMIT %(limit)s
