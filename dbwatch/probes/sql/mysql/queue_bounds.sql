-- The table's id range (both ends of the primary key: two index dives). The per-table queries
-- then read a constant id range of at most %(window)s ids: MariaDB does not use a subquery's
-- value for a range scan, and reading ids in order would walk the wide clustered rows.
SELECT MIN(id) AS lo, MAX(id) AS hi FROM {table}
