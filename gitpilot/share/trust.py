"""Whose check records count in this clone: the clone's own git config, narrowed by the committed file.

Trust lives in ``git config pilot.trust`` (several values: remote names, and ``signed``),
where no branch can change it. The committed ``.gitpilot.toml`` ``[share] trust`` may only
narrow it: when set, the values trusted are those in both. Records made here always count.
A record from a remote counts when that remote is trusted, or, with ``signed`` trusted,
when its ssh signature verifies against ``gpg.ssh.allowedSignersFile`` (gitpilot/share/signing.py).

Everything the check needs is read with one ``git config`` call (gitpilot/share/settings.py; the
cache-hit path pays it).
"""

from __future__ import annotations

from gitpilot.checks.records import UNTRUSTED, Record
from gitpilot.config import Config
from gitpilot.repo import Repo
from gitpilot.share.settings import Settings, read_settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitpilot.share.signing import Verifier

SIGNED = "signed"


class Trust:
    """The policy ``judge`` asks: does this record count here, and if not, why not.

    The clone's settings are read on first use: a check whose records were all made here
    (the usual cache hit) pays no ``git config`` call.
    """

    def __init__(self, repo: Repo, settings: Settings | None, committed: list[str] | None) -> None:
        self.repo = repo
        self._settings = settings
        self.committed = None if committed is None else frozenset(committed)
        self._verifier: Verifier | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = read_settings(self.repo)
        return self._settings

    @property
    def _allowed(self) -> frozenset[str]:
        clone = frozenset(self.settings.trust)
        return clone if self.committed is None else clone & self.committed

    @property
    def narrowed(self) -> frozenset[str]:
        """What the committed file took away from this clone's trust (named by --explain)."""
        return frozenset(self.settings.trust) - self._allowed

    @property
    def signed(self) -> bool:
        return SIGNED in self._allowed

    @property
    def remotes(self) -> frozenset[str]:
        return frozenset(v for v in self._allowed if v != SIGNED)

    def refusal(self, record: Record, tree: str) -> tuple[str, str] | None:
        remote = record.remote
        if remote is None or remote in self.remotes:
            return None
        if self.signed:
            why = self.verifier().why_not(record, tree)
            return None if why is None else (remote, why)
        if remote in self.narrowed:
            return remote, f"this clone trusts {remote}, but .gitpilot.toml [share] trust leaves it out"
        if record.sig is not None and SIGNED in self.narrowed:
            return remote, "signed, but .gitpilot.toml [share] trust leaves out signed"
        return remote, UNTRUSTED

    def verifier(self) -> Verifier:
        if self._verifier is None:
            from gitpilot.share.signing import Verifier

            self._verifier = Verifier(self.repo, self.settings)
        return self._verifier

    def describe(self) -> str:
        """One line: what counts here (for doctor and share pull)."""
        parts = ["records made here"]
        if self.remotes:
            parts.append("records from " + ", ".join(sorted(self.remotes)))
        if self.signed:
            parts.append("records signed by a key in gpg.ssh.allowedSignersFile")
        text = "; ".join(parts)
        if self.narrowed:
            text += f" (.gitpilot.toml [share] trust leaves out {', '.join(sorted(self.narrowed))})"
        return text


def load_trust(repo: Repo, cfg: Config, settings: Settings | None = None) -> Trust:
    committed = list(cfg.get("share.trust")) if cfg.is_set("share.trust") else None
    return Trust(repo, settings, committed)
