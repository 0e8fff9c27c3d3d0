-- Generic queue table: rows per queue and state over the model's windows; the oldest waiting
-- job's age from its runnable-at (else created-at, else last change), a claim's from its heartbeat / claim time.
SELECT r.queue, r.state, COUNT(*) AS n,
       CAST(MAX(r.now_e - CASE WHEN r.state IN ('waiting', 'scheduled', 'unmapped')
                                 THEN COALESCE(r.run_e, r.created_e, r.upd_e)
                               WHEN r.state = 'running' THEN COALESCE(r.claim_e, r.hb_e, r.upd_e) END)
            AS SIGNED) AS oldest_seconds,
       SUM(CASE WHEN r.att > 1 THEN 1 ELSE 0 END) AS repeated, MAX(r.att) AS max_attempts
FROM ({rows}) r
GROUP BY 1, 2
ORDER BY 1, 2
LIMIT %(groups)s
