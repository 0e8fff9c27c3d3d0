-- Generic queue table: failed rows in the model's windows by queue, error head and job type;
-- when it failed from its failed-at, else finished-at, last update or claim time; a row with
-- none of them is counted in every window (untimed, said in evidence); texts by the row's key
-- where the table has one (join).
SELECT f.queue, f.head, f.job_class, COUNT(*) AS n,
       SUM(CASE WHEN f.age IS NULL OR f.age <= 3600 THEN 1 ELSE 0 END) AS n_1h,
       SUM(CASE WHEN f.age IS NULL OR f.age <= 21600 THEN 1 ELSE 0 END) AS n_6h,
       SUM(CASE WHEN f.age IS NULL OR f.age <= 86400 THEN 1 ELSE 0 END) AS n_24h,
       SUM(CASE WHEN f.age IS NULL OR f.age <= 259200 THEN 1 ELSE 0 END) AS n_3d,
       SUM(CASE WHEN f.age IS NULL OR f.age <= 604800 THEN 1 ELSE 0 END) AS n_7d,
       CAST(FROM_UNIXTIME(MAX(f.t)) AS CHAR) AS latest, CAST(MIN(f.age) AS SIGNED) AS latest_seconds_ago,
       SUM(CASE WHEN f.age IS NULL THEN 1 ELSE 0 END) AS untimed
FROM (SELECT r.queue, {err} AS head, {kind} AS job_class,
             COALESCE(r.fail_e, r.fin_e, r.upd_e, r.claim_e) AS t,
             r.now_e - COALESCE(r.fail_e, r.fin_e, r.upd_e, r.claim_e) AS age
      FROM ({rows}) r {join}
      WHERE r.state = 'failed') f
WHERE f.age IS NULL OR f.age <= %(horizon)s
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
