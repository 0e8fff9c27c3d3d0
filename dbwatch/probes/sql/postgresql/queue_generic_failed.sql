-- Generic queue table: failed rows in the model's windows by queue, error head and job type;
-- when it failed from its failed-at, else finished-at, last update or claim time; a row with
-- none of them is counted in every window (untimed, said in evidence); texts by the row's key
-- where the table has one (join).
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age IS NULL OR f.age <= 3600) AS n_1h,
       count(*) FILTER (WHERE f.age IS NULL OR f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age IS NULL OR f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age IS NULL OR f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age IS NULL OR f.age <= 604800) AS n_7d,
       to_timestamp(max(f.t))::text AS latest, min(f.age)::bigint AS latest_seconds_ago,
       count(*) FILTER (WHERE f.age IS NULL) AS untimed
FROM (SELECT r.queue, {err} AS head, {kind} AS job_class,
             coalesce(r.fail_e, r.fin_e, r.upd_e, r.claim_e) AS t,
             r.now_e - coalesce(r.fail_e, r.fin_e, r.upd_e, r.claim_e) AS age
      FROM ({rows}) r {join}
      WHERE r.state = 'failed') f
WHERE f.age IS NULL OR f.age <= %(horizon)s
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
