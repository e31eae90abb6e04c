"""``git pilot efficiency``: bars in the terminal, and ``--html FILE`` checked in a real browser
(headless Chromium loads it without errors and a screenshot shows the chart; skipped where
Chromium is not installed)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from conftest import make_repo, run_pilot

from gitpilot import efficiency
from gitpilot.efficiency_page import colours
from gitpilot.repo import Repo

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Nothing may leave the machine: no background services, every host name unresolvable and any
# request sent to a closed loopback port.
_OFFLINE = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--hide-scrollbars"]


def _fill(repo: Path) -> None:
    """Events through the ledger's writer, and two of earlier days in its format (a history)."""
    r = Repo.discover(repo)
    for mechanism, delivered, avoided, n in (("capsule", 2000, 60000, 2), ("quiet-checks", 300, 30000, 5),
                                             ("review", 0, 4000, 1)):
        for _ in range(n):
            assert efficiency.record(r, mechanism, delivered, avoided, task="aaaa1111")
    with open(repo / ".git" / "pilot" / "efficiency.jsonl", "a") as fh:
        fh.write('{"at": "2026-01-01T09:00:00Z", "avoided": 60000, "delivered": 2000, "facts": {}, '
                 '"mechanism": "capsule", "task": "aaaa1111"}\n')
        fh.write('{"at": "2026-01-02T09:00:00Z", "avoided": 0, "delivered": 0, "facts": {}, '
                 '"mechanism": "review", "task": null}\n')


def test_terminal_bars_per_mechanism(git_repo: Path) -> None:
    _fill(git_repo)
    res = run_pilot("efficiency", cwd=git_repo)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    kept = lines[lines.index("bytes kept out") + 1: lines.index("times acted")]
    acted = lines[lines.index("times acted") + 1: lines.index("times acted") + 4]
    assert [ln.split()[0] for ln in kept] == ["capsule", "quiet-checks", "review"]
    # bars in proportion: 180,000 / 150,000 / 4,000 bytes kept out; the longest is 30 cells, in eighths
    assert [ln.count("█") for ln in kept] == [30, 25, 0] and kept[2].split()[1] == "▋"
    assert kept[0].endswith("175.8 KiB") and kept[2].endswith("3.9 KiB")
    # 5 / 3 / 2 events
    assert [ln.split()[0] for ln in acted] == ["quiet-checks", "capsule", "review"]
    assert [ln.count("█") for ln in acted] == [30, 18, 12] and acted[0].endswith(" 5")


def _page(tmp_path: Path) -> tuple[Path, str]:
    repo = make_repo(tmp_path / "r")
    _fill(repo)
    out = tmp_path / "report.html"
    res = run_pilot("efficiency", "--html", str(out), cwd=repo)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"wrote {out} (10 events")
    return out, out.read_text("utf-8")


def test_the_page_is_self_contained_and_deterministic(tmp_path: Path) -> None:
    out, html = _page(tmp_path)
    # no external assets of any kind, and no script at all
    assert not re.search(r"https?:|//[a-z]|\bsrc=|\bhref=|@import|url\(|<script|<link|<img", html, re.IGNORECASE)
    for words in ("Bytes kept out, per mechanism", "How often each mechanism acted",
                  "The ledger over time", "not provider billing", "2026-01-01"):
        assert words in html
    first = out.read_bytes()
    repo = tmp_path / "r"
    assert run_pilot("efficiency", "--html", str(out), cwd=repo).returncode == 0
    assert out.read_bytes() == first  # same ledger, same bytes
    bad = run_pilot("efficiency", "--html", str(tmp_path / "no" / "such" / "dir.html"), cwd=repo)
    assert bad.returncode == 1 and "is not a directory" in bad.stderr and "Traceback" not in bad.stderr


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, *_OFFLINE, "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120)


def _console(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGB(A) pixels of an 8-bit PNG (Chromium's screenshots)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            channels = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if channels == 3 else bytes(v for j, v in enumerate(line) if j % 4 != 3))
        prev = line
    return width, height, rows


def _count(rows: list[bytes], rgb: bytes) -> int:
    return sum(1 for row in rows for x in range(0, len(row), 3) if row[x:x + 3] == rgb)


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_chromium_loads_the_page_without_errors_and_the_screenshot_shows_the_chart(tmp_path: Path) -> None:
    out, _html = _page(tmp_path)
    # the detector works: a page with a script error and an external image is caught
    broken = tmp_path / "broken.html"
    broken.write_text('<html><body><img src="https://assets.example.invalid/x.png">'
                      "<script>undefinedFunction()</script></body></html>")
    assert _console(_chromium("--dump-dom", broken.as_uri()).stderr)

    loaded = _chromium("--dump-dom", out.as_uri())
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert _console(loaded.stderr) == []
    # the browser built the charts: one bar per mechanism in each bar chart, columns per day
    assert loaded.stdout.count('class="bar"') >= 3 + 3 + 3
    assert "<svg" in loaded.stdout and "The ledger over time" in loaded.stdout

    shot = tmp_path / "shot.png"
    res = _chromium(f"--screenshot={shot}", "--window-size=900,1400", out.as_uri())
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    width, height, rows = _png_pixels(shot)
    assert (width, height) == (900, 1400)
    capsule = bytes.fromhex(colours(["capsule", "quiet-checks", "review"])["capsule"][1:])
    # the capsule's bars: at least the longest bar's 450 x 20 pixels are drawn in its colour
    assert _count(rows, capsule) > 9000
    blank = tmp_path / "blank.png"
    (tmp_path / "blank.html").write_text("<html><body>nothing</body></html>")
    _chromium(f"--screenshot={blank}", "--window-size=900,1400", (tmp_path / "blank.html").as_uri())
    assert _count(_png_pixels(blank)[2], capsule) == 0
