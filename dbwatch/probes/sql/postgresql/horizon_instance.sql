-- Instance facts for the horizon: recovery, feedback setting, and (on a standby) how its WAL
-- receiver names itself to the primary, so the primary's pg_stat_replication row can be matched.
SELECT pg_is_in_recovery() AS in_recovery,
       current_setting('hot_standby_feedback') AS hot_standby_feedback,
       current_setting('cluster_name') AS cluster_name,
       host(inet_server_addr()) AS server_addr,
       current_database() AS database,
       (SELECT w.slot_name FROM pg_stat_wal_receiver w LIMIT 1) AS receiver_slot,
       (SELECT w.conninfo FROM pg_stat_wal_receiver w LIMIT 1) AS receiver_conninfo
