"""The one exception hierarchy; cli.py turns these into one-line messages and exit codes."""

from __future__ import annotations


class DbwatchError(Exception):
    """Base class: the message is shown to the user as one line."""

    exit_code = 3


class ConfigError(DbwatchError):
    """Configuration or rule catalogue errors, all collected before raising."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class UsageError(DbwatchError):
    """Bad command-line arguments or input files."""


class TargetError(DbwatchError):
    """A target could not be reached or used. The message never contains a password."""

    def __init__(self, target: str, message: str) -> None:
        self.target = target
        self.detail = message
        super().__init__(f"{target}: {message}")


class ProbeError(DbwatchError):
    """One probe failed; `grant` says what privilege or setting would fix it."""

    def __init__(
        self, probe: str, message: str, grant: str | None = None, privilege: bool = False
    ) -> None:
        self.probe = probe
        self.detail = message
        self.grant = grant
        self.privilege = privilege
        super().__init__(f"probe {probe}: {message}")
