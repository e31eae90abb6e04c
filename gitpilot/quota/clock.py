"""The current time for quota decisions, injectable for tests through ``GIT_PILOT_NOW``.

``GIT_PILOT_NOW`` holds epoch seconds or an ISO 8601 time with a zone; ``@/path/file`` reads
that value from a file on every call, so a test can move a running helper's clock forward.
Unset, the real clock is used.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

ENV = "GIT_PILOT_NOW"


def now() -> datetime:
    """The current time (timezone-aware, UTC), or the injected one."""
    raw = os.environ.get(ENV, "").strip()
    if raw.startswith("@"):
        try:
            raw = Path(raw[1:]).read_text(encoding="utf-8").strip()
        except OSError:
            raw = ""
    return parse(raw) if raw else datetime.now(UTC)


def parse(raw: str) -> datetime:
    """Epoch seconds or ISO 8601 with a zone, as an aware UTC datetime."""
    try:
        return datetime.fromtimestamp(float(raw), UTC)
    except ValueError:
        pass
    value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"{ENV} needs a zone: {raw}")
    return value.astimezone(UTC)


def injected() -> bool:
    """True when a test injected the clock (the helper then polls quickly)."""
    return bool(os.environ.get(ENV, "").strip())
