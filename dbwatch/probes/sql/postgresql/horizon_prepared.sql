-- Prepared transactions (two-phase commit): each pins the horizon of its database until
-- COMMIT/ROLLBACK PREPARED, surviving restarts. Oldest first; bounded.
SELECT p.gid,
       p.transaction::text AS xid,
       p.prepared,
       p.owner AS "user",
       p.database,
       age(p.transaction) AS xid_age,
       extract(epoch FROM now() - p.prepared)::float8 AS prepared_seconds
FROM pg_prepared_xacts p
ORDER BY age(p.transaction) DESC
LIMIT %(limit)s
