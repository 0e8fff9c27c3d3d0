-- One statement re-checks the identity and signals: a recycled pid or a transaction that has
-- just ended matches no row, so nothing is signalled (reported as "gone"). From 14 the
-- terminate waits (bounded) for the backend to exit, so "terminated" means it is gone.
SELECT CASE WHEN %(cancel)s THEN pg_cancel_backend(a.pid)
            ELSE pg_terminate_backend(a.pid, %(wait_ms)s::bigint) END AS signalled
FROM pg_stat_activity a
WHERE a.pid = %(pid)s
  AND a.backend_start = %(backend_start)s
  AND a.xact_start IS NOT DISTINCT FROM %(xact_start)s
