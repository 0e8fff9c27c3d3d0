"""Typed rows of the pg_mvcc snapshot sections (see sections.py)."""

from __future__ import annotations
