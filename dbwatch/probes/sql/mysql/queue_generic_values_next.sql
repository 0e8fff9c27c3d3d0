-- Generic queue table: the next distinct value of its status column after %(after)s, read by a
-- loose index scan driven by the caller: MIN over a range of the index that leads with the
-- column is one index dive ("Select tables optimized away") whatever the statistics; nothing
-- else in the WHERE, or the optimisation is lost. A GROUP BY ("Using index for group-by") is
-- chosen only once the index has statistics: before, it read the whole index (700 ms at 1 M
-- rows); a recursive CTE took > 5 s on MariaDB 10.11. The first value: queue_generic_values_first.
SELECT LEFT(CAST(MIN(t.{status}) AS CHAR(64)), 64) AS value, MIN(t.{status}) AS raw
FROM {table} t
WHERE t.{status} > %(after)s
