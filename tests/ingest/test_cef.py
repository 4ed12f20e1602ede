from __future__ import annotations

from seclake.ingest.cef import parse


def test_header_and_extension() -> None:
    f = parse("CEF:0|Security|threatmanager|1.0|100|worm successfully stopped|10|src=10.0.0.1 dst=2.1.2.2 spt=1232")
    assert f == {
        "cef_format": "0",
        "cef_vendor": "Security",
        "cef_product": "threatmanager",
        "cef_version": "1.0",
        "signature_id": "100",
        "name": "worm successfully stopped",
        "cef_severity": "10",
        "src": "10.0.0.1",
        "dst": "2.1.2.2",
        "spt": "1232",
    }


def test_header_escapes() -> None:
    f = parse(r"CEF:0|security|threatmanager|1.0|100|detected a \| in message|10|src=10.0.0.1")
    assert f is not None and f["name"] == "detected a | in message"
    f = parse(r"CEF:0|security|threat\\manager|1.0|100|x|10|")
    assert f is not None and f["cef_product"] == "threat\\manager"


def test_extension_escapes_and_spaces() -> None:
    f = parse(r"CEF:0|v|p|1|1|n|1|msg=a \= b c\\d line\nnext act=blocked fname=C:\\x.exe")
    assert f is not None
    assert f["msg"] == "a = b c\\d line\nnext"
    assert f["act"] == "blocked"
    assert f["fname"] == "C:\\x.exe"


def test_unescaped_equals_in_value_and_unknown_escape_kept() -> None:
    f = parse(r"CEF:0|v|p|1|1|n|1|request=http://h/?a=b&c=d path=C:\Temp")
    assert f is not None
    assert f["request"] == "http://h/?a=b&c=d"
    assert f["path"] == r"C:\Temp"


def test_header_wins_over_extension() -> None:
    f = parse("CEF:0|v|p|1|1|header name|1|name=ext name other=x")
    assert f is not None and f["name"] == "header name" and f["other"] == "x"


def test_empty_extension_and_incomplete_header() -> None:
    f = parse("CEF:0|v|p|1|1|n|1|")
    assert f is not None and f["cef_severity"] == "1"
    assert parse("CEF:0|v|p|1|1|n") is None
    assert parse("CEF:x|v|p|1|1|n|1|") is None


def test_escaped_backslash_before_a_real_equals() -> None:
    # "C:\\\\" is an escaped backslash; the "=" after "act" is a real separator.
    f = parse(r"CEF:0|v|p|1|1|n|1|msg=path C:\\ act=1 k=a\\\=b")
    assert f is not None
    assert f["msg"] == "path C:\\"
    assert f["act"] == "1"
    assert f["k"] == "a\\=b"


def test_extension_edge_cases() -> None:
    f = parse("CEF:0|v|p|1|1|n|1|junk  first=1 empty= last=x y z")
    assert f is not None
    assert (f["first"], f["empty"], f["last"]) == ("1", "", "x y z")
    f = parse("CEF:0|v|p|1|1|n|1|no pairs at all")
    assert f is not None and "no" not in f and len(f) == 7
    f = parse("CEF:0|v|p|1|1|n|1|msg=a ?b=c")  # "?b" is not a key
    assert f is not None and f["msg"] == "a ?b=c"
