"""Actions: the only code with side effects on the watched servers (terminate, with guards)."""

from __future__ import annotations
