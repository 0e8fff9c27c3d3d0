"""`dbwatch watch`: the daemon (SPEC §7); `--once` runs one full cycle and exits with the audit code."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import find_config_path
from ..errors import UsageError
from ..inputs import check_listen_address, check_state_path
from ..targets.secrets import install_log_filter

if TYPE_CHECKING:  # the daemon is imported when it runs, not to build the parser
    from ..config import StateConfig
    from ..daemon.loop import Daemon
    from ..daemon.state import State
    from ..statereader import StateReader


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="config file (default: $DBWATCH_CONFIG, ./dbwatch.toml)")
    p.add_argument("--state", help="state database (default: $XDG_STATE_HOME/dbwatch/state.db)")
    p.add_argument(
        "--once",
        action="store_true",
        help="one full cycle of every target, deliver alerts, exit with the audit code",
    )
    p.add_argument(
        "--format",
        "-f",
        choices=("none", "nagios"),
        default="none",
        help="--once: also print the result as a Nagios check (status line, findings, perfdata)",
    )
    p.add_argument("--metrics-address", metavar="HOST:PORT", help="serve Prometheus /metrics")
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve the read-only dashboard (/, /deadlocks, /history, /actions) and /metrics; "
        "a bare PORT binds 127.0.0.1; [http] token guards every page but /metrics",
    )
    p.add_argument("--log-format", choices=("text", "json"), help="log lines (default: text)")
    p.add_argument(
        "--flush-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="--once: how long to keep retrying alert delivery (default 20)",
    )
    p.add_argument("--debug", action="store_true", help="log debug messages and show tracebacks")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg (+ exc)."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_text:  # set, and scrubbed, by the ScrubFilter
            doc["exc"] = record.exc_text
        elif record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def setup_logging(fmt: str, debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO, handlers=[handler], force=True
    )
    install_log_filter([handler])  # no password ever reaches the daemon's log
    # dbwatch.daemon.scheduler reports skipped cycles itself, once per episode.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)


def _backoff() -> tuple[float, float]:
    """Retry delays of alert delivery: DBWATCH_ALERT_BACKOFF="first,max" seconds (default 1,60)."""
    raw = os.environ.get("DBWATCH_ALERT_BACKOFF", "1,60")
    try:
        first, cap = (float(x) for x in raw.split(","))
    except ValueError:
        raise UsageError(
            f"DBWATCH_ALERT_BACKOFF={raw!r}: expected two numbers, e.g. 1,60"
        ) from None
    if not 0 < first <= cap:
        raise UsageError(f"DBWATCH_ALERT_BACKOFF={raw!r}: need 0 < first <= max")
    return first, cap


def run(args: argparse.Namespace) -> int:
    from ..daemon.loop import Daemon, load_setup
    from ..daemon.state import State, default_state_path

    # SIGTERM while starting (config, state, metrics): remembered, then a clean exit 0
    early: list[int] = []
    if not args.once:
        signal.signal(signal.SIGTERM, lambda signum, _frame: early.append(signum))
    path = find_config_path(args.config)
    setup = load_setup(path)
    daemon_cfg = setup.config.daemon
    setup_logging(args.log_format or daemon_cfg.log_format, args.debug)
    metrics = args.metrics_address or daemon_cfg.metrics_address
    if metrics:
        check_listen_address("--metrics-address", metrics)
    fleet_cfg = setup.config.state
    if args.state is None and fleet_cfg.url:
        state = State(fleet_cfg.url, retention=daemon_cfg.retention, schema=fleet_cfg.schema)
    else:
        state_path = args.state or daemon_cfg.state or str(default_state_path())
        state = State(check_state_path(state_path), retention=daemon_cfg.retention)
    try:
        daemon = Daemon(
            path,
            state,
            setup,
            metrics_address=args.metrics_address or daemon_cfg.metrics_address,
            flush_budget=max(0.0, args.flush_timeout),
            backoff=_backoff(),
        )
        if args.once:
            code = daemon.run_once()
            if args.format == "nagios":
                from ..nagios import render_nagios

                done, missing = daemon.once_result
                print(render_nagios(done, daemon.setup.catalogue, daemon.setup.config, missing))
            return code
        if state.dialect == "postgresql":
            daemon.join_fleet(fleet_cfg.lease_ttl)
        daemon.stop_requested = bool(early)
        http = args.http or setup.config.http.address
        server = _start_dashboard(http, state, daemon, fleet_cfg) if http else None
        try:
            return daemon.run_forever()
        finally:
            if server is not None:
                server.shutdown()
                server.server_close()
    finally:
        state.close()


def _start_dashboard(
    address: str, state: State, daemon: Daemon, fleet_cfg: StateConfig
) -> ThreadingHTTPServer:
    """The dashboard reads the state through its own connection: SQLite read-only per request,
    or one State of its own on a PostgreSQL state (never the daemon's)."""
    from ..daemon.state import State
    from ..statereader import StateReader

    reader: Callable[[], StateReader] | None = None
    if state.dialect != "sqlite" and fleet_cfg.url is not None:
        own = StateReader.over(State(fleet_cfg.url, schema=fleet_cfg.schema))
        reader = lambda: own
    from prometheus_client import CollectorRegistry, generate_latest

    from ..web.server import Dashboard, serve
    from ..web.view import Site

    registry = CollectorRegistry()
    registry.register(daemon.collector)

    def site() -> Site:
        targets = daemon.setup.targets  # re-read per request: SIGHUP swaps the setup
        return Site(
            intervals={n: tc.interval for n, (_, tc) in targets.items()},
            engines={n: spec.engine for n, (spec, _) in targets.items()},
        )

    dash = Dashboard(
        Path(state.path).expanduser(),
        site,
        token=daemon.setup.config.http.token,
        metrics=lambda: bytes(generate_latest(registry)),
        reader=reader,
    )
    try:
        return serve(address, dash)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--http {address}: {exc}") from None
