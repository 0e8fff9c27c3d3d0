"""HTTP delivery of the outbox: one worker thread per receiver, timeouts, exponential backoff.

A message leaves the outbox only once the receiver accepted it (2xx) or rejected its content
for good (400/413/422); everything else is retried, in order, across restarts. Delivery is
at least once: every message carries an idempotency key (fingerprint + revision, the
`Idempotency-Key` header and a field of the body) that is the same for every copy of one
content, so a receiver can drop the copies. One receiver is only ever sent to by one worker
at a time (a per-receiver lock that outlives config reloads), so a reload never sends twice.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import replace
from urllib.parse import urlsplit

from ..config import AlertConfig
from ..frozen import mutable
from ..records import AlertMessage, OutboxMessage
from .payloads import build
from .state import AlertState

log = logging.getLogger(__name__)
PERMANENT = (400, 413, 422)  # the payload itself was refused: retrying cannot help


def endpoint(cfg: AlertConfig) -> str:
    if cfg.kind == "alertmanager" and not urlsplit(cfg.url).path.rstrip("/").endswith("/alerts"):
        return cfg.url.rstrip("/") + "/api/v2/alerts"
    return cfg.url


def where(cfg: AlertConfig) -> str:
    """Receiver name and host only: webhook paths and userinfo are secrets (Slack's are)."""
    parts = urlsplit(cfg.url)
    return f"{cfg.name} ({cfg.kind} {parts.scheme}://{parts.hostname or '?'})"


@mutable
class Outcome:
    ok: bool
    permanent: bool = False
    error: str = ""


def idempotency_key(msg: OutboxMessage) -> str:
    """The same for every copy of one message content: fingerprint + revision."""
    return f"{msg.fingerprint}-{msg.rev}"


def send(cfg: AlertConfig, payload: AlertMessage, now: float | None = None) -> Outcome:
    """POST one message. Alertmanager peers each get it, all at once (`_post_all`); the
    cluster deduplicates the notification: delivered when at least one peer accepted it."""
    now = time.time() if now is None else now
    body, headers = build(cfg.kind, cfg.name, payload, now, cfg.secret, cfg.routing_key)
    if cfg.kind != "alertmanager" or len(cfg.peers) == 1:
        return _post(endpoint(cfg), body, headers, cfg.timeout)
    urls = [endpoint(replace(cfg, url=u, urls=())) for u in cfg.peers]
    outcomes = _post_all(urls, body, headers, cfg.timeout)
    for u, o in zip(cfg.peers, outcomes, strict=True):
        log.debug(
            "alertmanager peer %s: %s %s on %s (%s): %s",
            urlsplit(u).netloc,
            payload.idempotency_key,
            payload.rule,
            payload.target,
            payload.subject,
            "accepted" if o.ok else o.error,
        )
    if any(o.ok for o in outcomes):
        for u, o in zip(cfg.peers, outcomes, strict=True):
            if not o.ok:
                log.warning("alertmanager peer %s: %s", urlsplit(u).netloc, o.error)
        return Outcome(True)
    return Outcome(
        False, all(o.permanent for o in outcomes), "; ".join(o.error for o in outcomes)[:300]
    )


def _post_all(
    urls: list[str], body: bytes, headers: dict[str, str], timeout: float
) -> list[Outcome]:
    """POST to every peer at the same time, not one after the other. An Alertmanager cluster
    notifies once only when its peers get an alert at about the same time: the peer that is
    second in the cluster's order waits --cluster.peer-timeout for the first one's
    notification log before it notifies itself. Sent in turn, a peer that is slow to answer
    (up to `timeout`) delayed every peer after it by as much, and a daemon killed between two
    POSTs left the later peers to the next holder of the receiver's lease, seconds later:
    either skew could make two peers notify (docs/fleet.md: at least once)."""
    out: list[Outcome] = [Outcome(False, False, "not sent")] * len(urls)

    def one(i: int) -> None:
        out[i] = _post(urls[i], body, headers, timeout)

    others = [
        threading.Thread(target=one, args=(i,), name="dbwatch-alerts-peer", daemon=True)
        for i in range(1, len(urls))
    ]
    for t in others:
        t.start()
    one(0)
    for i, t in enumerate(others, 1):
        t.join(2 * timeout + 1.0)  # urlopen's timeout bounds each socket wait, not the total
        if t.is_alive():
            out[i] = Outcome(False, False, "no answer in time")
    return out


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Outcome:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read(65536)
            return Outcome(True)
    except urllib.error.HTTPError as exc:
        return Outcome(False, exc.code in PERMANENT, f"HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Outcome(False, False, f"{type(reason).__name__}: {reason}"[:200])


def backoff(attempts: int, base: float, cap: float) -> float:
    return float(min(cap, base * (2 ** max(attempts - 1, 0))))


class Worker(threading.Thread):
    """Delivers one receiver's queue in order; never touches the probing threads."""

    def __init__(
        self,
        cfg: AlertConfig,
        state: AlertState,
        base: float = 1.0,
        cap: float = 60.0,
        stats: dict[str, dict[str, int]] | None = None,
        gate: Callable[[str], bool] | None = None,
        lock: threading.Lock | None = None,
    ) -> None:
        super().__init__(name=f"dbwatch-alerts-{cfg.name}", daemon=True)
        self.gate = gate  # a fleet: deliver only while this daemon holds the receiver's lease
        self.cfg, self.state, self.base, self.cap = cfg, state, base, cap
        self.lock = lock if lock is not None else threading.Lock()  # one sender per receiver
        self.stop_event = threading.Event()
        self.wake_event = threading.Event()
        self.stats = stats if stats is not None else {}
        self._down = False

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                pause = self.pass_once()
            except Exception:  # a bug here must not kill alerting for good
                log.exception("alert delivery to %s failed unexpectedly", where(self.cfg))
                pause = self.cap
            if pause > 0:
                # Backing off: new messages must not make a down endpoint get hammered.
                self.stop_event.wait(pause)
            else:
                self.wake_event.wait(5.0)
                self.wake_event.clear()

    def pass_once(self, deadline: float | None = None) -> float:
        """Send the queue in order until it is empty (0) or a send fails (the backoff).

        The head is re-read under the receiver's lock before every send: another worker
        (the one a reload replaced) may have delivered it meanwhile."""
        while not self.stop_event.is_set():
            if self.gate is not None and not self.gate(self.cfg.name):
                return 0.0
            if deadline is not None and time.time() >= deadline:
                return 0.0
            with self.lock:
                if self.stop_event.is_set():
                    return 0.0
                head = self.state.outbox_head(self.cfg.name, limit=1)
                if not head:
                    return 0.0
                msg = OutboxMessage.of(head[0])
                if not self._deliver(msg):
                    return backoff(msg.attempts + 1, self.base, self.cap)
        return 0.0

    def _deliver(self, msg: OutboxMessage) -> bool:
        payload = replace(msg.payload, idempotency_key=idempotency_key(msg))
        out = send(self.cfg, payload)
        counts = self.stats.setdefault(self.cfg.name, {"sent": 0, "failed": 0, "dropped": 0})
        if out.ok or out.permanent:
            if not self.state.outbox_done(msg.id, msg.rev):
                log.info(
                    "alert %s for %s changed while in flight; sending the new content",
                    msg.fingerprint,
                    where(self.cfg),
                )
            if out.ok:
                counts["sent"] += 1
                if self._down:
                    log.warning("alert receiver %s is reachable again", where(self.cfg))
                self._down = False
            else:
                counts["dropped"] += 1
                log.error(
                    "alert receiver %s refused a %s message for good (%s); dropped",
                    where(self.cfg),
                    msg.event,
                    out.error,
                )
            return True
        counts["failed"] += 1
        delay = backoff(msg.attempts + 1, self.base, self.cap)
        self.state.outbox_failed(msg.id, out.error, time.time() + delay)
        if not self._down or msg.attempts == 0:
            log.warning(
                "alert receiver %s: %s; %d queued, retrying in %.0fs",
                where(self.cfg),
                out.error,
                self.state.outbox_size().get(self.cfg.name, 0),
                delay,
            )
        self._down = True
        return False


class Delivery:
    """The set of workers for the configured receivers; restartable on config reload."""

    def __init__(self, state: AlertState, base: float = 1.0, cap: float = 60.0) -> None:
        self.state, self.base, self.cap = state, base, cap
        self.workers: dict[str, Worker] = {}
        self.stats: dict[str, dict[str, int]] = {}
        self.gate: Callable[[str], bool] | None = None
        self._locks: dict[str, threading.Lock] = {}  # per receiver name, across reloads

    def _lock(self, name: str) -> threading.Lock:
        return self._locks.setdefault(name, threading.Lock())

    def start(self, receivers: Iterable[AlertConfig]) -> None:
        """(Re)start the workers; the old ones are stopped first and a send in flight is
        awaited (bounded by its timeout), so a message is never sent by two workers."""
        cfgs = list(receivers)
        self.stop(timeout=max((w.cfg.timeout for w in self.workers.values()), default=0) + 1)
        for cfg in cfgs:
            w = Worker(
                cfg,
                self.state,
                self.base,
                self.cap,
                self.stats,
                gate=self.gate,
                lock=self._lock(cfg.name),
            )
            self.workers[cfg.name] = w
            w.start()

    def report_orphans(self, receivers: Iterable[AlertConfig]) -> dict[str, int]:
        """Drop what is queued for receivers no longer configured, saying so (log + status)."""
        gone = self.state.drop_receivers(c.name for c in receivers)
        for name, n in sorted(gone.items()):
            log.warning(
                "%d alert messages were queued for receiver %r, which is no longer in the "
                "config: dropped (see `dbwatch status`)",
                n,
                name,
            )
        return gone

    def wake(self) -> None:
        for w in self.workers.values():
            w.wake_event.set()

    def stop(self, timeout: float = 5.0) -> None:
        for w in self.workers.values():
            w.stop_event.set()
            w.wake_event.set()
        end = time.time() + timeout
        for w in self.workers.values():
            w.join(max(0.0, end - time.time()))
        self.workers = {}

    def flush(self, receivers: Iterable[AlertConfig], budget: float) -> int:
        """--once: deliver everything queued, retrying with backoff for at most `budget` seconds.

        Returns the number of messages still queued for the configured receivers.
        """
        cfgs = list(receivers)
        deadline = time.time() + budget
        workers = [
            Worker(c, self.state, self.base, self.cap, self.stats, lock=self._lock(c.name))
            for c in cfgs
        ]
        threads = [
            threading.Thread(target=_drain, args=(w, deadline), daemon=True) for w in workers
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, deadline - time.time()) + max((c.timeout for c in cfgs), default=0))
        for w in workers:
            w.stop_event.set()
        sizes = self.state.outbox_size()
        return sum(sizes.get(c.name, 0) for c in cfgs)


def _drain(w: Worker, deadline: float) -> None:
    attempt = 0
    while time.time() < deadline and w.state.outbox_size().get(w.cfg.name, 0):
        w.pass_once(deadline)
        if not w.state.outbox_size().get(w.cfg.name, 0):
            return
        attempt += 1
        pause = min(backoff(attempt, w.base, w.cap), deadline - time.time())
        if pause > 0:
            w.stop_event.wait(pause)
