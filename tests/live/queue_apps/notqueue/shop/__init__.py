"""A small Django shop whose tables are NOT job queues (tests/live/test_not_a_queue.py)."""
