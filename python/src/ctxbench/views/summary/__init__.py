"""What `show`'s summary holds, in words and drawn: the answers, the lines, the why."""
