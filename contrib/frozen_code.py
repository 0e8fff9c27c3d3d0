"""Regenerate dbwatch/frozen_code.py (the methods of dbwatch's @frozen/@mutable classes,
compiled ahead: dbwatch/frozen.py) after a class's fields change or a class is added:

    python contrib/frozen_code.py           # write it
    python contrib/frozen_code.py --check   # exit 1 when it is stale (tests/test_frozen.py)

Every module of the dbwatch package is imported (listed from the tree here, at build time:
dbwatch itself lists no directory)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dbwatch.frozen import code_source

TARGET = ROOT / "dbwatch" / "frozen_code.py"


def modules() -> list[str]:
    out = []
    for path in sorted((ROOT / "dbwatch").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts[-1] in ("__main__", "frozen_code"):
            continue
        out.append(".".join(parts))
    return out


def main() -> int:
    text = code_source(modules())
    if "--check" in sys.argv[1:]:
        if TARGET.read_text() != text:
            print(f"stale: python {Path(__file__).relative_to(ROOT)}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
