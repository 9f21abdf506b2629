"""What a user reads: the sentences, terminal tables, summary, report and export."""
