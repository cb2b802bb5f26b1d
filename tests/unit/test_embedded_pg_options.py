"""What a running embedded cluster was started with, read from its command
line: a cluster an older version started on 127.0.0.1 is restarted
socket-only. No database."""

from __future__ import annotations

from provider.testing.embedded_pg import listen_addresses_of


def test_what_a_running_server_listens_on_is_read_from_its_command_line() -> None:
    started_before = '/usr/lib/postgresql/15/bin/postgres "-D" "/tmp/x/data" "-p" "41234" '
    assert listen_addresses_of(started_before) == "localhost"  # the server's default
    assert listen_addresses_of(started_before + '"-c" "listen_addresses=127.0.0.1"') == (
        "127.0.0.1"
    )
    assert listen_addresses_of(started_before + '"-c" "listen_addresses="') == ""
