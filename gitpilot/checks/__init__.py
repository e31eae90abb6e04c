"""Quiet checks: run configured checks, keep full logs on disk, reuse passes by tree id."""
