"""The Context Capsule: the task, the mandatory instructions and the Markdown sections it needs.

Modules: ``markdown`` (section maps from markdown-it-py tokens), ``text`` (tokens and task
identifiers), ``select`` (scoring and choosing sections), ``sources`` (which files, their roles
and the safety rules), ``cache`` (section-map notes and the context fingerprint), ``capsule``
(assembly and the public ``build_capsule``), ``warm`` (the fast reuse path without heavy imports).
"""
