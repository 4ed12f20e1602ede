"""Every ORM model module, imported so that ``Base.metadata`` knows all tables.

Alembic's environment imports this module; add one import line per new
module of models (and ship a migration for its tables).
"""

from seclake.db import models  # noqa: F401
from seclake.storage import catalog  # noqa: F401
from seclake.detect import summaries  # noqa: F401
from seclake.detect import state  # noqa: F401
from seclake.service import idempotency  # noqa: F401
from seclake.notify import alertrule  # noqa: F401
from seclake.notify import destination  # noqa: F401
from seclake.notify import outbox  # noqa: F401
from seclake.notify import throttle  # noqa: F401
