"""What a replay may be asked for, in a module of its own: ``fedq``'s parser offers these without
loading the simulator."""

POLICIES = ("fcfs", "easy", "conservative")
"""Reservation and backfill: strict order, one reservation and backfill, or a reservation for each job."""
