"""The starter rule pack: YAML rule files copied into an empty rules directory on first start."""
