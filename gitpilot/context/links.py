"""Which documents the instruction and rule files point to.

The maintainers' own pointers ("see `docs/dev/testing.md`", ``[the ADRs](architecture/)``) say
which documents a contributor is expected to read: a document linked from an instruction file,
a nested instruction file, a rule file or a contributing guide is a candidate that counts more
(``features.linked``). Relative links resolve against the linking file's directory, then the
root; a link to a directory points at every candidate below it; URLs point nowhere.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping

_TARGET = re.compile(
    r"\]\(\s*<?([^()\s<>#]+)"  # [text](target)
    r"|`([\w./-]+\.(?:md|mdx|markdown))`"  # `docs/x.md`
    r"|(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.mdx?)(?![\w/])"  # docs/x.md in prose
    r"|(?<![\w])@([\w./-]+\.mdx?)"  # @import
)


def linked_documents(pointers: Mapping[str, str], candidates: Iterable[str]) -> frozenset[str]:
    """The candidates that any of ``pointers`` (path -> text of an instruction or rule file) links to."""
    cands = sorted(set(candidates))
    have = set(cands)
    out: set[str] = set()
    for src, text in sorted(pointers.items()):
        base = posixpath.dirname(src)
        for m in _TARGET.finditer(text):
            target = next(g for g in m.groups() if g)
            if "://" in target or target.startswith(("mailto:", "#")):
                continue
            for rel in _resolve(base, target):
                if rel in have and rel != src:
                    out.add(rel)
                    break
                prefix = rel.rstrip("/") + "/"
                below = [c for c in cands if c.startswith(prefix)] if rel else []
                if below:
                    out.update(c for c in below if c != src)
                    break
    return frozenset(out)


def _resolve(base: str, target: str) -> list[str]:
    """Where a link may point: beside the linking file, then from the root."""
    target = target.strip()
    if target.startswith("/"):
        tries = [target.lstrip("/")]
    else:
        tries = [posixpath.join(base, target), target] if base else [target]
    out = []
    for t in tries:
        norm = posixpath.normpath(t)
        if not norm.startswith("..") and norm not in (".", ""):
            out.append(norm)
    return out
