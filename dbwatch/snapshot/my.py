"""Typed rows of the my snapshot sections (see sections.py)."""

from __future__ import annotations
