"""Why one run's figures are what they are: a switch decomposed, its phases, its load."""
