"""Numbers and decisions from runs, one room per question: explain, compare, summary."""
