"""CLI commands: (not yet built)."""

from __future__ import annotations


def register(subparsers, common) -> None:
    """Add this module's subcommands (placeholder until the feature lands)."""
