"""Analytics: a piped query language over the lake (docs/analytics.md).

ES|QL's commands after seclake's Lucene query::

    event.outcome:failure | STATS failures = COUNT(*) BY user.name | SORT failures DESC | LIMIT 20

``parse(text, dataset)`` -> ``Pipeline`` (``head``: the search string;
``fields``: the record paths the commands read, None for whole records);
``execute(pipeline, records, now=, limits=)`` -> ``Result`` (``columns``
[{name, type}], ``values``, ``warnings``), exact over every record given.
"""

from seclake.analytics.execution import AnalyticsLimits, Result
from seclake.analytics.language import Pipeline, execute, parse
from seclake.errors import LimitExceeded, QueryError

__all__ = ["AnalyticsLimits", "LimitExceeded", "Pipeline", "QueryError", "Result", "execute", "parse"]
