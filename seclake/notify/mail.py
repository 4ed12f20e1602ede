"""Email over SMTP (Python's smtplib): a plain-text and an HTML part.

``smtp://`` sends in the clear (a local relay), ``smtp+starttls://`` upgrades
with STARTTLS (port 587 by default) and ``smtps://`` is TLS from the first
byte (465); the user of the URL and the password (the destination's secret,
else the ``smtp_password`` setting) log in when given. The Message-ID is the
delivery's, the same on every retry, so a mail retried after a crash is
recognisably the same mail.
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate
from urllib.parse import unquote, urlsplit

from seclake.notify.destination import Target
from seclake.notify.webhook import DeliveryError

PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}


def build(target: Target, message: dict[str, str], sender: str, delivery_id: int) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = message["title"].replace("\r", " ").replace("\n", " ")[:250]
    mail["From"] = sender
    mail["To"] = ", ".join(target.get("to") or [])
    if target.get("cc"):
        mail["Cc"] = ", ".join(target.get("cc"))
    mail["Date"] = formatdate(usegmt=True)
    mail["Message-ID"] = f"<seclake-delivery-{delivery_id}@seclake.invalid>"
    mail.set_content(message["text"] + "\n")
    mail.add_alternative(f"<html><body>{message['html']}</body></html>", subtype="html")
    return mail


def tls_context(ca_pem: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_pem:
        context.load_verify_locations(cadata=ca_pem)
    return context


def send(target: Target, message: dict[str, str], delivery_id: int, *, default_url: str | None,
         default_password: str | None, default_sender: str | None, timeout: float) -> None:
    url = target.get("smtpUrl") or default_url
    if not url:
        raise DeliveryError("no SMTP server: set the smtp_url setting or the destination's smtpUrl", retry=False)
    sender = target.get("sender") or default_sender
    if not sender:
        raise DeliveryError("no sender address: set the smtp_from setting or the destination's sender", retry=False)
    parts = urlsplit(url)
    port = parts.port or PORTS.get(parts.scheme, 25)
    password = target.get("smtpPassword") or default_password
    mail = build(target, message, sender, delivery_id)
    context = tls_context(target.get("caPem"))
    try:
        if parts.scheme == "smtps":
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(parts.hostname, port, timeout=timeout, context=context)
        else:
            smtp = smtplib.SMTP(parts.hostname, port, timeout=timeout)
        with smtp:
            if parts.scheme == "smtp+starttls":
                smtp.starttls(context=context)
            if parts.username:
                smtp.login(unquote(parts.username), password or "")
            smtp.send_message(mail)
    except smtplib.SMTPResponseException as e:
        # 5xx is a refusal (a wrong address, authentication), 4xx a "later".
        raise DeliveryError(f"SMTP {e.smtp_code}: {e.smtp_error!r}"[:500], retry=e.smtp_code < 500) from None
    except (smtplib.SMTPException, OSError) as e:
        raise DeliveryError(f"SMTP: {type(e).__name__}: {e}"[:500]) from None
