"""The dashboard's layout in a real Chromium (Debian's, driven by Playwright) at a phone's
400 px and a laptop's 1280 px (issue 24.6): the navigation's parts never overlap, no page
scrolls sideways, and at 1280 px every table stays inside its card (/deadlocks had its
transaction table run past it)."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from web_fixtures import fill  # noqa: E402

from dbwatch.web.server import Dashboard, serve  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian chromium not installed (apt-get install chromium)")
sync_api = pytest.importorskip("playwright.sync_api", reason="pip package playwright not installed")

PAGES = ("/", "/deadlocks", "/history", "/actions")
MEASURE = """() => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  const header = document.querySelector('header.top');
  const parts = [...header.querySelectorAll('.brand, nav a, .meta')].map(box);
  const overlaps = [];
  for (let i = 0; i < parts.length; i++) for (let j = i + 1; j < parts.length; j++) {
    const a = parts[i], b = parts[j];
    if (a.l < b.r - 1 && b.l < a.r - 1 && a.t < b.b - 1 && b.t < a.b - 1) overlaps.push([i, j]);
  }
  const hb = box(header);
  const outside = parts.filter(p => p.b > hb.b + 1 || p.t < hb.t - 1 || p.r > hb.r + 1).length;
  const past = [...document.querySelectorAll('.card')].filter(c => {
    const cr = c.getBoundingClientRect();
    return c.scrollWidth > c.clientWidth + 1 ||
      [...c.querySelectorAll('table')].some(t => t.getBoundingClientRect().right > cr.right + 1);
  }).length;
  return {overlaps, outside, past, page: document.documentElement.scrollWidth,
          view: document.documentElement.clientWidth};
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state = tmp_path_factory.mktemp("layout") / "state.db"
    fill(state, payload="")
    srv = serve("127.0.0.1:0", Dashboard(state))
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()


@pytest.mark.parametrize("width", [400, 1280])
def test_navigation_and_tables_fit(site: str, width: int) -> None:
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            for path in PAGES:
                page.goto(site + path)
                m = page.evaluate(MEASURE)
                assert m["overlaps"] == [] and m["outside"] == 0, (width, path, m)
                assert m["page"] <= m["view"], (width, path, m)  # nothing scrolls sideways
                if width >= 1280:
                    assert m["past"] == 0, (width, path, m)
        finally:
            browser.close()
