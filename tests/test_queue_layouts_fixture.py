"""tests/fixtures/queue_layouts/layouts.yaml is well formed (no server): what its header promises
holds for every entry, so recognition tests can consume it as data."""

from __future__ import annotations

from pathlib import Path

import yaml

LAYOUTS = Path(__file__).parent / "fixtures" / "queue_layouts" / "layouts.yaml"
ROLES = {"id", "queue", "job_class", "payload", "status", "run_at", "retry_at", "created_at",
         "started_at", "claimed_at", "claimed_by", "claimed_flag", "claim_token",
         "state_changed_at", "attempts", "max_attempts", "priority", "finished_at", "failed_at",
         "cancelled_at", "error", "result", "timeout_ms"}
MEANINGS = {"waiting", "claimed", "running", "retrying", "done", "failed", "cancelled",
            "failed or retrying"}


def test_layouts_fixture_is_well_formed() -> None:
    layouts = yaml.safe_load(LAYOUTS.read_text())["layouts"]
    labels = {e["label"] for e in layouts}
    assert labels == {"queue", "results", "not-queue"}
    assert {e["engine"] for e in layouts} == {"postgresql", "mariadb"}
    seen = set()
    for e in layouts:
        key = (e["source"], e["engine"], e["table"])
        assert key not in seen, key
        seen.add(key)
        assert e["why"] and e["columns"] and isinstance(e["indexes"], list), key
        names = [c[0] for c in e["columns"]]
        assert len(names) == len(set(names)), key
        assert all(len(c) == 3 and isinstance(c[2], bool) for c in e["columns"]), key
        roles = e.get("roles", {})
        assert (e["label"] == "not-queue") == (not roles), key
        assert set(roles) <= ROLES, (key, set(roles) - ROLES)
        assert set(roles.values()) <= set(names), key
        assert set(e.get("statuses", {}).values()) <= MEANINGS, key
        if e.get("statuses"):
            assert "status" in roles, key
    queues = [e for e in layouts if e["label"] == "queue"]
    assert len({e["source"].split()[0] for e in queues}) >= 8
