"""Channels: where messages come from and replies go to."""
