"""Storage: the one SQLite file."""
