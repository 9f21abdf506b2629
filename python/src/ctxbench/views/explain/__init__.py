"""One run's figures explained in words: the parts of a switch, a traced pass's phases."""
