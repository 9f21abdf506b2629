"""Getting runs: the engine runner, remote hosts over ssh, repeated runs."""
