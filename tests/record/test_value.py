"""record/value.py: an address's text as the index's IP columns keep it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from seclake.record.value import as_ip, ip_text


def _reference(value: object) -> str | None:
    ip = as_ip(value)
    return str(ip) if ip is not None else None


EDGES = [
    "10.0.0.1", "255.255.255.255", "0.0.0.0", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.", ".1.2.3.4",
    "1..2.3", "1.2.3.4 ", " 1.2.3.4", "1.2.3.04", "1.2.3.4/8", "١.٢.٣.٤", "1.2.3.4\x00", "0x1.2.3.4", "1.2.3.-4",
    "::1", "::ffff:10.0.0.1", "2001:DB8::1", "fe80::1%eth0", "1:2", "", "a.b.c.d", "9999999999999999", 5, None,
    "1.2.3.4" * 7,
]


def test_every_address_reads_as_the_ipaddress_module_reads_it():
    for value in EDGES:
        assert ip_text(value) == _reference(value), value


octet = st.one_of(st.integers(0, 300).map(str), st.sampled_from(["00", "01", "007", "", "-1", "1a", "٣"]))


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.lists(octet, min_size=1, max_size=6).map(".".join), st.text(max_size=20)))
def test_dotted_quads_and_any_text_read_the_same(value):
    assert ip_text(value) == _reference(value)
