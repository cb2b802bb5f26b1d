"""A test kit for users' own tests of their activity handlers.

Enable the pytest plugin (installed with the package, off until asked for)
with `-p taskhub_pg` ... see provider/testing/plugin.py; its fixtures are in
provider/testing/fixtures.py, and run_activity runs one handler against a
real lease.
"""

from provider.testing.activities import ActivityOutcome, run_activity

__all__ = ["ActivityOutcome", "run_activity"]
