"""The run record: its schema, reading it, naming its variants, its environment."""
