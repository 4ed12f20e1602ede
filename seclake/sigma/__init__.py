"""Sigma rules run unmodified (docs/detections.md).

``logsource`` (which records a Sigma log source selects), ``pipeline``
(Sigma's field names -> the fields seclake stores, as pySigma processing
pipelines), ``backend`` (a pySigma backend whose output is a seclake query
tree), ``conversion`` (one Sigma rule -> one seclake ``Rule``), ``importer``
(files, directories and zips -> rules and a skip report).
"""
