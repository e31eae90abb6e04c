"""``python -m gitpilot`` runs the command line, as the ``git-pilot`` script does."""

from gitpilot.cli import entry

entry()
