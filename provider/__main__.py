"""`python -m provider`: the command line (provider.deploy.cli)."""

from __future__ import annotations

import sys

from provider.deploy.cli import main

if __name__ == "__main__":
    sys.exit(main())
