"""The Context Capsule: the task, the mandatory instructions and the Markdown sections it needs.

Modules: ``markdown`` (section maps from markdown-it-py tokens), ``text`` (tokens and task
identifiers), ``query`` (the task's weighted words), ``conventions`` (which sections say how to
test, commit, build or format), ``select`` (scoring and choosing sections), ``mandatory``
(the instruction files, mandatory sections and the excerpt pieces), ``deferred`` (the
section a mandatory rule points to for its details), ``sources`` (which files, their roles and
the safety rules), ``cache`` (section-map notes and the context fingerprint), ``capsule``
(assembly), ``warm`` and ``stamp`` (the reuse paths; ``stamp`` serves a warm capsule with the
standard library only), ``result`` (the result and the writer of the capsule's files), ``runner``
(the command without click, and ``build_capsule``, the public entry point).

The source map is context for the agent too: ``sourcemap`` (the tracked files' declarations,
ranked within a budget, for ``git pilot sourcemap`` and SessionStart) with ``decls`` (declarations
and imports by per-language regexes).
"""
