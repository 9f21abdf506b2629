"""Comparing runs: rows matched and judged, the noise and the gate, where a difference sits."""
