"""Typed rows of the statements snapshot sections (see sections.py)."""

from __future__ import annotations
