"""What-if on the federation's own history: export a window of jobs, replay it twice, compare."""
