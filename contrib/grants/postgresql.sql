-- dbwatch on PostgreSQL (10+): the least privileges. Run as a superuser; pick your password.
-- Verified on PostgreSQL 15 by tests/live/test_terminate_live.py::test_pg_least_privileges_suffice
-- and tests/live/test_scope_live.py (a role made with exactly this file).

-- Monitoring (dbwatch audit / watch): pg_monitor lets it see every session's query,
-- timings, xact_start/backend_start and the replication views. Without it other users'
-- sessions show "<insufficient privilege>" and dbwatch reports DW001.
CREATE ROLE dbwatch LOGIN PASSWORD 'change-me';
GRANT pg_monitor TO dbwatch;

-- Queue tables (QU001-QU004): run in each application database (\c app). pg_monitor does
-- not include reading tables; without these dbwatch reports DW001 with the exact GRANT.
GRANT USAGE ON SCHEMA public TO dbwatch;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO dbwatch;
-- and for tables created later by the application's migrations (run as the owner role):
-- ALTER DEFAULT PRIVILEGES FOR ROLE app IN SCHEMA public GRANT SELECT ON TABLES TO dbwatch;

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
