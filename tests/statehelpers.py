"""What the state's tests share: a finding of a given subject, evidence and severity."""

from __future__ import annotations

from typing import Any

from dbwatch.findings import Finding


def finding(subject: str = "pid 7", evidence: Any = None, severity: str = "warning") -> Finding:
    return Finding(rule="PG001", severity=severity, target="db", subject=subject,
                   summary=f"{subject} is old", fix="end it",
                   evidence=evidence if evidence is not None else {"age": 1},
                   identity=[subject])
