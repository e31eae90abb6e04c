#!/bin/sh
# git-pilot-hook: @EVENT@. Written by `git pilot hooks install`; `git pilot hooks uninstall`
# removes it and puts back @EVENT@.legacy (the hook that was here before; it runs first). When
# core.hooksPath was a directory in the work tree, this script is in git pilot's own directory and
# PILOT_CHAIN names that directory: its @EVENT@ runs first, under its own name and path.
PILOT_EVENT=@EVENT@
PILOT_PYTHON='@PYTHON@'
PILOT_LIB='@LIB@'
PILOT_CHAIN='@CHAIN@'
status=0
prev=$0.legacy
if [ -n "$PILOT_CHAIN" ]; then prev=$PILOT_CHAIN/$PILOT_EVENT; fi
rebasing() {
    gd=${GIT_DIR:-.git}
    if [ -f "$gd" ]; then read -r gd <"$gd"; gd=${gd#gitdir: }; fi
    [ -d "$gd/rebase-merge" ] || [ -d "$gd/rebase-apply" ]
}
# Cheap exits before Python starts.
if [ "$PILOT_EVENT" = pre-push ]; then
    # Told to skip, a rebase in progress. The hook that was here before still runs, with the
    # same arguments and stdin; its exit status is ours.
    if [ "${GIT_PILOT_SKIP_HOOKS:-}" = 1 ] || rebasing; then
        if [ -x "$prev" ]; then exec "$prev" "$@"; fi
        exit 0
    fi
    if [ -x "$prev" ]; then
        # Both hooks read the pushed refs on stdin: keep a copy for git pilot.
        input=$(mktemp "${TMPDIR:-/tmp}/git-pilot-pre-push.XXXXXX") || exit 1
        trap 'rm -f "$input"' EXIT
        cat >"$input"
        "$prev" "$@" <"$input" || exit $?
        exec <"$input"
    fi
else
    if [ -x "$prev" ]; then "$prev" "$@" || status=$?; fi
    if [ "${GIT_PILOT_SKIP_HOOKS:-}" = 1 ]; then exit $status; fi
    case $PILOT_EVENT in
        # A file checkout (flag 0), the same HEAD, a rebase.
        post-checkout) if [ "$3" != 1 ] || [ "$1" = "$2" ] || rebasing; then exit $status; fi ;;
        # An amend (post-commit has recorded it already). A finished rebase is handled here, in
        # one batch, although its state directory still exists.
        post-rewrite) if [ "$1" = amend ]; then exit $status; fi ;;
        # A rebase in progress (post-rewrite does that batch).
        *) if rebasing; then exit $status; fi ;;
    esac
fi
boot='import sys
if sys.argv[1]: sys.path.insert(0, sys.argv[1])
try:
    from gitpilot.hooks.run import main
except ImportError as exc:
    sys.stderr.write("git pilot: %s cannot import it (%s); skipping its hook\n" % (sys.executable, exc))
    sys.exit(0)
sys.exit(main(sys.argv[2:]))'
if [ -x "$PILOT_PYTHON" ]; then
    set -- "$PILOT_PYTHON" -P -c "$boot" "$PILOT_LIB" "$PILOT_EVENT" "$@"
elif command -v git-pilot >/dev/null 2>&1; then
    set -- git-pilot hook "$PILOT_EVENT" "$@"
else
    echo "git pilot: $PILOT_PYTHON is gone and git-pilot is not on PATH; skipping its $PILOT_EVENT hook" >&2
    exit $status
fi
# pre-push in the foreground: the gate may refuse the push. The others detached, at low
# priority: refreshing caches and recording the review budget never slow down or fail git.
if [ "$PILOT_EVENT" = pre-push ]; then "$@"; exit; fi
if [ "${GIT_PILOT_HOOKS_SYNC:-}" = 1 ]; then "$@"; else "$@" </dev/null >/dev/null 2>&1 & fi
exit $status
