"""Demo data: a deterministic generator of realistic security logs.

``generate`` yields raw log lines (syslog, key=value, JSON, CEF) from eight
sources across three tenants, with attack episodes described by
``scenario.manifest``.
"""

from seclake.demo.generator import DEFAULT_EVENTS_PER_DAY, generate, stamped
from seclake.demo.line import DemoLine
from seclake.demo.scenario import Episode, Manifest, manifest

__all__ = ["DEFAULT_EVENTS_PER_DAY", "DemoLine", "Episode", "Manifest", "generate", "manifest", "stamped"]
