-- The table's id range (both ends of the primary key: two index probes, with or without
-- statistics). The per-table queries then read a constant id range of at most %(window)s ids:
-- a range between two constants is an index range scan even before ANALYZE.
SELECT min(id) AS lo, max(id) AS hi FROM {table}
