"""What a summary of runs holds: which record answers which question, the answers as figures."""
