-- Deadlock counters per database since the statistics were reset (instance-wide view).
SELECT d.datname AS database,
       d.deadlocks,
       d.stats_reset
FROM pg_stat_database d
WHERE d.datname IS NOT NULL
  AND (%(database)s::text IS NULL OR d.datname = %(database)s::text)  -- scope: the URL's database
ORDER BY d.datname
LIMIT %(limit)s
