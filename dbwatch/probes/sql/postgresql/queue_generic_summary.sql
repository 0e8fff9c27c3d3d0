-- Generic queue table: rows per queue and state over the model's windows; the oldest waiting
-- job's age from its runnable-at (else created-at, else last change), a claim's from its heartbeat / claim time.
SELECT r.queue, r.state, count(*) AS n,
       max(r.now_e - CASE WHEN r.state IN ('waiting', 'scheduled', 'unmapped')
                            THEN coalesce(r.run_e, r.created_e, r.upd_e)
                          WHEN r.state = 'running' THEN coalesce(r.claim_e, r.hb_e, r.upd_e) END)::bigint
         AS oldest_seconds,
       count(*) FILTER (WHERE r.att > 1) AS repeated, max(r.att) AS max_attempts
FROM ({rows}) r
GROUP BY 1, 2
ORDER BY 1, 2
LIMIT %(groups)s
