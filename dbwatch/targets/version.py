"""Server versions by flavour: MariaDB 10.x is not MySQL 10.x, so versions only compare
within one flavour (postgresql | mysql | mariadb)."""

from __future__ import annotations

import re
from dataclasses import dataclass

FLAVOURS = ("postgresql", "mysql", "mariadb")
_NUMBERS = re.compile(r"(?<!\d)(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?")


# FOR UPDATE SKIP LOCKED: MySQL 8.0.1, MariaDB 10.6, PostgreSQL 9.5 (the one copy of the fact).
SKIP_LOCKED_SINCE = {"mysql": (8, 0, 1), "mariadb": (10, 6, 0), "postgresql": (9, 5, 0)}


class FlavourMismatch(TypeError):
    """A MySQL version compared with a MariaDB one (or any two flavours)."""


@dataclass(frozen=True, slots=True)
class ServerVersion:
    flavour: str
    major: int
    minor: int = 0
    patch: int = 0

    @property
    def num(self) -> int:
        """The flavour's own number: 80036 (MySQL 8.0.36), 101106 (MariaDB 10.11.6),
        150004 (PostgreSQL 15.4, as server_version_num writes it)."""
        if self.flavour == "postgresql" and self.major >= 10:
            return self.major * 10000 + self.patch
        return self.major * 10000 + self.minor * 100 + self.patch

    def at_least(self, flavour: str, major: int, minor: int = 0, patch: int = 0) -> bool:
        """True only for this flavour at or above that version: `at_least("mysql", 8)` is
        False on MariaDB 10.11 (no cross-flavour comparison ever answers yes)."""
        return self.flavour == flavour and self._key() >= (major, minor, patch)

    def supports_skip_locked(self) -> bool:
        return self.at_least(self.flavour, *SKIP_LOCKED_SINCE[self.flavour])

    def _key(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def _same(self, other: object) -> ServerVersion:
        if not isinstance(other, ServerVersion):
            raise TypeError(f"cannot compare a server version with {type(other).__name__}")
        if other.flavour != self.flavour:
            raise FlavourMismatch(f"{self.flavour} {self} compared with {other.flavour} {other}")
        return other

    def __lt__(self, other: object) -> bool:
        return self._key() < self._same(other)._key()

    def __le__(self, other: object) -> bool:
        return self._key() <= self._same(other)._key()

    def __gt__(self, other: object) -> bool:
        return self._key() > self._same(other)._key()

    def __ge__(self, other: object) -> bool:
        return self._key() >= self._same(other)._key()

    def __str__(self) -> str:
        if self.flavour == "postgresql" and self.major >= 10:
            return f"{self.major}.{self.patch}"
        return f"{self.major}.{self.minor}.{self.patch}"

    @classmethod
    def from_pg_num(cls, num: int) -> ServerVersion:
        """PostgreSQL's server_version_num: 150004 → 15.4, 90624 → 9.6.24."""
        if num >= 100000:
            return cls("postgresql", num // 10000, 0, num % 10000)
        return cls("postgresql", num // 10000, num // 100 % 100, num % 100)

    @classmethod
    def from_mysql_text(cls, text: str) -> ServerVersion:
        """SELECT VERSION(): '8.0.36', '10.11.6-MariaDB-0+deb12u1', '5.5.5-10.11.6-MariaDB'
        (the replication prefix MariaDB sends old clients is skipped)."""
        low = text.lower()
        flavour = "mariadb" if "mariadb" in low else "mysql"
        if low.startswith("5.5.5-") and flavour == "mariadb":
            text = text[6:]
        m = _NUMBERS.search(text[:100])
        if m is None:
            return cls(flavour, 0)
        return cls(flavour, int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
