-- What the open transactions hold (pg.txn_detail): one read for every backend whose
-- transaction is at least min_age seconds old, not one per pid. Two kinds of rows, no join
-- between the two function scans (the planner would loop over one for each row of the other):
-- one row per such backend (lock columns NULL) with its statement text, for the daemon's
-- memory of what each transaction ran; then its relation (and advisory/tuple) locks grouped
-- by relation and mode, relations of this database named schema.table (another database's
-- are an oid), indexes and catalogs left out. Bounded: LIMIT rows, backends first.
WITH a AS MATERIALIZED (
  SELECT s.pid, s.backend_start, s.xact_start, left(s.query, 2048) AS query
  FROM pg_stat_activity s
  WHERE s.xact_start <= now() - make_interval(secs => %(min_age)s)
    AND s.pid <> pg_backend_pid()
    AND s.backend_type = 'client backend'
    AND (%(database)s::text IS NULL OR s.datname = %(database)s::text)
)
SELECT * FROM (
  SELECT 0 AS kind, a.pid, a.backend_start, a.xact_start, a.query,
         NULL::text AS locktype, NULL::text AS relation, NULL::text AS relkind,
         NULL::text AS mode, NULL::boolean AS granted, 0::bigint AS locks
  FROM a
  UNION ALL
  SELECT 1, l.pid, NULL, NULL, NULL,
         l.locktype,
         CASE WHEN c.oid IS NOT NULL THEN n.nspname || '.' || c.relname
              WHEN l.relation IS NOT NULL THEN 'oid ' || l.relation::text END,
         c.relkind::text,
         l.mode,
         l.granted,
         count(*)
  FROM pg_locks l
  LEFT JOIN pg_class c ON c.oid = l.relation
       AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
  LEFT JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE l.pid IN (SELECT a.pid FROM a)
    AND l.locktype IN ('relation', 'tuple', 'advisory')
    AND coalesce(c.relkind::text, '') NOT IN ('i', 'I')
    AND NOT (c.oid IS NOT NULL AND n.nspname IN ('pg_catalog', 'information_schema'))
  GROUP BY l.pid, l.locktype, 7, c.relkind, l.mode, l.granted
) x
ORDER BY x.kind, x.xact_start, x.pid, x.granted DESC, x.relation, x.mode
LIMIT %(limit)s
