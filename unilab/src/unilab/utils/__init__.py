"""Small torch helpers shared by envs and tasks."""
