-- MariaDB: KILL QUERY only if the thread has started no statement since the identity was
-- established (same QUERY_ID, COMMAND and USER), checked and killed in one server-side
-- statement. Every parameter is an integer or a driver-escaped literal. Returns matched 0|1.
BEGIN NOT ATOMIC
  DECLARE n INT DEFAULT 0;
  SELECT COUNT(*) INTO n FROM information_schema.PROCESSLIST
   WHERE ID = %(thread_id)s AND QUERY_ID = %(query_id)s
     AND COMMAND = %(command)s AND USER = %(user)s;
  IF n = 1 THEN
    KILL QUERY %(thread_id)s;
  END IF;
  SELECT n AS matched;
END
