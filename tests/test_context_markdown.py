"""Section maps: real Markdown structure, exact line ranges and hashes, nothing but headings kept."""

from __future__ import annotations

import hashlib

from gitpilot.context.markdown import SectionMap, parse, range_text, split_lines

DOC = """---
title: front matter
# not a heading
---
Intro before any heading.

# Guide

Some text.

```sh
# a comment in a fence, not a heading
```

    # indented code, not a heading

Setext section
--------------

Body of setext.

## Deep

Deep body.

> # quoted, not a heading

# Second
Last line.
"""


def _titles(smap: SectionMap) -> list[tuple[int, str]]:
    return [(s.level, s.title) for s in smap.sections]


def test_headings_come_from_the_parser_not_from_hash_marks() -> None:
    smap = parse(DOC)
    assert _titles(smap) == [(0, ""), (1, "Guide"), (2, "Setext section"), (2, "Deep"), (1, "Second")]


def test_front_matter_is_skipped_and_the_preamble_starts_after_it() -> None:
    smap = parse(DOC)
    pre = smap.sections[0]
    lines = split_lines(DOC)
    assert range_text(lines, pre.start, pre.end) == "Intro before any heading.\n"


def test_ranges_nest_and_hold_the_exact_text_with_its_hash() -> None:
    smap = parse(DOC)
    lines = split_lines(DOC)
    guide = smap.sections[1]
    text = range_text(lines, guide.start, guide.end)
    assert text.startswith("# Guide\n") and text.endswith("> # quoted, not a heading\n")
    assert guide.sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert range_text(lines, guide.start, guide.body_end).rstrip().endswith("# indented code, not a heading")
    assert smap.kids(guide.pos) == (2, 3)
    assert smap.heading_path(3) == ["Guide", "Deep"]
    second = smap.sections[4]
    assert range_text(lines, second.start, second.end) == "# Second\nLast line.\n"


def test_crlf_and_lone_cr_keep_exact_bytes() -> None:
    doc = "# A\r\nline one\r\n\r\n# B\rtext\r"
    smap = parse(doc)
    lines = split_lines(doc)
    assert "".join(lines) == doc
    a, b = smap.sections
    assert range_text(lines, a.start, a.end) == "# A\r\nline one\r\n"
    assert range_text(lines, b.start, b.end) == "# B\rtext\r"


def test_the_note_body_round_trips_and_holds_no_body_text() -> None:
    smap = parse(DOC)
    body = smap.to_json()
    assert b"Deep body" not in body and b"Some text" not in body
    assert SectionMap.from_json(body) == smap
    assert SectionMap.from_json(b"{not json") is None
    assert SectionMap.from_json(b'{"v": 999}') is None


def test_always_blocks_are_found_outside_code_only() -> None:
    doc = (
        "# Rules\n\n<!-- pilot:always -->\nKeep this.\n<!-- /pilot:always -->\n\n"
        "```\n<!-- pilot:always -->\nexample only\n```\n\n<!-- autopilot:always -->\nLegacy block.\n"
    )
    smap = parse(doc)
    assert smap.always == ((3, 5), (12, 13))


def test_a_section_with_a_secret_is_flagged_and_loses_its_hashes() -> None:
    doc = "# Top\n\nok\n\n## Keys\n\nSECRET here\n\n## Fine\n\nfine\n"
    smap = parse(doc, lambda text: "SECRET" in text)
    top, keys, fine = smap.sections
    assert keys.withheld and keys.sha256 == ""
    assert top.sha256 == ""  # its subtree holds the secret
    assert not fine.withheld and fine.sha256


def test_always_markers_quoted_in_prose_tables_or_code_spans_are_text() -> None:
    from gitpilot.context.markdown import parse

    quoted = "# A\n\n| kind | a `<!-- pilot:always -->` block |\n\nSee `<!-- autopilot:always -->` here.\n\nrest\n"
    assert parse(quoted).always == ()
    real = "# A\n<!-- pilot:always -->\nkeep\n<!-- /pilot:always -->\nno\n"
    assert parse(real).always == ((2, 4),)
