"""Things edge does on its own: scheduled jobs and the heartbeat."""
