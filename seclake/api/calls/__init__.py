"""Call modules; importing this package registers every call.

Add one import line per new module of calls.
"""

from seclake.api.calls import auth  # noqa: F401
from seclake.api.calls import events  # noqa: F401
from seclake.api.calls import imports  # noqa: F401
from seclake.api.calls import behaviors  # noqa: F401
from seclake.api.calls import summaries  # noqa: F401
from seclake.api.calls import rules  # noqa: F401
from seclake.api.calls import access  # noqa: F401
from seclake.api.calls import audit  # noqa: F401
from seclake.api.calls import sources  # noqa: F401
from seclake.api.calls import fields  # noqa: F401
from seclake.api.calls import sso  # noqa: F401
from seclake.api.calls import notifications  # noqa: F401
from seclake.api.calls import analytics  # noqa: F401
