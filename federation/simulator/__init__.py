"""Trace-driven simulation of the federation: SWF input, per-job records, metrics, CSV/JSON and plots."""
