"""Tasks: an agent session started, resumed and stopped for one task, with its record in git.

A task's record is the ref ``refs/pilot/tasks/<task id>`` (``gitpilot.store.tasks``). Modules:
``run`` (``git pilot run`` and ``resume``, Delta Resume), ``delta`` (what a session was given and
what changed since), ``prompts`` (what git pilot says to a session), ``launch`` (running and
logging agent command lines), ``session`` (``session.json``: sessions and launches), ``state``
(``state.json``: compact orchestration facts), ``control`` (``stop`` and ``status``),
``current`` (the worktree's current task).
"""
