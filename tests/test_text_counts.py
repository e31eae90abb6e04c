"""Token counting: the counts the term statistics store, the same tokens in the same order as a
word-by-word count, and the spelled-out forms of abbreviations wherever case-insensitive
matching finds them."""

from __future__ import annotations

import re
from collections import Counter

from gitpilot.context import text as T

TEXTS = [
    "",
    "Testing tests: the tested test runs, and runs again.",
    "buildCapsule build_capsule BuildCapsule build-capsule `build_capsule()` parseHTTPResponse",
    "It's the user's config — don't re-configure; configuration, configurations, configured.",
    "Ünïcode wörds, naïve café, 東京 テスト, and ASCII words; ÜBER über",
    "a b c 1 22 333 x_y _private __dunder__ e2e E2E end-to-end",
    "the the the of of and and and and",
    "streamText generateText streamText() streamObject useChat useChat useChat",
]


def _word_by_word(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for word, n in Counter(T._WORD.findall(text)).items():
        for t in T.word_tokens(word):
            counts[t] += n
    return counts


def test_token_counts_are_a_word_by_word_count_in_the_same_order() -> None:
    for text in TEXTS + [" ".join(TEXTS), "\n".join(reversed(TEXTS))]:
        got = T.token_counts(text)
        assert list(got.items()) == list(_word_by_word(text).items()), text
    assert T.token_counts("tests testing tested") == Counter({"test": 3})


_LONG = re.compile(T._LONG_RX.pattern, re.I)


def test_spelled_out_forms_are_found_as_the_pattern_finds_them() -> None:
    texts = [
        "End-to-End tests", "end to end", "CONTINUOUS INTEGRATION", "internationalisation and localization",
        "accessibility", "Kubernetes", "nothing here", "endless ends", "k8s",
        # outside ASCII, case-insensitive matching is wider than lower case: these still count
        "acce\u017f\u017fibility", "internat\u0131onalization", "\u212aubernetes",
    ]
    for text in texts:
        assert T.long_form_words(text) == [str(m.lastgroup) for m in _LONG.finditer(text)], text
    assert T.long_form_words("acce\u017f\u017fibility") == ["a11y"]
    assert T.tokens("End-to-end tests")[-1] == "e2e"
