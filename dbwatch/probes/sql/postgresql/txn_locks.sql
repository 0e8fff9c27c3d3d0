-- What the open transactions hold (pg.txn_detail): one read for every backend whose
-- transaction is at least min_age seconds old, not one per pid. Relation locks (and
-- advisory/tuple ones) grouped by relation and mode; relations of this database named
-- schema.table (another database's are only an oid there); indexes left out (their table
-- is listed). A backend holding none of those still gets one row (lock columns NULL): its
-- statement text feeds the daemon's memory of what each transaction ran. Bounded: LIMIT
-- rows, oldest transactions first.
SELECT a.pid,
       a.backend_start,
       a.xact_start,
       left(a.query, 2048) AS query,
       l.locktype,
       CASE WHEN c.oid IS NOT NULL THEN n.nspname || '.' || c.relname
            WHEN l.relation IS NOT NULL THEN 'oid ' || l.relation::text END AS relation,
       c.relkind::text AS relkind,
       l.mode,
       l.granted,
       count(l.pid) AS locks
FROM pg_stat_activity a
LEFT JOIN (pg_locks l
     LEFT JOIN pg_class c ON c.oid = l.relation
          AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
     LEFT JOIN pg_namespace n ON n.oid = c.relnamespace)
  ON l.pid = a.pid
 AND l.locktype IN ('relation', 'tuple', 'advisory')
 AND coalesce(c.relkind::text, '') NOT IN ('i', 'I')
 AND NOT (c.oid IS NOT NULL AND n.nspname IN ('pg_catalog', 'information_schema'))
WHERE a.xact_start <= now() - make_interval(secs => %(min_age)s)
  AND a.pid <> pg_backend_pid()
  AND a.backend_type = 'client backend'
  AND (%(database)s::text IS NULL OR a.datname = %(database)s::text)
GROUP BY a.pid, a.backend_start, a.xact_start, left(a.query, 2048), l.locktype, 6,
         c.relkind, l.mode, l.granted
ORDER BY a.xact_start, a.pid, l.granted DESC, 6, l.mode
LIMIT %(limit)s
