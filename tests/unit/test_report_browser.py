"""The report page in a real browser: Debian's headless Chromium (`./setup.sh --with-browser`
installs it; scripts/test.sh asks for it) opens the report of the committed reference runs,
redrawn with this code, checks that every figure loaded, and keeps a 1280 px wide
screenshot in the test's tmp folder (its path is printed) for a person to look at.

Chromium's own --dump-dom is enough to ask the browser whether an image loaded: a copy of
the page with a few lines of script (the page itself has none) writes each image's
``naturalWidth`` into the DOM once the page has loaded, and the dumped DOM is read back.
No WebDriver (python3-selenium, chromium-driver) is needed for that: one subprocess call.
"""
from __future__ import annotations

import contextlib
import html
import io
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from dcrepro import cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH = 1280

pytestmark = [pytest.mark.slow,   # Chromium, and the reference redraw
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium: ./setup.sh "
                                 "--with-browser installs Debian's (scripts/test.sh does)")]

#: appended to a copy of the page only: report each image's state after the load event
PROBE = """<script>
window.addEventListener("load", function () {
  var out = Array.prototype.map.call(document.images, function (i) {
    return [i.getAttribute("src"), i.complete, i.naturalWidth]; });
  var pre = document.createElement("pre");
  pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    """Headless Chromium, as root needs it (no sandbox), with a throwaway profile."""
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--no-first-run", "--disable-extensions", "--hide-scrollbars",
                           f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def page(redrawn_reference) -> Path:
    """The report of a copy of results/reference, every figure redrawn by this code."""
    root = redrawn_reference[0]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["report", str(root)]) == 0
    return root / "report" / "index.html"


def test_every_figure_loads_in_chromium(page, tmp_path):
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    done = chromium("--virtual-time-budget=10000", "--dump-dom", probe.as_uri(),
                    profile=tmp_path / "profile")
    probe.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, f"chromium did not run the probe: {done.stderr[-500:]}"
    images = json.loads(html.unescape(found.group(1)))
    assert len(images) >= 7
    broken = [src for src, complete, width in images if not complete or width <= 0]
    assert not broken, f"figures that did not load: {broken}"


def test_a_screenshot_1280_wide_is_kept(page, tmp_path):
    shot = tmp_path / "report-1280.png"
    done = chromium(f"--window-size={WIDTH},2400", f"--screenshot={shot}", page.as_uri(),
                    profile=tmp_path / "profile")
    assert shot.is_file(), done.stderr[-500:]
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])   # the PNG's IHDR
    assert (width, height) == (WIDTH, 2400) and shot.stat().st_size > 50_000
    print(f"\nscreenshot of the report page: {shot}")
