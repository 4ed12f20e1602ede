"""Which connection a full listener closes to make room (service/connections.py); the listener itself,
flooded by real sockets beside a real logger, is tested in test_listeners.py."""

from __future__ import annotations

from seclake.service.connections import Connection, ConnectionTable, source_of


def _conn(address: str, closed: list[str], name: str) -> Connection:
    return Connection(address, lambda: closed.append(name))


def test_a_full_address_loses_its_own_oldest_connection_silent_ones_first():
    closed: list[str] = []
    table = ConnectionTable(max_connections=100, max_per_address=3)
    a, b, c = (_conn("192.0.2.1", closed, n) for n in "abc")
    other = _conn("192.0.2.9", closed, "other")
    for conn in (a, b, c, other):
        assert table.admit(conn) is None
    table.progressed(a, 1)  # a talks: b is now the oldest silent one
    assert table.admit(_conn("192.0.2.1", closed, "d")) is b and b.closed_for == "evicted_per_address"
    table.progressed(c, 1)
    # Only talking ones left besides d: d (silent) goes before a and c.
    assert table.admit(_conn("192.0.2.1", closed, "e")).address == "192.0.2.1" and closed == ["b", "d"]
    assert table.count == 4 and table.per_source() == {"192.0.2.1": 3, "192.0.2.9": 1}


def test_a_full_listener_closes_the_oldest_of_the_source_holding_most_never_refuses():
    closed: list[str] = []
    table = ConnectionTable(max_connections=4, max_per_address=100)
    flood = [_conn("198.51.100.7", closed, f"f{i}") for i in range(3)]
    honest = _conn("192.0.2.1", closed, "honest")
    for conn in (honest, *flood):
        table.admit(conn)
    table.progressed(flood[0], 1)
    # The flooder holds the most, and its oldest silent connection goes, not the older honest one.
    victim = table.admit(_conn("203.0.113.5", closed, "new"))
    assert victim is flood[1] and victim.closed_for == "evicted_listener_full" and table.count == 4
    table.remove(victim)  # its own task removes it again when it ends: harmless
    assert table.count == 4 and "honest" not in closed


def test_ipv6_senders_count_by_their_64():
    assert source_of("2001:db8:1:2::7") == source_of("2001:db8:1:2:ffff::1") == "2001:db8:1:2::/64"
    assert source_of("::ffff:192.0.2.4") == "192.0.2.4" and source_of("fe80::1%eth0") == "fe80::/64"
    assert source_of("?") == "?"
