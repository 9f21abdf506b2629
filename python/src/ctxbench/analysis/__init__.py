"""Numbers and decisions from runs: noise, compare, gate, explain, the summary's data."""
