"""Screenshots of the dashboard's pages for docs/ (README): a state DB filled through the
daemon's State with the horizon story (findings, deadlocks parsed from tests/fixtures, a
terminated holder, 6 h of history), served by dbwatch.web, shot by Debian's Chromium.

Run: python contrib/screenshots/dashboard.py [--out docs]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from playwright.sync_api import sync_playwright  # noqa: E402
from web_fixtures import fill  # noqa: E402

from dbwatch.web.view import Site  # noqa: E402
from dbwatch.web.server import Dashboard, serve  # noqa: E402

PAGES = {"overview": "/", "deadlocks": "/deadlocks?since=6h", "history": "/history?since=6h",
         "actions": "/actions"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.db"
        fill(state, findings=6, deadlocks=40, actions=3, hours=6, points=240, payload="")
        site = Site({"pg-main": 15.0, "maria-queue": 60.0},
                    {"pg-main": "postgresql", "maria-queue": "mariadb"})
        srv = serve("127.0.0.1:0", Dashboard(state, lambda: site))
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 1250}, device_scale_factor=1)
            for name, path in PAGES.items():
                page.goto(base + path)
                if name == "overview":
                    page.locator("details").first.evaluate("d => d.open = true")
                out = Path(args.out) / f"dashboard-{name}.png"
                page.screenshot(path=str(out))
                print(out)
            browser.close()
        srv.shutdown()


if __name__ == "__main__":
    main()
