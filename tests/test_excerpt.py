"""Failure excerpts of quiet checks: chosen around the failure, bounded, gaps marked,
escapes removed, secrets redacted; pass counts read from the runners' summaries."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gitpilot.checks.excerpt import Excerpt, count_passed, make_excerpt, strip_ansi

RED, GREEN, BOLD, RESET = "\x1b[31m", "\x1b[32m", "\x1b[1m", "\x1b[0m"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"  # assembled so no scanner flags this file
MARK = re.compile(r"^… \((\d+) (earlier |later )?lines?\)$")


# --- realistic logs -----------------------------------------------------------------------------


def pytest_log(passing: int = 2000) -> str:
    """`pytest -v --color=yes`: many passing tests, one failure with a long traceback."""
    out = [
        f"{BOLD}============================= test session starts =============================={RESET}",
        "platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0",
        "rootdir: /home/dev/shop",
        f"{BOLD}collecting ... {RESET}collected {passing + 1} items",
        "",
    ]
    for i in range(passing):
        pct = (i * 100) // (passing + 1)
        out.append(f"tests/test_catalog.py::test_item_{i} {GREEN}PASSED{RESET}{' ' * 20}[{pct:3d}%]")
        if i == passing // 2:
            out.append(f"tests/test_orders.py::test_checkout_total {RED}FAILED{RESET}{' ' * 20}[ 50%]")
    out += [
        "",
        "=================================== FAILURES ===================================",
        f"{RED}{BOLD}____________________________ test_checkout_total _____________________________{RESET}",
        "",
        "    def test_checkout_total():",
        "        cart = make_cart(items=3)",
        f'        client = Client(token="{GITHUB_TOKEN}")',
        ">       assert checkout(cart, client) == 30",
        "",
        "tests/test_orders.py:41: ",
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ",
    ]
    for depth in range(12):  # a deep call chain: a long traceback
        out += [
            f"shop/pricing.py:{100 + depth}: in apply_rule_{depth}",
            f"    return apply_rule_{depth + 1}(cart, rules[{depth}:])",
        ]
    out += [
        "",
        "cart = Cart(items=3), rules = []",
        "",
        "    def apply_rule_12(cart, rules):",
        ">       return cart.total / len(rules)",
        f"{BOLD}{RED}E       ZeroDivisionError: division by zero{RESET}",
        "",
        f"{BOLD}{RED}shop/pricing.py{RESET}:214: ZeroDivisionError",
        f"{BOLD}=========================== short test summary info ============================{RESET}",
        f"{RED}FAILED{RESET} tests/test_orders.py::test_checkout_total - ZeroDivisionError: division by zero",
        f"{RED}========================= {BOLD}1 failed{RESET}, {GREEN}{passing} passed{RESET}{RED} in 12.31s"
        f" ========================={RESET}",
    ]
    return "\n".join(out) + "\n"


CARGO_TEST_LOG = """\
\x1b[1m\x1b[92m   Compiling\x1b[0m shop v0.1.0 (/home/dev/shop)
\x1b[1m\x1b[92m    Finished\x1b[0m `test` profile [unoptimized + debuginfo] target(s) in 0.95s
\x1b[1m\x1b[92m     Running\x1b[0m unittests src/lib.rs (target/debug/deps/shop-a35a48c092d3f767)

running 3 tests
test tests::ok1 ... ok
test tests::ok2 ... ok
test tests::bad ... FAILED

failures:

---- tests::bad stdout ----

thread 'tests::bad' (27859) panicked at src/lib.rs:7:24:
assertion `left == right` failed: math is broken
  left: 4
 right: 5
stack backtrace:
   0: __rustc::rust_begin_unwind
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
   1: core::panicking::panic_fmt
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
   2: core::panicking::assert_failed_inner
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:434:23
   3: shop::tests::bad
             at ./src/lib.rs:7:24
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.


failures:
    tests::bad

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.21s

\x1b[1m\x1b[91merror\x1b[0m: test failed, to rerun pass `--lib`
"""

CARGO_BUILD_LOG = """\
   Compiling shop v0.1.0 (/home/dev/shop)
error[E0308]: mismatched types
 --> src/lib.rs:1:50
  |
1 | pub fn add(a: u64, b: u64) -> u64 { let x: i32 = a; a + b }
  |                                            ---   ^ expected `i32`, found `u64`
  |                                            |
  |                                            expected due to this
  |
help: you can convert a `u64` to an `i32` and panic if the converted value doesn't fit
  |
1 | pub fn add(a: u64, b: u64) -> u64 { let x: i32 = a.try_into().unwrap(); a + b }
  |                                                   ++++++++++++++++++++

For more information about this error, try `rustc --explain E0308`.
error: could not compile `shop` (lib) due to 1 previous error
"""

GO_TEST_LOG = """\
=== RUN   TestParse
--- PASS: TestParse (0.00s)
=== RUN   TestAdd
    calc_test.go:18: Add(2, 2) = 5; want 4
--- FAIL: TestAdd (0.00s)
=== RUN   TestSub
--- PASS: TestSub (0.00s)
FAIL
FAIL\texample.com/calc\t0.004s
FAIL
"""

NPM_LOG = """\

> shop@1.0.0 test
> node test/run.js

<anonymous_script>:1
{bad json
 ^

SyntaxError: Expected property name or '}' in JSON at position 1
    at JSON.parse (<anonymous>)
    at parse (/home/dev/shop/test/run.js:3:33)
    at Object.<anonymous> (/home/dev/shop/test/run.js:4:1)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
npm ERR! code ELIFECYCLE
npm ERR! errno 1
npm ERR! shop@1.0.0 test: `node test/run.js`
npm ERR! Exit status 1
npm ERR!
npm ERR! Failed at the shop@1.0.0 test script.
"""

MAKE_LOG = """\
gcc -Wall -c a.c -o a.o
gcc -Wall -c b.c -o b.o
b.c: In function 'g':
b.c:1:23: error: expected expression before ';' token
    1 | int g(void) { int x = ; return y; }
      |                       ^
b.c:1:32: error: 'y' undeclared (first use in this function)
    1 | int g(void) { int x = ; return y; }
      |                                ^
b.c:1:19: warning: unused variable 'x' [-Wunused-variable]
make: *** [Makefile:4: b.o] Error 1
"""

JEST_LOG = """\
 PASS  src/cart.test.js
 FAIL  src/sum.test.js
  ● sum › adds numbers

    expect(received).toBe(expected) // Object.is equality

    Expected: 4
    Received: 5

    > 5 |     expect(sum(2, 2)).toBe(4);
        |                       ^

      at Object.toBe (src/sum.test.js:5:23)

Test Suites: 1 failed, 3 passed, 4 total
Tests:       1 failed, 11 passed, 12 total
Snapshots:   0 total
Time:        0.512 s
Ran all test suites.
"""


def build_noise(n: int) -> str:
    """Ordinary build chatter, some of it mentioning errors that are not failures."""
    kinds = [
        "[build] compiling module_{i}.c ... done",
        "INFO  worker {i} processed batch in 12ms",
        "downloading dependency pkg-{i} (1.{i}.0) ... ok",
        "checked 0 errors in module_{i}",
        "[build] linking error_handler_{i}.o",
    ]
    return "".join(kinds[i % len(kinds)].format(i=i) + "\n" for i in range(n))


def with_noise(log: str, before: int = 2000) -> bytes:
    return (build_noise(before) + log).encode()


def shown_lines(excerpt: Excerpt) -> list[str]:
    return [line for line in excerpt.lines if not MARK.match(line)]


def size(excerpt: Excerpt) -> int:
    return len("\n".join(excerpt.lines).encode())


def assert_faithful(excerpt: Excerpt, log: bytes) -> None:
    """Shown lines are log lines in log order, and marks account for every other line."""
    lines = strip_ansi(log.decode("utf-8", "replace")).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    assert excerpt.total == len(lines)
    pos = 0
    counted = 0
    previous_was_mark = False
    for item in excerpt.lines:
        m = MARK.match(item)
        if m:
            assert not previous_was_mark, "two gap marks in a row"
            pos += int(m.group(1))
            counted += int(m.group(1))
            previous_was_mark = True
            continue
        assert pos < len(lines)
        raw = lines[pos]
        assert item == raw or "[REDACTED:" in item or " … (+" in item, (item, raw)
        pos += 1
        previous_was_mark = False
    assert pos == excerpt.total
    assert counted + excerpt.shown == excerpt.total
    assert len(shown_lines(excerpt)) == excerpt.shown


# --- strip_ansi -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[1m\x1b[31mFAILED\x1b[0m test", "FAILED test"),  # SGR
        ("\x1b[38;5;196mred\x1b[39;49;00m", "red"),  # 256 colours, reset
        ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),  # private modes
        ("\x1b[2K\x1b[1Gline\x1b[K", "line"),  # erase and move
        ("\x1b]0;build: step 3\x07done", "done"),  # OSC title, BEL
        ("see \x1b]8;;https://x.example/a\x1b\\the docs\x1b]8;;\x1b\\ now", "see the docs now"),  # OSC 8, ST
        ("\x1b(Bplain\x1b)0\x1b(0", "plain"),  # charset selection
        ("\x1b7saved\x1b8\x1b=\x1b>\x1bM", "saved"),  # two-char escapes
        ("\x1bP1$r0m\x1b\\after", "after"),  # DCS
        ("a\u009b31mb\u0085c", "abc"),  # 8-bit CSI and stray C1
        ("bell\x07 and nul\x00", "bell and nul"),  # stray C0
        ("tab\tstays", "tab\tstays"),
        ("windows\r\nline\r\n", "windows\nline\n"),
        ("Downloading  10%\rDownloading  55%\rDownloading 100%\nnext", "Downloading 100%\nnext"),
        ("progress 40%\r\x1b[Kprogress 100%\r\n", "progress 100%\n"),
        ("done\r\n\r\n", "done\n\n"),
        ("trailing redraw\r", "trailing redraw"),
        ("b\x08bo\x08ol\x08ld", "bold"),  # overstrike
        ("typo\x08\x08\x08\x08fixed", "fixed"),
    ],
)
def test_strip_ansi(raw: str, clean: str) -> None:
    assert strip_ansi(raw) == clean


def test_strip_ansi_keeps_line_count_of_a_redrawn_progress_log() -> None:
    raw = "".join(f"\x1b[2K\r[{'#' * i}{' ' * (20 - i)}] {i * 5}%" for i in range(21)) + "\nnext\nlast\n"
    clean = strip_ansi(raw)
    assert clean == "[####################] 100%\nnext\nlast\n"
    assert "\x1b" not in clean


# --- the excerpt around the failure -------------------------------------------------------------


def test_pytest_failure_in_2000_lines_shows_the_error_and_the_summary() -> None:
    log = with_noise(pytest_log())
    excerpt = make_excerpt(log, 60, 6000)
    text = "\n".join(excerpt.lines)
    assert len(excerpt.lines) <= 60
    assert size(excerpt) <= 6000
    assert_faithful(excerpt, log)
    assert excerpt.total > 4000
    # the error, where it happened, which test, and the runner's verdict
    assert "E       ZeroDivisionError: division by zero" in excerpt.lines
    assert ">       return cart.total / len(rules)" in excerpt.lines
    assert "shop/pricing.py:214: ZeroDivisionError" in excerpt.lines
    assert any("_ test_checkout_total _" in line for line in excerpt.lines)
    assert "FAILED tests/test_orders.py::test_checkout_total - ZeroDivisionError: division by zero" in text
    assert excerpt.lines[-1].startswith("=") and "1 failed, 2000 passed in 12.31s" in excerpt.lines[-1]
    # not just the tail: the failing test's first lines are far from the end
    assert ">       assert checkout(cart, client) == 30" in excerpt.lines
    # clean and safe
    assert "\x1b" not in text
    assert GITHUB_TOKEN not in text
    assert '        client = Client(token="[REDACTED:github-token]")' in excerpt.lines
    assert excerpt.lines[0].startswith("… (") and "earlier lines)" in excerpt.lines[0]


def test_a_long_traceback_keeps_its_frames_nearest_the_error_first() -> None:
    log = with_noise(pytest_log())
    excerpt = make_excerpt(log, 30, 3000)
    assert len(excerpt.lines) <= 30 and size(excerpt) <= 3000
    assert_faithful(excerpt, log)
    assert "E       ZeroDivisionError: division by zero" in excerpt.lines
    assert excerpt.lines[-1].endswith("=") and "1 failed" in excerpt.lines[-1]
    # the frame that raised, with its locals, and the test's own failing line
    assert "    def apply_rule_12(cart, rules):" in excerpt.lines
    assert "cart = Cart(items=3), rules = []" in excerpt.lines
    assert ">       assert checkout(cart, client) == 30" in excerpt.lines
    # the passing tests around the progress line are not worth more than the traceback
    assert sum("PASSED" in line for line in excerpt.lines) <= 2


def test_a_python_traceback_block_is_kept_whole_when_it_fits() -> None:
    traceback = [
        "Traceback (most recent call last):",
        '  File "/srv/app/main.py", line 88, in <module>',
        "    main()",
        '  File "/srv/app/main.py", line 80, in main',
        "    load(config)",
        '  File "/srv/app/config.py", line 12, in load',
        "    return toml.loads(text)",
        "tomllib.TOMLDecodeError: Invalid value (at line 3, column 9)",
    ]
    log = (build_noise(500) + "\n".join(traceback) + "\n" + build_noise(500)).encode()
    excerpt = make_excerpt(log, 20, 4000)
    assert_faithful(excerpt, log)
    start = excerpt.lines.index(traceback[0])
    assert excerpt.lines[start : start + len(traceback)] == traceback
    assert MARK.match(excerpt.lines[0]) and excerpt.lines[0].endswith("earlier lines)")


@pytest.mark.parametrize(
    ("log", "must_show"),
    [
        (
            CARGO_TEST_LOG,
            [
                "thread 'tests::bad' (27859) panicked at src/lib.rs:7:24:",
                "assertion `left == right` failed: math is broken",
                "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out;"
                " finished in 0.21s",
                "error: test failed, to rerun pass `--lib`",
            ],
        ),
        (
            CARGO_BUILD_LOG,
            [
                "error[E0308]: mismatched types",
                " --> src/lib.rs:1:50",
                "error: could not compile `shop` (lib) due to 1 previous error",
            ],
        ),
        (
            GO_TEST_LOG,
            [
                "--- FAIL: TestAdd (0.00s)",
                "    calc_test.go:18: Add(2, 2) = 5; want 4",
                "FAIL\texample.com/calc\t0.004s",
            ],
        ),
        (
            NPM_LOG,
            [
                "SyntaxError: Expected property name or '}' in JSON at position 1",
                "    at parse (/home/dev/shop/test/run.js:3:33)",
                "npm ERR! code ELIFECYCLE",
            ],
        ),
        (
            MAKE_LOG,
            [
                "b.c:1:23: error: expected expression before ';' token",
                "b.c:1:32: error: 'y' undeclared (first use in this function)",
                "make: *** [Makefile:4: b.o] Error 1",
            ],
        ),
        (
            JEST_LOG,
            [
                "  ● sum › adds numbers",
                "    Expected: 4",
                "    Received: 5",
                "Tests:       1 failed, 11 passed, 12 total",
            ],
        ),
    ],
    ids=["cargo-test", "cargo-build", "go", "npm", "make", "jest"],
)
def test_runner_failures_in_noise(log: str, must_show: list[str]) -> None:
    data = with_noise(log)
    excerpt = make_excerpt(data, 20, 2000)
    assert len(excerpt.lines) <= 20
    assert size(excerpt) <= 2000
    assert_faithful(excerpt, data)
    for line in must_show:
        assert line in excerpt.lines
    assert excerpt.lines[0].endswith("earlier lines)")
    # on a tight budget the error itself still beats the tail
    tight = make_excerpt(data, 8, 1000)
    assert len(tight.lines) <= 8 and size(tight) <= 1000
    assert must_show[0] in tight.lines


def test_gap_mark_convention() -> None:
    lines = [f"step {i}: ok" for i in range(300)]
    lines[150] = "error: disk quota exceeded while writing cache"
    log = ("\n".join(lines) + "\n").encode()
    excerpt = make_excerpt(log, 12, 6000)
    assert excerpt.total == 300
    assert (
        excerpt.lines
        == [
            "… (148 earlier lines)",
            *lines[148:155],  # the error, 2 lines before it and 4 after
            "… (142 lines)",
            *lines[297:],  # the tail fills the rest
        ]
    )
    assert excerpt.shown == 10
    silent = make_excerpt(("\n".join(f"step {i}: ok" for i in range(300)) + "\n").encode(), 5, 6000)
    assert silent.lines == [
        "… (296 earlier lines)",
        "step 296: ok",
        "step 297: ok",
        "step 298: ok",
        "step 299: ok",
    ]


def test_a_gap_of_one_line_shows_the_line_instead() -> None:
    log = with_noise(pytest_log(300), before=300)
    for max_lines in (10, 20, 40, 60):
        excerpt = make_excerpt(log, max_lines, 100_000)
        assert not any(MARK.match(line) and line.startswith("… (1 ") for line in excerpt.lines)


@pytest.mark.parametrize("max_lines", [1, 2, 3, 5, 8, 13, 40, 60])
@pytest.mark.parametrize("max_bytes", [20, 60, 200, 700, 2500, 6000])
def test_bounds_hold_for_every_budget(max_lines: int, max_bytes: int) -> None:
    log = with_noise(pytest_log(400), before=400)
    excerpt = make_excerpt(log, max_lines, max_bytes)
    assert len(excerpt.lines) <= max_lines
    assert size(excerpt) <= max_bytes
    if excerpt.lines:  # empty only when not even one gap mark fits
        assert_faithful(excerpt, log)
    else:
        assert max_bytes < len("… (1200 lines)".encode())


def test_an_over_long_line_is_cut_with_a_marker() -> None:
    minified = "TypeError: undefined is not a function at " + "a.b(c,d);" * 20_000
    log = ("build start\n" + minified + "\nbuild failed\n").encode()
    excerpt = make_excerpt(log, 60, 6000)
    assert size(excerpt) <= 6000
    (cut,) = [line for line in excerpt.lines if line.startswith("TypeError")]
    m = re.fullmatch(r"(.*) … \(\+(\d+) bytes\)", cut)
    assert m and minified.startswith(m.group(1))
    assert len(m.group(1)) + int(m.group(2)) == len(minified)  # N counts what was left out
    assert excerpt.lines[-1] == "build failed"
    tiny = make_excerpt(log, 60, 100)
    assert size(tiny) <= 100 and tiny.lines


def test_a_short_log_is_shown_whole() -> None:
    log = b"\x1b[31mError: config not found\x1b[0m\npassword=hunter2\n"
    assert make_excerpt(log, 60, 6000) == Excerpt(
        ["Error: config not found", "password=[REDACTED:password]"], 2, 2
    )


def test_empty_and_undecodable_logs() -> None:
    assert make_excerpt(b"", 60, 6000) == Excerpt([], 0, 0)
    excerpt = make_excerpt(b"caf\xe9 \xff\xfe error: bad byte\n", 60, 6000)
    assert excerpt.lines == ["caf\ufffd \ufffd\ufffd error: bad byte"]


def test_private_key_in_a_log_is_redacted_line_by_line() -> None:
    body = "MIIEpAIBAAKCAQEA75Y2aS1lKx0abcdefghijklmnopqrstuvwxyz0123456789+/"
    log = "\n".join(
        ["$ cat deploy/key", "-----BEGIN RSA PRIVATE KEY-----", body, body, "-----END RSA PRIVATE KEY-----"]
        + ["error: permission denied (publickey)"]
    ).encode()
    excerpt = make_excerpt(log, 60, 6000)
    assert excerpt.total == 6
    assert not any(body in line for line in excerpt.lines)
    assert excerpt.lines[1:5] == ["[REDACTED:private-key]"] * 4


def test_excerpt_is_the_same_under_any_hash_seed(tmp_path: Path) -> None:
    log_file = tmp_path / "check.log"
    log_file.write_bytes(with_noise(pytest_log(500), before=500))
    code = (
        "import sys; from gitpilot.checks.excerpt import make_excerpt;"
        "e = make_excerpt(open(sys.argv[1], 'rb').read(), 40, 3000); print('\\n'.join(e.lines))"
    )
    root = Path(__file__).resolve().parents[1]
    outs = {
        subprocess.run(
            [sys.executable, "-c", code, str(log_file)],
            capture_output=True,
            check=True,
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
        ).stdout
        for seed in ("0", "1", "12345")
    }
    assert len(outs) == 1
    assert b"ZeroDivisionError" in outs.pop()


# --- count_passed ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "count"),
    [
        ("===== 93 passed in 1.20s =====", 93),
        (f"{RED}== {BOLD}1 failed{RESET}, {GREEN}31 passed{RESET}, 2 skipped in 0.66s =={RESET}", 31),
        ("........\n8 passed, 1 warning in 0.05s\n", 8),
        ("============ 4 passed in 0.1s ============\n...\n============ 6 passed in 0.2s ============", 10),
        (CARGO_TEST_LOG, 2),
        (
            "test result: ok. 5 passed; 0 failed; 0 ignored\n"
            "test result: ok. 2 passed; 0 failed; 0 ignored\n"
            "test result: ok. 0 passed; 0 failed; 0 ignored\n",
            7,
        ),
        (JEST_LOG, 11),
        ("Tests:       5 passed, 5 total\n", 5),
        (" Test Files  3 passed (3)\n      Tests  42 passed (42)\n", 42),
        ("  12 passing (34ms)\n  1 pending\n", 12),
        (
            "....\n" + "-" * 70 + "\nRan 4 tests in 0.001s\n\nOK\n",
            4,
        ),
        ("Ran 10 tests in 0.2s\n\nOK (skipped=3)\n", 7),
        ("Ran 10 tests in 0.2s\n\nFAILED (failures=1, errors=2)\n", 7),
        (" 14 pass\n 0 fail\n", 14),
        (
            "=== RUN   TestA\n--- PASS: TestA (0.00s)\n"
            "=== RUN   TestB\n--- PASS: TestB (0.00s)\nok  \tm\t0.1s\n",
            2,
        ),
        ("ok | 6 passed | 0 failed (40ms)", 6),
        ("ok  \texample.com/calc\t0.004s\n", None),
        ("Build succeeded.\n", None),
        ("", None),
    ],
)
def test_count_passed(log: str, count: int | None) -> None:
    assert count_passed(log) == count
