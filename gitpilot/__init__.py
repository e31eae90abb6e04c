"""git pilot: decides, deterministically and locally, what reaches coding agents."""

__version__ = "0.5.0"
