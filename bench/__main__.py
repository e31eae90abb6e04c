"""Entry point for the benchmarks: ``python -m bench <name> [args]`` runs ``bench/<name>.py``'s ``main``.

Every benchmark compares git pilot with plain git on the same repository in the same run and
prints ratios; absolute times on shared machines are noise. See bench/README.md.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def _names() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    names = _names()
    if args:
        args[0] = args[0].replace("-", "_")  # (markdown-check runs bench/markdown_check.py)
    if not args or args[0] not in names:
        sys.stderr.write(f"usage: python -m bench {{{','.join(names)}}} [args]\n")
        return 2
    module = importlib.import_module(f"bench.{args[0]}")
    return int(module.main(args[1:]))


if __name__ == "__main__":
    raise SystemExit(main())
