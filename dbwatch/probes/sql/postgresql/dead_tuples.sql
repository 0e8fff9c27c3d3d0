-- Tables with dead tuples in the current database, for PG202. One statement, no per-table
-- queries: queue-like names first (known names, or job/queue as a word of the name), then by
-- n_dead_tup; bounded by LIMIT. Reads pg_class + pg_stat_get_*() rather than
-- pg_stat_user_tables: that view groups (for idx_scan) and so computes every counter of
-- every table before the LIMIT; here only the dead-tuple counter is read for all tables.
-- Also whether autovacuum may run on the table: the server's autovacuum and the table's
-- autovacuum_enabled reloption (PG202 names either being off).
-- c.oid >= 16384 (FirstNormalObjectId, src/include/access/transam.h): every relation made
-- after initdb has an OID at or above it (the OID counter skips below it on wraparound), so
-- this skips the ~400 catalogs of even an empty database by the OID index instead of
-- reading their counters each cycle (the name filters below stay, for what initdb made).
WITH top AS (
  SELECT c.oid AS relid, n.nspname AS schemaname, c.relname, c.reloptions,
         pg_stat_get_dead_tuples(c.oid) AS n_dead_tup,
         (c.relname = ANY(%(queue_names)s::text[]) OR c.relname ~ %(queue_pattern)s) AS queue_named
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'm', 'p') AND c.oid >= 16384
    AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND n.nspname !~ '^pg_toast'
    AND pg_stat_get_dead_tuples(c.oid) >= %(min_dead)s
  ORDER BY (c.relname = ANY(%(queue_names)s::text[]) OR c.relname ~ %(queue_pattern)s) DESC,
           pg_stat_get_dead_tuples(c.oid) DESC
  LIMIT %(limit)s
)
SELECT current_database() AS database,
       top.schemaname AS schema,
       top.relname AS "table",
       pg_stat_get_live_tuples(top.relid) AS n_live_tup,
       top.n_dead_tup,
       pg_stat_get_tuples_updated(top.relid) AS n_tup_upd,
       pg_stat_get_tuples_deleted(top.relid) AS n_tup_del,
       pg_stat_get_last_vacuum_time(top.relid) AS last_vacuum,
       pg_stat_get_last_autovacuum_time(top.relid) AS last_autovacuum,
       pg_stat_get_vacuum_count(top.relid) AS vacuum_count,
       pg_stat_get_autovacuum_count(top.relid) AS autovacuum_count,
       extract(epoch FROM now() - greatest(pg_stat_get_last_vacuum_time(top.relid),
                                           pg_stat_get_last_autovacuum_time(top.relid)))::float8
           AS vacuum_seconds_ago,
       current_setting('autovacuum') AS server_autovacuum,
       (SELECT o.option_value FROM pg_options_to_table(top.reloptions) o
        WHERE o.option_name = 'autovacuum_enabled') AS table_autovacuum_enabled,
       top.queue_named
       OR (SELECT count(*) FROM pg_attribute a
           WHERE a.attrelid = top.relid AND NOT a.attisdropped
             AND a.attname IN ('queue', 'payload', 'reserved_at', 'available_at')) = 4
           AS queue
FROM top
ORDER BY top.n_dead_tup DESC
