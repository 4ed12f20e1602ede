"""Notifications: behaviors and summaries pushed to webhooks, chat, paging, mail and syslog (docs/alerting.md).

Data flows one way: the detector's save asks ``notifier`` which rules
(``alertrule``) an outcome meets and writes rows of the outbox (``outbox``),
throttled per rule and key (``throttle``), in its own transaction; the
``sender`` thread reads the outbox and hands each delivery to its
destination kind (``webhook``, ``chat``, ``pagerduty``, ``mail``,
``syslogcef``), rendered by ``template``. Secrets are sealed by ``cipher``.
``alerting`` wires them and is what the API and the CLI call.
"""
