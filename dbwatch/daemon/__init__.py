"""The daemon: loop, scheduler, state, metrics."""
