"""Whether a process is still running, for the records that name one (a session, a scratch ref)."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` runs: it exists (ours or another user's) and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited: it runs nothing any more
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
