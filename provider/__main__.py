"""`python -m provider`: the command line, as `taskhub-pg` (provider.cli)."""

from __future__ import annotations

import sys

from provider.cli import main

if __name__ == "__main__":
    sys.exit(main())
