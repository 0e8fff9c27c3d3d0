-- Normalised statements that lock rows or delete, most called first, text cut to 4 kB.
-- {view} is the extension's schema-qualified view, quoted from pg_extension.
SELECT d.datname AS database, left(s.query, 4096) AS query, sum(s.calls)::bigint AS calls
FROM {view} AS s
LEFT JOIN pg_database AS d ON d.oid = s.dbid
WHERE s.query ILIKE ANY(%(patterns)s)
GROUP BY d.datname, left(s.query, 4096)
ORDER BY calls DESC
LIMIT %(limit)s
