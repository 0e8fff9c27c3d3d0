"""CPU and context switches per thread of this process, by Python thread name (the benches'
breakdown of what runs outside the cycles: scheduler, executor, pool workers, GC)."""
from __future__ import annotations

import re
import threading
from pathlib import Path


def thread_cpu() -> dict[str, tuple[float, int]]:
    """CPU seconds (schedstat) and context switches of this process's threads, summed by the
    Python thread name without its number (dbwatch-pool-7 -> dbwatch-pool): which threads the
    CPU outside the cycles goes to. A thread that exits in between is not counted."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, tuple[float, int]] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            run_ns = int((task / "schedstat").read_text().split()[0])
            status = (task / "status").read_text()
        except OSError:
            continue
        switches = sum(int(line.split()[1]) for line in status.splitlines()
                       if "ctxt_switches:" in line)
        name = re.sub(r"[-_]\d+(_\d+)?$", "", names.get(int(task.name), "other"))
        cpu, sw = out.get(name, (0.0, 0))
        out[name] = (cpu + run_ns / 1e9, sw + switches)
    return out
