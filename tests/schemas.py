"""Validate dbwatch's machine-readable output against its JSON Schema in docs/schema/ (issue 26.5).

    doc = load_json(proc.stdout, "audit")   # parse + validate, fail with every violation

Schemas: audit, deadlocks, terminate, status, history, webhook, pagerduty, rules.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "docs" / "schema"


@cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def problems(doc: Any, name: str) -> list[str]:
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in sorted(validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    ]


def validate(doc: Any, name: str) -> Any:
    found = problems(doc, name)
    assert not found, f"{name} output does not match docs/schema/{name}.schema.json:\n" + "\n".join(
        found[:20]
    )
    return doc


def load_json(text: str | bytes, name: str) -> Any:
    """Parse one JSON document printed by dbwatch and validate it against its schema."""
    return validate(json.loads(text), name)
