"""`audit --log`: QU401/QU402 from query logs, folded into the audit result."""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from .audit import AuditResult
from .evaluate import Selection
from .findings import Finding
from .sqlpatterns.logs import analyse_logs


def audit_logs(paths: Sequence[str], server_version: str | None, result: AuditResult,
               selection: Selection) -> list[Finding]:
    """Analyse the logs (streamed), record their stats in the result, return the findings."""
    started = time.perf_counter()
    print(f"dbwatch: analysing {len(paths)} log file(s)…", file=sys.stderr)
    analysis = analyse_logs(list(paths), server_version)
    seconds = time.perf_counter() - started
    st = analysis.stats
    info = st.to_dict()
    info["seconds"] = round(seconds, 3)
    result.logs.append(info)
    mb = st.bytes / 1e6
    print(f"dbwatch: {mb:.1f} MB, {st.lines:,} lines, {st.statements:,} statements, "
          f"{st.transactions:,} transactions, {st.unparsable:,} unparsable, "
          f"format {st.format}, server {st.server_version or 'unknown'}, "
          f"{mb / seconds if seconds else 0:.1f} MB/s", file=sys.stderr)
    for err in st.errors:
        print(f"dbwatch: {err}", file=sys.stderr)
    return [f for f in analysis.findings if selection.wants(f.rule)]
