"""Two runs or more in words: a comparison, the gate, an A/B run's pairs, a difference by part."""
