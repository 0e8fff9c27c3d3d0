-- Whether the table holds more rows than the newest %(window)s by key (the newest-window kinds,
-- when the catalog has no row estimate, e.g. never analysed): one backward read of the primary
-- key that stops one row past the window.
SELECT EXISTS (SELECT 1 FROM {table} ORDER BY id DESC OFFSET %(window)s) AS beyond
