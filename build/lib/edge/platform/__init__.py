"""Operating-system glue: logging, systemd."""
