"""The environment variables that say which repository, index or object store git works on.

A hook inherits them from the git process that fired it; code that runs git against
anything else drops them (``gitrun.clean_env``), and the click-free warm capsule steps aside
when one is set. Stdlib-free on purpose: hot paths import it.
"""

REPO_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH",
)


def find_git(start: str) -> tuple[str, str, str] | None:
    """(worktree root, git dir, git common dir) for ``start``, found without running git.

    For hot paths (the agent hook, the warm capsule, re-arming a quota helper) that cannot
    afford a ``git rev-parse``. None when unsure (no ``.git`` up the tree, an unreadable
    ``gitdir:`` file, a git dir without HEAD): callers then fall back to git or do nothing.
    """
    import os

    folder = os.path.realpath(start)
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            git_dir = dot
            break
        if os.path.isfile(dot):
            try:
                with open(dot, "rb") as fh:
                    text = fh.read().decode("utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not text.startswith("gitdir:"):
                return None
            git_dir = os.path.realpath(os.path.join(folder, text[7:].strip()))
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    if not os.path.isfile(os.path.join(git_dir, "HEAD")):
        return None
    common = git_dir
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
            common = os.path.realpath(os.path.join(git_dir, fh.read().strip()))
    except (OSError, UnicodeDecodeError):
        pass
    return folder, git_dir, common
