-- Generic queue table: the distinct values of its status column, from the model's windows
-- (no index leads with the column), most frequent first.
SELECT w.status AS value, COUNT(*) AS n
FROM ((SELECT {cols} FROM {table} ORDER BY {order} LIMIT %(window)s)
      UNION ALL
      (SELECT {cols} FROM {table}
       WHERE {order} > (SELECT f.o FROM (SELECT {order} AS o FROM {table}
                                         ORDER BY {order} LIMIT %(window)s) f
                        ORDER BY f.o DESC LIMIT 1)
       ORDER BY {order_desc} LIMIT {second})) w
WHERE w.status IS NOT NULL
GROUP BY 1
ORDER BY 2 DESC
LIMIT %(values)s
