"""What alerting needs of the daemon's state, as a protocol: `daemon.state.State` provides it.

Alerts sit below the daemon in the flow; they see the state only through this interface (and
the records of `dbwatch.records`), never by importing `dbwatch.daemon`.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Protocol

from ..records import FindingRow, SentRow
from ..snapshot.values import JSONObject


class AlertState(Protocol):
    """The finding lifecycle reads and the alert outbox the router and the workers use."""

    def transaction(self) -> AbstractContextManager[object]: ...

    def firing(self, target: str | None = None) -> list[FindingRow]: ...

    def finding(self, fingerprint: str) -> FindingRow | None: ...

    def sent(self, target: str, receiver: str) -> dict[str, SentRow]: ...

    def mark_sent(
        self, receiver: str, fingerprint: str, target: str, status: str, severity: str, now: float
    ) -> None: ...

    def enqueue(
        self,
        receiver: str,
        fingerprint: str,
        event: str,
        payload: JSONObject,
        now: float | None = None,
    ) -> int: ...

    def outbox_head(self, receiver: str, limit: int = 20) -> list[JSONObject]: ...

    def outbox_done(self, msg_id: int, rev: int | None = None) -> bool: ...

    def outbox_failed(self, msg_id: int, error: str, next_attempt: float) -> None: ...

    def outbox_size(self) -> dict[str, int]: ...

    def drop_receivers(self, keep: Iterable[str], now: float | None = None) -> dict[str, int]: ...
