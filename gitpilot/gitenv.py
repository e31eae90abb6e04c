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
