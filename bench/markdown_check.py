"""The block scanner against markdown-it-py on every Markdown file of the corpus mirrors.

``python -m bench markdown-check --mirror-root /work/.mirror``: every ``*.md``, ``*.mdx`` and
``*.markdown`` blob in the tree of each mirror's HEAD (``<root>/<owner>+<name>/repo``, bare git
directories; read with ``git cat-file``), decoded as UTF-8 (files that are not are counted and
skipped, as the capsule skips them). For each file the structure ``markdown.parse`` reads (its
top-level headings and code ranges) is worked out by ``blocks.block_structure`` and by
markdown-it-py (``markdown.reference_structure``), once for the text as it is and once as
``parse`` hands it over (front matter blanked): the maps are made from these alone. With
``--nested``, also each file inside a block quote and inside a list item (its code ranges then
found at depth). Prints how many files were compared, every difference, and the time each took.
Exit 1 on any difference.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

_EXTENSIONS = (".md", ".mdx", ".markdown")


def _blobs(git_dir: Path) -> list[tuple[str, bytes]]:
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "HEAD"], capture_output=True, check=True
    ).stdout.decode("utf-8", "surrogateescape")
    wanted: list[tuple[str, str]] = []
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        _mode, kind, oid = meta.split()
        if kind == "blob" and path.lower().endswith(_EXTENSIONS):
            wanted.append((path, oid))
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(oid + "\n" for _, oid in wanted).encode(),
        capture_output=True,
        check=True,
    ).stdout
    blobs: list[tuple[str, bytes]] = []
    pos = 0
    for path, _oid in wanted:
        nl = out.index(b"\n", pos)
        size = int(out[pos:nl].split()[2])
        blobs.append((path, out[nl + 1 : nl + 1 + size]))
        pos = nl + 2 + size
    return blobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench markdown-check")
    parser.add_argument("--mirror-root", type=Path, required=True)
    parser.add_argument("--show", type=int, default=20, help="differences printed in full (default 20)")
    parser.add_argument("--nested", action="store_true",
                        help="also each file inside a block quote and inside a list item (code ranges at depth)")
    args = parser.parse_args(argv)

    from gitpilot.context import markdown
    from gitpilot.context.blocks import block_structure

    files = skipped = differ = nbytes = 0
    t_scan = t_ref = 0.0
    for mirror in sorted(p for p in args.mirror_root.iterdir() if (p / "repo").is_dir()):
        for path, data in _blobs(mirror / "repo"):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                skipped += 1
                continue
            files += 1
            nbytes += len(data)
            lines = markdown.split_lines(text)
            first = markdown._front_matter_end(lines)
            body = "".join("\n" if i < first else ln for i, ln in enumerate(lines)) if first else text
            variants = [("", text)] + ([(" (front matter blanked)", body)] if first else [])
            if args.nested:
                variants += [(" (in a block quote)", _quoted(text)), (" (in a list item)", _item(text))]
            for how, variant in variants:
                t0 = time.process_time()
                got = block_structure(variant)
                t1 = time.process_time()
                want = markdown.reference_structure(variant)
                t2 = time.process_time()
                t_scan += t1 - t0
                t_ref += t2 - t1
                if (got[0], sorted(got[1])) != (want[0], sorted(want[1])):
                    differ += 1
                    if differ <= args.show:
                        print(f"DIFFERENT {mirror.name}:{path}{how}")
                        print(f"  headings: scanner {len(got[0])}, markdown-it {len(want[0])}; "
                              f"first difference {_first_difference(got[0], want[0])}")
                        print(f"  code: scanner {sorted(got[1])[:5]}..., markdown-it {sorted(want[1])[:5]}...")
    print(f"{files} Markdown files compared ({nbytes:,} bytes; {skipped} not UTF-8, skipped) in "
          f"{len([p for p in args.mirror_root.iterdir() if (p / 'repo').is_dir()])} mirrors: "
          f"{differ} differ")
    print(f"block structure CPU: scanner {t_scan:.2f} s, markdown-it {t_ref:.2f} s")
    return 1 if differ else 0


def _quoted(text: str) -> str:
    return "".join("> " + line for line in text.splitlines(keepends=True))


def _item(text: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(("- " if i == 0 else "  ") + line for i, line in enumerate(lines))


def _first_difference(a: list[tuple[int, int, str]], b: list[tuple[int, int, str]]) -> str:
    for x, y in zip(a, b, strict=False):
        if x != y:
            return f"scanner {x!r} / markdown-it {y!r}"
    return f"one has {abs(len(a) - len(b))} more: {(a[len(b):] or b[len(a):])[:2]!r}"
