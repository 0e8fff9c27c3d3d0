-- One prepared transaction or replication slot named on the command line (explicit actions).
SELECT 'prepared_xact' AS kind, p.gid AS name, p.database, p.owner AS "user"
FROM pg_prepared_xacts p
WHERE p.gid = %(name)s AND %(kind)s = 'prepared_xact'
UNION ALL
SELECT 'replication_slot', s.slot_name::text, s.database::text, NULL
FROM pg_replication_slots s
WHERE s.slot_name = %(name)s AND %(kind)s = 'replication_slot'
