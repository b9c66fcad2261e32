"""Pre-training machinery: the LAMB optimizer and learning-rate schedules."""
