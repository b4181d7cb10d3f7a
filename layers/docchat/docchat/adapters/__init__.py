"""One module per outside system, each behind a Protocol defined next to its user."""
