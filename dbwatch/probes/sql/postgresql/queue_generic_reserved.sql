-- Generic queue table: claimed (running) rows by queue and age — of the heartbeat where the
-- table has one, else of the claim (else of the last update) — with the row's own timeout and
-- how far past its lease (locked-until) it is, where the table holds them.
SELECT r.queue, (r.now_e - coalesce(r.hb_e, r.claim_e, r.upd_e))::bigint AS reserved_seconds,
       count(*) AS n, r.tmo::bigint AS expires_after, (r.hb_e IS NOT NULL) AS heartbeat,
       (r.now_e - r.exp_e)::bigint AS lease_overdue
FROM ({rows}) r
WHERE r.state = 'running'
GROUP BY 1, 2, 4, 5, 6
ORDER BY 2 DESC NULLS LAST
LIMIT %(groups)s
