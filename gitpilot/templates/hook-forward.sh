#!/bin/sh
# git-pilot-hook: forward. Written by `git pilot hooks install`, which pointed core.hooksPath at
# git pilot's own directory because the one before was in the work tree (a hook manager's, such
# as husky's). git pilot has no part in this hook: the hook of the same name in that directory
# runs, under its own name and path, with the same arguments, stdin and exit status.
PILOT_CHAIN='@CHAIN@'
hook=$PILOT_CHAIN/${0##*/}
if [ -n "$PILOT_CHAIN" ] && [ -x "$hook" ]; then exec "$hook" "$@"; fi
exit 0
