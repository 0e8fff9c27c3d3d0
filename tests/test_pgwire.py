"""Probe-phase shortcuts of an idle cycle (issue 28, pgwire) that need no server."""

from __future__ import annotations

import dataclasses

from dbwatch.snapshot import CoverageGap, ProbeFailure, Snapshot


def test_of_built_is_the_constructor() -> None:
    """Snapshot.of_built sets every field the constructor sets, to the same values (a field
    added to Snapshot and not to of_built fails here)."""
    args = dict(
        target="t",
        engine="postgresql",
        server_version="15.4",
        version_num=150004,
        taken_at=12.5,
        sections={"pg.sessions": ()},
        failures=(ProbeFailure("pg.x", "no"),),
        features=frozenset(("skip_locked",)),
        gaps=(CoverageGap("database", "d", "why"),),
        scope="app",
    )
    fast = Snapshot.of_built(**args)  # type: ignore[arg-type]
    slow = Snapshot(**args, built=True)  # type: ignore[arg-type]
    assert fast == slow
    assert vars(fast) == vars(slow)
    assert [f.name for f in dataclasses.fields(Snapshot) if f.init] == list(args)
    assert fast._models == {} and fast._models is not Snapshot.of_built(**args)._models  # type: ignore[arg-type]
    assert fast.model("m", lambda s: 1) == 1
