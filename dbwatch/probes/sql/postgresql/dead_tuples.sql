-- Tables with dead tuples in the current database, for PG202. One statement, no per-table
-- queries: queue-like names first (known names, or job/queue as a word of the name), then by n_dead_tup; bounded by LIMIT.
WITH top AS (
  SELECT t.relid, t.schemaname, t.relname, t.n_live_tup, t.n_dead_tup,
         t.n_tup_upd, t.n_tup_del, t.n_tup_hot_upd,
         t.last_vacuum, t.last_autovacuum, t.vacuum_count, t.autovacuum_count,
         (t.relname = ANY(%(queue_names)s) OR t.relname ~ %(queue_pattern)s) AS queue_named
  FROM pg_stat_user_tables t
  WHERE t.n_dead_tup >= %(min_dead)s
  ORDER BY (t.relname = ANY(%(queue_names)s) OR t.relname ~ %(queue_pattern)s) DESC,
           t.n_dead_tup DESC
  LIMIT %(limit)s
)
SELECT current_database() AS database,
       top.schemaname AS schema,
       top.relname AS "table",
       top.n_live_tup, top.n_dead_tup, top.n_tup_upd, top.n_tup_del, top.n_tup_hot_upd,
       top.last_vacuum, top.last_autovacuum, top.vacuum_count, top.autovacuum_count,
       extract(epoch FROM now() - greatest(top.last_vacuum, top.last_autovacuum))::float8
           AS vacuum_seconds_ago,
       top.queue_named
       OR (SELECT count(*) FROM pg_attribute a
           WHERE a.attrelid = top.relid AND NOT a.attisdropped
             AND a.attname IN ('queue', 'payload', 'reserved_at', 'available_at')) = 4
           AS queue
FROM top
ORDER BY top.n_dead_tup DESC
