"""Lean acks.

Revision 0018, after 0017. What it runs is data:
sql/revisions/<this file's name>/revision.toml (provider/deploy/revision_data.py),
which `make revision` writes with this file.
"""

from provider.deploy.revision_data import load_for

_data = load_for(__file__)

revision = _data.id
down_revision = _data.down
branch_labels = None
depends_on = None
LOCKS_ON_UPGRADE = _data.locks_on_upgrade
LOCKS_ON_DOWNGRADE = _data.locks_on_downgrade
CHANGES_RESULT_TYPE_ON_DOWNGRADE = _data.changes_result_type_on_downgrade
upgrade = _data.upgrade
downgrade = _data.downgrade
