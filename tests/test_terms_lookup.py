"""A file's term statistics give back each token's postings, whichever tokens a task asks for and
in whatever order: the first and the last token of the file, tokens that are a prefix or a suffix
of others, and words the file does not hold."""

from __future__ import annotations

import random

from gitpilot.context.terms import DocTerms


def test_every_token_gives_its_own_postings_and_no_other_word_gives_any() -> None:
    rng = random.Random(7)
    for _ in range(200):
        words = rng.sample(["a", "ab", "abc", "b", "ba", "cab", "cache", "cached", "x1", "é", "ß", "日本"],
                           rng.randint(0, 12))
        postings = {w: [p for pos in sorted(rng.sample(range(40), rng.randint(1, 5)))
                        for p in (pos, rng.randint(1, 9))] for w in words}
        fresh = DocTerms.of(postings, [1] * 40, [[] for _ in range(40)], [0] * 40, {})
        back = DocTerms.from_bytes(fresh.to_bytes())  # as a task reads it from the cache
        assert back is not None
        asked = [*words, "", "c", "abcd", "\n", "a\nab", "zz"]
        rng.shuffle(asked)
        for w in asked:
            for dt in (fresh, back):
                assert dt.has(w) == (w in postings), w
                assert list(dt.post(w)) == postings.get(w, []), w
