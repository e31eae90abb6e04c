"""Sharing check-pass notes between clones, with a trust policy that a forged note cannot beat.

Responsible for ``git pilot share setup|pull|push``: the fetch refspec, merging a remote's
check records into the local notes line by line, and pushing the passes recorded here.

How trust stays unforgeable (the reasoning; docs/ci.md has the user-facing version):

* A record carries a ``remote`` field only in *our* notes, and only *we* write it: when a
  line arrives from remote R, ``pull`` parses it, rebuilds it from the known fields
  (unknown fields dropped, sizes and characters bounded, credentials refused) and sets
  ``remote = R``, whatever the incoming line said. A line that does not validate is
  skipped and counted (one warning per pull); it never reaches the local notes.
* ``check`` reuses a pass only when its ``remote`` is absent (run here) or named in
  ``[share] trust``; a pass that came only from an untrusted remote is shown by
  ``--explain`` and run again.
* ``push`` sends only lines recorded here (no ``remote`` field), on top of the remote's
  own notes, untouched. A clone that pulled a forged line from an untrusted remote can
  therefore never launder it into a trusted one: it keeps the line tagged with the
  untrusted remote locally and never pushes it. What a trusted remote holds is exactly
  what the clones that push to it recorded themselves (plus whatever anyone with write
  access pushed by hand: trusting a remote means trusting its writers).
* The remote-tracking copies (``refs/notes/remotes/<remote>/pilot/*``) are fetched, never
  written by hand, and never read at lookup time: the merge is the single door in.

The push is a fast-forward: its commit's parent is the remote's tip that was fetched and
merged, and ``--force-with-lease`` names that tip, so the update happens only if the
remote still holds exactly it; otherwise the push is retried after a new pull. Nothing is
ever forced over someone else's notes and notes are never pruned.
"""
