-- dbwatch on PostgreSQL (10+): the least privileges. Run as a superuser; pick your password.
-- Verified on PostgreSQL 15 by tests/live/test_terminate_live.py::test_pg_least_privileges_suffice.

-- Monitoring (dbwatch audit / watch): pg_monitor lets it see every session's query,
-- timings, xact_start/backend_start and the replication views. Without it other users'
-- sessions show "<insufficient privilege>" and dbwatch reports DW001.
CREATE ROLE dbwatch LOGIN PASSWORD 'change-me';
GRANT pg_monitor TO dbwatch;

-- Terminating (dbwatch terminate --execute; [terminate] with dry_run = false):
-- pg_signal_backend may pg_cancel_backend / pg_terminate_backend any backend that is not a
-- superuser's (dbwatch skips superusers by default anyway). Grant it only where dbwatch may act;
-- a separate login role keeps monitoring-only deployments unable to kill:
--   CREATE ROLE dbwatch_terminate LOGIN PASSWORD 'change-me' IN ROLE pg_monitor, pg_signal_backend;
GRANT pg_signal_backend TO dbwatch;

-- Explicit-only actions (never run by the daemon, never without the flag):
--   --rollback-prepared GID  ROLLBACK PREPARED needs the prepared transaction's owner or a
--                            superuser, connected to its database.
--   --drop-slot NAME         pg_drop_replication_slot needs the REPLICATION attribute
--                            (ALTER ROLE dbwatch REPLICATION;) or a superuser.
-- Both are better run by a person with the statement dbwatch prints.

-- Sessions dbwatch opens are read-only (default_transaction_read_only = on); the signal
-- functions and pg_drop_replication_slot work in a read-only session.
