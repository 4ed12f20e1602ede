from __future__ import annotations

from seclake.ingest.kv import parse


def test_quotes_escapes_and_empty_values() -> None:
    line = r'a=1 b="two words" c=' + "'x y'" + r' d= e="say \"hi\"" f="C:\Windows\x" g="\\srv"'
    assert parse(line) == {
        "a": "1",
        "b": "two words",
        "c": "x y",
        "d": "",
        "e": 'say "hi"',
        "f": r"C:\Windows\x",  # other backslashes are kept
        "g": "\\srv",
    }


def test_values_stay_strings() -> None:
    assert parse("port=0443 ratio=1.10 n=-5") == {"port": "0443", "ratio": "1.10", "n": "-5"}


def test_text_between_pairs_is_ignored() -> None:
    assert parse("type=USER_LOGIN msg=audit(1364481363.243:24287): pid=2 res=success'") == {
        "type": "USER_LOGIN",
        "msg": "audit(1364481363.243:24287):",
        "pid": "2",
        "res": "success'",
    }
    assert parse("[UFW BLOCK] IN=eth0 OUT= SRC=1.2.3.4") == {"IN": "eth0", "OUT": "", "SRC": "1.2.3.4"}


def test_keys_start_a_token() -> None:
    # "uid=1000" inside "admin(uid=1000)" is not a pair.
    assert parse("user=root by=admin(uid=1000)") == {"user": "root", "by": "admin(uid=1000)"}


def test_last_value_wins() -> None:
    assert parse("a=1 a=2") == {"a": "2"}


def test_not_kv() -> None:
    assert parse("no pairs here") is None
    assert parse("a sentence with one=pair") is None
    assert parse("=x y=") is None  # one pair, not at the start
    assert parse("only=one") == {"only": "one"}


def test_unterminated_quote_is_a_bare_value() -> None:
    assert parse('a="open b=2') == {"a": '"open', "b": "2"}


def test_repeated_key_quoted_then_bare() -> None:
    assert parse('a="x y" a=z') == {"a": "z"}
    assert parse('a=z a="x y"') == {"a": "x y"}
