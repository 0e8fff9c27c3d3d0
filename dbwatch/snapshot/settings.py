"""Typed rows of the settings snapshot sections (see sections.py)."""

from __future__ import annotations
