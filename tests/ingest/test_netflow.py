"""NetFlow/IPFIX datagrams: hostile bytes give a NetflowError or flows, never another fault.

The formats themselves are checked end to end with softflowd
(tests/service/test_listeners.py); these feed what no exporter would send.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.ingest.netflow import MAX_HELD, NetflowError, Templates, decode

V9_HEADER = struct.pack("!HHIIII", 9, 1, 1000, 1_795_000_000, 1, 7)
TEMPLATE = struct.pack("!HHHH", 0, 4 + 4 + 3 * 4, 300, 3) + struct.pack("!HHHHHH", 8, 4, 12, 4, 1, 4)


def test_v5_with_more_records_announced_than_sent_is_refused():
    header = struct.pack("!HHIIIIBBH", 5, 30, 0, 0, 0, 0, 0, 0, 0)
    with pytest.raises(NetflowError, match="30 records"):
        decode(header + bytes(48), "192.0.2.1", Templates())


def test_a_set_longer_than_the_datagram_is_refused():
    with pytest.raises(NetflowError, match="says"):
        decode(V9_HEADER + struct.pack("!HH", 300, 5000) + bytes(20), "192.0.2.1", Templates())


def test_a_zero_length_template_field_list_yields_no_endless_loop():
    zero = struct.pack("!HHHH", 0, 8 + 4, 300, 1) + struct.pack("!HH", 8, 0)
    data = struct.pack("!HH", 300, 4 + 8) + bytes(8)
    out = decode(V9_HEADER + zero + data, "192.0.2.1", Templates())
    assert out.flows == []


def test_data_waiting_for_templates_is_bounded():
    templates = Templates()
    orphan = struct.pack("!HH", 301, 4 + 12) + bytes(12)
    for _ in range(MAX_HELD + 50):
        out = decode(V9_HEADER + orphan, "192.0.2.1", templates)
    assert len(templates.held) == MAX_HELD and out.dropped == 1


def test_templates_are_kept_per_exporter():
    templates = Templates()
    decode(V9_HEADER + TEMPLATE, "192.0.2.1", templates)
    data = struct.pack("!HH", 300, 4 + 12) + bytes([10, 0, 0, 1, 10, 0, 0, 2]) + struct.pack("!I", 5)
    assert len(decode(V9_HEADER + data, "192.0.2.1", templates).flows) == 1
    # Another exporter's data with the same template id waits for its own template.
    other = decode(V9_HEADER + data, "192.0.2.99", templates)
    assert other.flows == [] and other.held == 1


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.sampled_from([5, 9, 10]))
def test_any_bytes_after_a_known_version_are_flows_or_a_netflow_error(tail, version):
    templates = Templates()
    decode(V9_HEADER + TEMPLATE, "192.0.2.1", templates)
    head = struct.pack("!H", version)
    if version == 10:
        head += struct.pack("!H", min(len(tail) + 4, 65535))
    try:
        out = decode(head + tail, "192.0.2.1", templates)
    except NetflowError:
        return
    for flow in out.flows:
        assert {"sip", "dip", "sp", "dp", "prot", "totalB", "time_ms"} <= set(flow)
