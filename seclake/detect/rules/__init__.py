"""The starter rule pack: YAML rule files imported into the database on the first start (seclake.detect.rulebook)."""
