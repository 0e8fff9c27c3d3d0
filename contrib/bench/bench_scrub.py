"""How long the secret scrubber takes (it runs on every log line, state row and alert).

Run: PYTHONPATH=. python3 contrib/bench/bench_scrub.py
"""
from __future__ import annotations

import random
import string
import time

from dbwatch.targets.secrets import register_secret, scrub


def main() -> None:
    rnd = random.Random(7)
    for _ in range(10):
        register_secret("".join(rnd.choice(string.ascii_letters + string.digits + "/#?@")
                                for _ in range(40)))
    pw = "Kv8/Q#w?E@r:T[y]U%4i&O=p+A s;D'f\"G\\h$J!k*L,Zx"
    register_secret(pw)
    big = ("select * from jobs where id = 5 and payload like '%abc%' " * 2000)[:100_000]
    short = "cannot connect: connection refused to 127.0.0.1:3306 (errno 111)"
    for label, text, n in (("100 KB clean", big, 5), ("100 KB + password", big + pw, 5),
                           ("one log line", short, 2000)):
        started = time.perf_counter()
        for _ in range(n):
            out = scrub(text)
        each = (time.perf_counter() - started) / n
        assert pw[:4].lower() not in out.lower()
        print(f"{label:>20}: {each * 1000:8.3f} ms  (11 secrets, 22 variants)")


if __name__ == "__main__":
    main()
