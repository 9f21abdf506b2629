"""The commands of ``ctxbench``, one module per command or close group; cli.py wires them."""
