-- Replication slots holding an xmin (all databases) or a catalog_xmin (catalogs only).
-- An inactive slot keeps both; inactive_since (17+) gives its wall-clock age. Oldest first; bounded.
SELECT s.slot_name,
       s.slot_type,
       s.plugin,
       s.database,
       s.active,
       s.active_pid,
       s.temporary,
       s.xmin::text AS xmin,
       s.catalog_xmin::text AS catalog_xmin,
       age(s.xmin) AS xmin_age,
       age(s.catalog_xmin) AS catalog_xmin_age,
       s.wal_status,
       s.inactive_since,
       extract(epoch FROM now() - s.inactive_since)::float8 AS inactive_seconds
FROM pg_replication_slots s
WHERE s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL
ORDER BY greatest(age(s.xmin), age(s.catalog_xmin)) DESC
LIMIT %(limit)s
