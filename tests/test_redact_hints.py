"""The credential formats are looked for on the lines that hold one of their literals; those lines
are found by plain byte searches, and must be exactly the lines the literals' pattern finds."""

from __future__ import annotations

import random
import re

from gitpilot import redact as R

# The pre-filter as it was written as a pattern (re.ASCII: "secret" in ASCII cases only).
QUICK = re.compile(
    r"(?:gh[pousr]|github_pat|npm|sk|rk|whsec|hf)_|(?:glpat|sk|xapp|pypi)-"
    r"|AKIA|ASIA|AIza|xox|eyJ|hooks\.slack\.com|(?i:secret)",
    re.ASCII | re.MULTILINE,
)


def _pattern_lines(s: str) -> list[tuple[int, int]]:
    out = []
    pos = 0
    while (hit := QUICK.search(s, pos)) is not None:
        start = s.rfind("\n", 0, hit.start()) + 1
        end = s.find("\n", hit.end())
        end = len(s) if end < 0 else end
        out.append((start, end))
        pos = end + 1
    return out


PIECES = ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "npm_", "sk_", "rk_", "whsec_", "hf_", "glpat-",
          "sk-", "xapp-", "pypi-", "AKIA", "ASIA", "AIza", "xox", "eyJ", "hooks.slack.com", "secret", "SECRET", "Secret", "sEcReT", "\u017fecret", "secre", "ecret", "sk", "_", "-",
          "gh_", "ghx_", "AKI", "x", " ", "\n", "\r\n", "\u00e9", "\u2014", "\U0001f600", "\ud800", "?",
          "token=", "github_pat", "hooks.slack", ".com", "eY", "J"]


def test_the_hint_lines_are_the_lines_the_pattern_finds() -> None:
    rng = random.Random(5)
    texts = ["", "secret", "\n\nsecret\n", "a\nsk_\nb", "no hints here\n", "\u00e9secret\u00e9\nAKIA"]
    texts += ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    for text in texts:
        assert list(R._hint_lines(text, R._FORMAT_HINTS, R._FORMAT_HINTS_ANY_CASE)) == _pattern_lines(text), text
        assert R._FORMATS_QUICK.search(text) is None or QUICK.search(text) is not None
        assert (QUICK.search(text) is None) == (R._FORMATS_QUICK.search(text) is None)


def test_a_token_is_still_found_on_a_line_of_its_own_and_among_others() -> None:
    token = "ghp_" + "a1B2" * 9
    for text in (token, f"x\n{token}\ny", f"\u00e9 {token} \u00e9", f"one\r\ntwo {token}\r\n"):
        assert R.contains_secret(text)
        assert token not in R.redact(text)
    assert not R.contains_secret("a secret is kept in the vault\n")
