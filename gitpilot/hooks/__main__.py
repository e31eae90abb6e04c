"""``python -m gitpilot.hooks <event> ...``: the same as ``git pilot hook <event> ...``, without click."""

from __future__ import annotations

import sys

from gitpilot.hooks.run import main

sys.exit(main(sys.argv[1:]))
