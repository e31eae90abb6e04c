"""git hooks: install the POSIX sh shims (one template, ``gitpilot/templates/hook.sh``) and handle
the events they report.

``install`` writes the shims into the hooks directory git uses; ``run`` is what a shim calls
(``git pilot hook <event> ...``); ``jobs`` holds the detached work of the post-* events and
``prepush`` the pre-push gate and notes push. Importing this package is free: the shims
start Python only after their cheap exits, and import only what the event needs.
"""
