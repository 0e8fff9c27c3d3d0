-- Generic queue table: the first value of its status column in its index (MIN skips NULLs): one
-- index dive; the next ones by queue_generic_values_next.
SELECT LEFT(CAST(MIN(t.{status}) AS CHAR(64)), 64) AS value, MIN(t.{status}) AS raw
FROM {table} t
