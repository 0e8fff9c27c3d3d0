-- Delayed::Job jobs failed for good in the last %(horizon)s seconds, newest %(window)s by id.
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.failed_at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT coalesce(left(queue, 255), '(none)') AS queue, failed_at,
             extract(epoch FROM (now() AT TIME ZONE 'UTC') - failed_at) AS age,
             split_part(substr(last_error, 1, 400), chr(10), 1) AS head,
             -- the line after the first "job_class:" (ActiveJob's wrapper), else after
             -- "!ruby/object:", cut by byte search; the regex then reads one short line (over
             -- the first 2 kB of each handler it had cost ~14 us a row)
             left(coalesce(substring(split_part(split_part(handler, 'job_class:', 2), chr(10), 1)
                                     FROM '^ *([A-Za-z0-9_:]+)'),
                           substring(split_part(split_part(handler, '!ruby/object:', 2), chr(10), 1)
                                     FROM '^([A-Za-z0-9_:]+)')),
                  255) AS job_class
      -- the newest %(window)s rows by id, a backward primary-key scan whatever the statistics
      FROM (SELECT * FROM {table} ORDER BY id DESC LIMIT %(window)s) w
      WHERE failed_at >= (now() AT TIME ZONE 'UTC') - make_interval(secs => %(horizon)s)
      -- the newest %(text_rows)s failures of that window (the order is the scan's: no sort);
      -- only they are projected, their last_error and handler read
      ORDER BY w.id DESC LIMIT %(text_rows)s) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
