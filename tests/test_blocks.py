"""The block scanner gives the headings and code blocks markdown-it-py gives, on the hard cases.

``blocks.block_structure`` replaces markdown-it-py's block parse in ``markdown.parse``; the
reference (``markdown.reference_structure``) is markdown-it-py itself, run here side by side.
Each case is a construct where a heading is, or is not, a heading only by a block rule's detail.
"""

from __future__ import annotations

import random

import pytest

from gitpilot.context.blocks import block_structure
from gitpilot.context.markdown import parse, reference_structure

CASES = {
    "setext after a list item (lazy continuation, then a rule)": "- item\ntext\n---\n# after\n",
    "setext after a list and a blank line": "- item\n\nTitle\n---\n",
    "setext of two lines": "Line one\nline two\n===\nbody\n",
    "setext underline indented four is a continuation": "Title\n    ---\n# h\n",
    "a rule with no paragraph above is no setext": "---\n# h\n- a\n---\n",
    "fence inside a list item": "- a\n  ```\n  # not a heading\n  ```\n# a heading\n",
    "fence in a list item ended by an outdented line": "- a\n  ```\n# heading or code?\n",
    "fence closed only by a long enough run": "````\n```\n# in code\n````\n# out\n",
    "unclosed fence runs to the end": "# before\n~~~\n# inside\n",
    "backtick fence with a backtick in its info is text": "``` a`b\n# h\n```\n",
    "html block of a block tag until a blank line": "<div>\n# not a heading\n</div>\n\n# a heading\n",
    "html comment across lines": "<!--\n# no\n-->\n# yes\n",
    "html details with a blank line inside": "<details>\n<summary>x</summary>\n\n# inside details\n\n</details>\n",
    "an inline tag cannot end a paragraph": "text\n<span>\n# h\n",
    "an inline tag alone starts an html block": "<span>\n# not a heading\n\n# heading\n",
    "script block to its closing tag": "<script>\n\n# in script\n</script>\n# after\n",
    "lazy continuation of a block quote": "> quote\ncontinued\n# heading\n",
    "lazy line cannot make a setext heading in a quote": "> a\nb\n---\n",
    "headings in a block quote are not top level": "> # quoted\n> Title\n> ===\n# top\n",
    "a lazy line in a quote is not a table header": "> a\nb|c\n> -|-\n>     code\n",
    "a quote ended by a blank line": "> a\n\n# h\n",
    "nested quotes and lists": "> - a\n>   # in item\n> - b\n# out\n",
    "tab after the heading marker": "#\theading\n",
    "tab-indented code": "\t# code\n# not code\n",
    "tab after a list marker": "-\tlist\n\t# in the item\n# top\n",
    "tab after a quote marker": ">\t# quoted\n>\t\tcode\n# top\n",
    "space and tab before a fence": "  \t```\n# x\n```\n",
    "table then a heading": "| a | b |\n|---|---|\n| 1 | 2 |\n# h\n",
    "a heading line with a pipe over a delimiter row is a table": "# a | b\n---|---\n# real\n",
    "a table row count that does not match": "a | b\n-|-|-\n# h\n",
    "table ended by a blank line": "a|b\n-|-\nc|d\n\n# h\nTitle\n---\n",
    "table inside a list": "- a | b\n  --|--\n  c | d\n# h\n",
    "escaped pipes in a table": "a \\| b | c\n--|--\n# h\n",
    "reference definition then equals signs": "[foo]: /url\n===\n# h\n",
    "reference definition with a title on the next line": "[foo]: /url\n'title'\n# h\n",
    "reference definition over lines": "[a]:\n/url\n---\n",
    "reference definition with an open title": "[foo]: /url 'title\ncontinued'\n# h\n",
    "a javascript destination is no definition": "[a]: javascript:alert(1)\n===\n[b]: JavaScript:x\n---\n",
    "an entity-spelled javascript destination is no definition": "[a]: &#106;avascript:x\n===\n",
    "data destinations: images only": "[a]: data:image/png;base64,xx\n===\n[b]: data:text/html,x\n---\n",
    "ampersands in destinations": "[a]: /u?x=1&y=2\n===\n[b]: /u&amp;x\n---\n[c]: &#x6A;avascript:x\n===\n",
    "non-ASCII destinations": "[a]: 최적화된\n===\n[b]: \u00a0javascript:x\n---\n[c]: <\tjavascript:x>\n===\n",
    "an empty angle destination": "[a]: <>\n===\n[b]: <java script:x>\n---\n",
    "a title in parentheses and escapes": "[a]: /u (ti\\)tle)\n===\n[b]: /u 'it\\'s'\n---\n",
    "garbage after a title": "[a]: /u 'title' junk\n===\n[b]: /u\n'title' junk\n---\n",
    "a title left open to the next blank line": "[a]: /u 'open\n\n# h\n",
    "a label of only spaces": "[ ]: /u\n===\n",
    "unbalanced parentheses in a destination": "[a]: /u(x\n===\n[b]: /u(x)y\n---\n",
    "a link at the start of a line is text": "[text](url)\nTitle\n---\n",
    "a label with a bracket is no definition": "[a[b]: /url\n===\n",
    "indented line after a paragraph is a continuation": "para\n    # not code\n# h\n",
    "ordered list other than 1 cannot interrupt a paragraph": "text\n2. not a list\n===\n",
    "ordered list 1 interrupts a paragraph": "text\n1. a list\n===\n",
    "an empty item cannot interrupt a paragraph": "text\n-\n# h\n",
    "empty list item then its content": "-\n  foo\n# h\n",
    "list item with four spaces after the marker": "-     code\n  # heading in item\n# top\n",
    "nested lists": "1. a\n   - b\n     - c\n       # deep\n2. d\n# top\n",
    "a list item at a code indent": "- a\n\n      code\n# h\n",
    "seven hashes are text": "####### seven\n# one\n",
    "hashtags are text": "#hashtag\n#\n# \n## closing ##\n### closing#\n",
    "headings with unicode spaces": "# a\u00a0 b\u2003c\n",
    "crlf and lone cr": "# a\r\ntext\r\n---\r\n# b\rc\r",
    "nul characters": "# a\0b\n\0\n===\n",
    "a last line of only spaces": "# h\n   ",
    "deep quotes past the nesting limit": "> " * 25 + "# deep\n# top\n",
    "deep lists past the nesting limit": "".join("  " * i + "- x\n" for i in range(15)) + "# top\n",
    "hr made of spaced stars": "text\n* * *\n# h\n",
    "underscores are a rule, not a setext line": "Title\n___\n",
    "a heading ends a paragraph": "para\n# h\npara\n## h2\n",
}


