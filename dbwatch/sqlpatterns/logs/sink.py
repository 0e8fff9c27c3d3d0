"""What log readers report to: statements per connection, session boundaries, the server version."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

MAX_ENTRY = 64 * 1024  # a multi-line statement is kept up to this many characters


class Sink(Protocol):
    # Optionally also `single_statement(conn, ts, text)`: the same for a text without ';'.
    def statement(
        self, conn: Hashable, ts: str | None, text: str, params: dict[str, str] | None = None
    ) -> None: ...

    def connect(self, conn: Hashable) -> None: ...

    def disconnect(self, conn: Hashable) -> None: ...

    def version(self, text: str) -> None: ...

    def unreadable(self, n: int = 1) -> None: ...
