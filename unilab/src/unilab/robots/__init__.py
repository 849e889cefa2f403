"""Robot descriptions built in code (MuJoCo ``MjSpec``)."""
