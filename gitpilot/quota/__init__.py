"""Quota resume tickets: classify why an agent stopped, read only stated reset times, and
resume the task safely after the limit resets (see ``classify``, ``resets``, ``tickets``,
``helper``). Cheap to import: nothing heavy is loaded here.
"""
