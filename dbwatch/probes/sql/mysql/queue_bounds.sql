-- The id range the per-table queries read: the oldest %(window)s ids and the newest
-- %(failed_window)s ids (primary-key reads only). MariaDB does not use a subquery's value for
-- a range scan, so the bounds are fetched first and bound as constants.
SELECT (SELECT MAX(a.id) FROM (SELECT id FROM {table} ORDER BY id LIMIT %(window)s) a) AS max_id,
       (SELECT MIN(b.id) FROM (SELECT id FROM {table} ORDER BY id DESC LIMIT %(failed_window)s) b)
         AS min_id
