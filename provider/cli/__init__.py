"""`taskhub-pg` (also `python -m provider`): deploy, the drift check, the
runbook's reads and actions, and a metrics endpoint."""

from provider.cli.app import app, main

__all__ = ["app", "main"]
