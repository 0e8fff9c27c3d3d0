-- Generic queue table: claimed (running) rows by queue and age — of the heartbeat where the
-- table has one, else of the claim (else of the last update) — with the row's own timeout and
-- how far past its lease (locked-until) it is, where the table holds them.
SELECT r.queue, CAST(r.now_e - COALESCE(r.hb_e, r.claim_e, r.upd_e) AS SIGNED) AS reserved_seconds,
       COUNT(*) AS n, CAST(r.tmo AS SIGNED) AS expires_after, (r.hb_e IS NOT NULL) AS heartbeat,
       CAST(r.now_e - r.exp_e AS SIGNED) AS lease_overdue
FROM ({rows}) r
WHERE r.state = 'running'
GROUP BY 1, 2, 4, 5, 6
ORDER BY 2 DESC
LIMIT %(groups)s
