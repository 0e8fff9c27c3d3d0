-- Has this database's catalog changed (DDL) since the last look? The cumulative statistics
-- counters of the catalog tables the cached reads come from: any CREATE/ALTER/DROP of a table,
-- column, index, schema or extension inserts, updates or deletes rows of them (a column rename
-- or drop touches pg_attribute only). O(1): no catalog scan. A statistics reset changes the
-- marker too (one extra re-read); with track_counts off it never changes, so the caller
-- does not trust it then.
SELECT current_setting('track_counts') AS track_counts,
       string_agg((pg_stat_get_tuples_inserted(t.oid) + pg_stat_get_tuples_updated(t.oid)
                   + pg_stat_get_tuples_deleted(t.oid))::text, ',' ORDER BY t.oid) AS marker
FROM (VALUES ('pg_catalog.pg_class'::regclass), ('pg_catalog.pg_attribute'::regclass),
             ('pg_catalog.pg_index'::regclass), ('pg_catalog.pg_namespace'::regclass),
             ('pg_catalog.pg_extension'::regclass), ('pg_catalog.pg_type'::regclass)) AS t(oid)
