"""The damage ledger keeps what the log found damaged until an operator acknowledges it."""

from seclake.storage.damage import FILE, DamageLedger


def _found(segment: str, start: int, kind: str = "damaged") -> dict:
    return {"segment": segment, "start": start, "end": start + 10, "kind": kind, "lost": (3, 4),
            "quarantine": f"{segment}.{kind}-{start}", "message": f"{kind} at {start}"}


def test_damage_is_kept_once_torn_tails_never_and_acknowledging_names_what_it_marked(tmp_path):
    ledger = DamageLedger(tmp_path)
    assert ledger.entries() == [] and ledger.acknowledge() == []
    new = ledger.record([_found("1.wal", 0), _found("1.wal", 90, "torn"), _found("9.wal", 14)])
    assert [e["id"] for e in new] == ["1.wal@0", "9.wal@14"] and new[0]["lost"] == [3, 4]
    assert ledger.record([_found("1.wal", 0)]) == []  # found again at the next start
    # Another process (the CLI beside a server) sees each change.
    other = DamageLedger(tmp_path)
    assert [e["id"] for e in other.acknowledge(["9.wal@14"])] == ["9.wal@14"]
    assert [e["id"] for e in ledger.unacknowledged()] == ["1.wal@0"]
    try:
        other.acknowledge(["2.wal@0"])
        raise AssertionError("an unknown id was accepted")
    except KeyError as e:
        assert "no log damage with the id 2.wal@0" in str(e)
    assert len(ledger.unacknowledged()) == 1  # nothing changed by the refused call


def test_an_unreadable_ledger_is_named_by_readers_and_set_aside_by_a_start(tmp_path):
    (tmp_path / FILE).write_bytes(b"{not json")
    ledger = DamageLedger(tmp_path)
    [named] = ledger.unacknowledged()
    assert named["id"] == FILE and "not a damage ledger" in named["message"]
    assert [e["id"] for e in ledger.record([_found("1.wal", 0)])] == ["1.wal@0"]
    assert [e["id"] for e in ledger.unacknowledged()] == ["1.wal@0"]
    assert len(list(tmp_path.glob(FILE + ".unreadable-*"))) == 1
