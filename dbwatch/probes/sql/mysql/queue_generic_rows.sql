-- The one queue model's rows (generic tables, by roles): two bounded windows of the table, the
-- oldest and the newest %(window)s by its indexed order column (the newest past the oldest;
-- without an order column: its first rows),
-- each row's state from its roles: a status value mapped by meaning (the bound lists), else
-- its markers (finished / failed at, attempts at max, claimed at/by), else waiting/scheduled.
-- The role expressions (cols) are composed from the catalog's names and types.
SELECT w.*, UNIX_TIMESTAMP() AS now_e,
       CASE
         WHEN w.status IN %(done)s OR (w.status IS NULL AND w.fin) THEN 'done'
         WHEN w.status IN %(failed)s
              OR (w.status IS NULL AND (w.fail_e IS NOT NULL
                                        OR (w.att >= w.max_att AND NOT w.claimed))) THEN 'failed'
         WHEN w.status IN %(running)s
              OR (w.claimed AND (w.status IS NULL
                                 OR (%(claim_decides)s AND w.status IN %(waiting)s))) THEN 'running'
         WHEN w.status IN %(waiting)s OR w.status IS NULL THEN
           CASE WHEN COALESCE(w.run_e, w.created_e) > UNIX_TIMESTAMP() THEN 'scheduled'
                ELSE 'waiting' END
         ELSE 'unmapped'
       END AS state
FROM ((SELECT {cols} FROM {table} ORDER BY {order} LIMIT %(window)s)
      UNION ALL
      (SELECT {cols} FROM {table}
       WHERE {order} > (SELECT f.o FROM (SELECT {order} AS o FROM {table}
                                         ORDER BY {order} LIMIT %(window)s) f
                        ORDER BY f.o DESC LIMIT 1)
       ORDER BY {order_desc} LIMIT {second})) w
