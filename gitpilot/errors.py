"""The errors a user can cause, each mapped to an exit code by the CLI's error handler."""

from __future__ import annotations


class PilotError(Exception):
    """A problem the user can fix: printed as one line, exit code 1."""

    exit_code = 1


class UsageError(PilotError):
    """The command line itself is wrong: exit code 2."""

    exit_code = 2


class RecordLost(PilotError):
    """A record could not be written for a reason the user must see (a stale ref lock, a
    signature that could not be made): the check command exits 1 even when every check passed."""


class StaleLock(RecordLost):
    """A ref's lock file outlived the git that made it: nothing can update that ref until it goes."""
