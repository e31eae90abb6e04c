"""The clone's git config that trust and signing read, in one ``git config`` call.

``pilot.trust`` and ``pilot.sign``, and git's own signing keys (``gpg.format``,
``user.signingkey``, ``gpg.ssh.*``): the last value of a key wins, ``pilot.trust`` keeps
them all.
"""

from __future__ import annotations

from gitpilot.repo import Repo

_KEYS = ("pilot.trust", "pilot.sign", "gpg.format", "gpg.ssh.allowedsignersfile", "gpg.ssh.program",
         "gpg.ssh.revocationfile", "user.signingkey")
_PATTERN = r"^(pilot\.(trust|sign)|gpg\.format|gpg\.ssh\.(allowedsignersfile|program|revocationfile)" \
           r"|user\.signingkey)$"


class Settings:
    """The clone's git config that trust and signing read."""

    __slots__ = ("trust", "sign", "format", "signing_key", "allowed_signers", "program", "revocation")

    def __init__(self, values: dict[str, list[str]]) -> None:
        def last(key: str) -> str | None:
            got = values.get(key)
            return got[-1] if got else None

        self.trust = tuple(v.strip() for v in values.get("pilot.trust", []) if v.strip())
        self.sign = _truthy(last("pilot.sign"))
        self.format = (last("gpg.format") or "openpgp").lower()
        self.signing_key = last("user.signingkey") or None
        self.allowed_signers = last("gpg.ssh.allowedsignersfile") or None
        self.program = last("gpg.ssh.program") or "ssh-keygen"
        self.revocation = last("gpg.ssh.revocationfile") or None


def _truthy(value: str | None) -> bool:
    # git's booleans: a key with no "=" is true; so are yes/on/true/1.
    return value is not None and value.strip().lower() in ("", "true", "yes", "on", "1")


def read_settings(repo: Repo) -> Settings:
    proc = repo.git_proc("config", "-z", "--type=path", "--get-regexp", _PATTERN)
    values: dict[str, list[str]] = {}
    for item in proc.stdout.split(b"\0"):
        if not item:
            continue
        key, _, value = item.decode("utf-8", "surrogateescape").partition("\n")
        if key.lower() in _KEYS:
            values.setdefault(key.lower(), []).append(value)
    return Settings(values)
