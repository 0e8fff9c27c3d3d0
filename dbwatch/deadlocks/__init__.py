"""Deadlock analysis: what a parsed deadlock means (diagnosis), independent of where it was read."""
