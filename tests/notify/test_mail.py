"""Email destinations against a real SMTP server (aiosmtpd) that receives the
mail and is read back: STARTTLS with a self-signed certificate the
destination trusts and a login, and implicit TLS (smtps)."""

from __future__ import annotations

import email
import socket
import ssl
import subprocess
import time
from email import policy
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.notify.helpers import ingest, setup


def _certs(tmp_path: Path) -> tuple[Path, Path]:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def _free() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Inbox:
    def __init__(self) -> None:
        self.mails: list[tuple[list[str], email.message.EmailMessage]] = []
        self.logins: list[str] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        self.mails.append((list(envelope.rcpt_tos), email.message_from_bytes(envelope.content, policy=policy.default)))
        return "250 OK"

    def authenticate(self, server, session, envelope, mechanism, auth_data):
        if isinstance(auth_data, LoginPassword) and auth_data.password == b"mail-password-1":
            self.logins.append(auth_data.login.decode())
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    def wait(self, n: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.mails) < n:
            assert time.monotonic() < deadline, f"expected {n} mails, got {len(self.mails)}"
            time.sleep(0.05)


def test_starttls_with_login_delivers_plain_text_and_html(start_server, tmp_path) -> None:
    cert, key = _certs(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    inbox = Inbox()
    port = _free()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
                            authenticator=inbox.authenticate, auth_require_tls=True)
    controller.start()
    try:
        srv = start_server(commit_interval_seconds=0.2, public_url="https://seclake.example.org",
                           smtp_url=f"smtp+starttls://alerts@localhost:{port}", smtp_password="mail-password-1",
                           smtp_from="seclake@example.org")
        token = srv.login()
        setup(srv, token, {"name": "soc-mail", "kind": "email", "to": ["soc@example.org"], "cc": ["lead@example.org"],
                           "caPem": cert.read_text()})
        ingest(srv, token, ["10.2.0.1"])
        inbox.wait(1)
        rcpt, mail = inbox.mails[0]
        assert sorted(rcpt) == ["lead@example.org", "soc@example.org"] and inbox.logins == ["alerts"]
        assert mail["From"] == "seclake@example.org" and "Failed logon" in mail["Subject"]
        assert mail["Message-ID"].startswith("<seclake-delivery-")
        text = mail.get_body(("plain",)).get_content()
        html = mail.get_body(("html",)).get_content()
        assert "10.2.0.1" in text and "https://seclake.example.org/summaries?" in text
        assert '<a href="https://seclake.example.org/summaries?' in html
        # The Go clients' Email endpoints (to/cc only) send through the smtp_url setting too.
        assert srv.call("notify/test", {"name": "soc-mail"}, token) == {"sent": True, "error": None}
        inbox.wait(2)
        # A wrong password is a refusal, said by the test.
        srv.call("notify/destination_dao", {"action": "update", "destination": {
            "name": "soc-mail", "smtpPassword": "wrong-password"}}, token)
        outcome = srv.call("notify/test", {"name": "soc-mail"}, token)
        assert outcome["sent"] is False and "SMTP 535" in outcome["error"]
    finally:
        controller.stop()


def test_implicit_tls(start_server, tmp_path) -> None:
    cert, key = _certs(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    inbox = Inbox()
    port = _free()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, ssl_context=context)
    controller.start()
    try:
        srv = start_server(smtp_from="seclake@example.org")
        token = srv.login()
        srv.call("notify/destination_dao", {"action": "add", "destination": {
            "name": "tls-mail", "kind": "email", "to": ["soc@example.org"], "smtpUrl": f"smtps://localhost:{port}",
            "caPem": cert.read_text()}}, token)
        assert srv.call("notify/test", {"name": "tls-mail"}, token) == {"sent": True, "error": None}
        inbox.wait(1)
        assert "test notification" in inbox.mails[0][1]["Subject"]
    finally:
        controller.stop()
