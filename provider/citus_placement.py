"""Where a hub distributed by Citus lives: the node that holds its schema.

Schema-based sharding puts every table of a hub on one node. A call sent to
that node runs there in one hop; sent to the coordinator, every statement of
the procedure is a round trip to the node (docs/scale-out.md). This module
holds the one query that finds the node and the rule that turns a URL of the
coordinator into a URL of the node (same user, password, database and
options). The operator's side (provider/operations/citus.py) and the client
(`TaskHubConfig.citus_direct`) each run the query on their own connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

from psycopg.conninfo import conninfo_to_dict

# Whether this database has Citus's metadata at all (no error without it).
CITUS_PRESENT = "SELECT pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL"

# The primary node(s) holding a placement of a table of the schema: one for a
# distributed hub, none for a hub that is not distributed. One parameter,
# %(schema)s, the schema's name as written (not quoted).
PLACEMENT_QUERY = """
SELECT DISTINCT n.nodename, n.nodeport
  FROM pg_catalog.pg_class AS c
  JOIN pg_catalog.pg_dist_shard AS s ON s.logicalrelid = c.oid
  JOIN pg_catalog.pg_dist_placement AS pl ON pl.shardid = s.shardid
  JOIN pg_catalog.pg_dist_node AS n ON n.groupid = pl.groupid
 WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = %(schema)s)
   AND n.noderole = 'primary'
 ORDER BY 1, 2
"""

# Connection settings that name the server, replaced by the node's.
_SERVER_KEYS = ("host", "hostaddr", "port")


@dataclass(frozen=True)
class Node:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def node_url(url: str, node: Node) -> str:
    """The coordinator's URL (or keyword string) pointed at `node`: a
    postgresql:// URL, which libpq, psql and the duroxide runtime all take."""
    params = {key: str(value) for key, value in conninfo_to_dict(url).items() if value}
    user = params.pop("user", "")
    password = params.pop("password", "")
    dbname = params.pop("dbname", "")
    for key in _SERVER_KEYS:
        params.pop(key, None)
    login = quote(user, safe="")
    if password:
        login += ":" + quote(password, safe="")
    host = f"[{node.host}]" if ":" in node.host else node.host
    text = f"postgresql://{login}@" if login else "postgresql://"
    text += f"{quote(host, safe='[]:')}:{node.port}/{quote(dbname, safe='')}"
    if params:
        text += "?" + urlencode(sorted(params.items()))
    return text


def parse_node(text: str) -> Node:
    """HOST:PORT (an IPv6 host in brackets) as a Node; ValueError otherwise."""
    host, separator, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"a node is HOST:PORT, not {text!r}")
    return Node(host, int(port))
