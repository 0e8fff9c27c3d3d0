"""A procrastinate app for tests/live/test_queue_procrastinate.py (run by procrastinate's CLI)."""

import os
import time

import procrastinate

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ["DSN"]))


@app.task(queue="default", name="ok")
def ok() -> None:
    pass


@app.task(queue="default", name="boom", retry=procrastinate.RetryStrategy(max_attempts=2, wait=0))
def boom() -> None:
    raise RuntimeError("boom")


@app.task(queue="slow", name="slow")
def slow() -> None:
    time.sleep(600)
