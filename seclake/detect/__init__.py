"""Detection: behavior rules over records, behaviors, daily risk summaries."""
