"""One line of ``git pilot doctor``: what was found, and whether (and how) it needs fixing.

Its own module so that the sections a capability adds (``gitpilot/share/health.py``,
``gitpilot/agents/health.py``) and the doctor that gathers them both import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    area: str
    text: str
    needs_fix: bool = False
    fix: str = ""

    def to_json(self) -> dict[str, object]:
        return {"area": self.area, "text": self.text, "needs_fix": self.needs_fix, "fix": self.fix}