@pytest.mark.parametrize("text", list(CASES.values()), ids=list(CASES))
def test_the_scanner_finds_what_markdown_it_finds(text: str) -> None:
    assert block_structure(text) == reference_structure(text)


def test_what_a_reader_sees_in_the_map() -> None:
    smap = parse(CASES["fence inside a list item"])
    assert [(s.level, s.title) for s in smap.sections] == [(0, ""), (1, "a heading")]
    smap = parse(CASES["setext after a list and a blank line"])
    assert [(s.level, s.title) for s in smap.sections] == [(0, ""), (2, "Title")]
    # after front matter and a quoted heading (no paragraph to continue lazily), a setext heading
    smap = parse("---\ntitle: x\n---\n> # quoted\nTitle\n===\n")
    assert [(s.level, s.title, s.start) for s in smap.sections] == [(0, "", 4), (1, "Title", 5)]


# Lines that change what the lines after them are: mixed at random into many small documents.
_PIECES = [
    "# Heading", "## Two #", "Title", "===", "---", "- item", "* item", "+ item", "1. one", "2) two",
    "  - nested", "    indented", "\tindented by a tab", "> quote", ">> deeper", "> - quoted item", "",
    "", "text", "more text", "```", "```js", "~~~", "````", "   ```", "<div>", "</div>", "<!--", "-->",
    "<span>", "<pre>", "</pre>", "[ref]: /url", "[ref]:", "  /url 'title'", "| a | b |", "|---|---|",
    "a | b", "--|--", "***", "* * *", "  # spaced", "#", "- ```", "  ```", ">", "- # in item",
    "<?php", "?>", "\t- tab item", "-\ttab", "<details>", "[x]: <a b> \"t\"", "[y]: javascript:z",
    "[z]: /u (t", "t)", "'t'", "[w]:", "[v]: &amp;x",
]


def test_random_documents_of_tricky_lines() -> None:
    rng = random.Random(12)
    for _ in range(600):
        text = "\n".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 14))) + rng.choice(["", "\n"])
        assert block_structure(text) == reference_structure(text), repr(text)
