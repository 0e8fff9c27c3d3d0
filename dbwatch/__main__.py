"""python -m dbwatch"""

from __future__ import annotations

from .cli import _entry

_entry()
