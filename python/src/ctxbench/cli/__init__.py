"""The command line: click wiring, the console, a run's lifecycle, the commands."""
