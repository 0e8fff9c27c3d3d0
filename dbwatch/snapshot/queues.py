"""Typed rows of the queues snapshot sections (see sections.py)."""

from __future__ import annotations
