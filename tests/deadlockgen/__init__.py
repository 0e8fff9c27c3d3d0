"""Deadlock report generators for the tests: a model renders as each server prints it."""
