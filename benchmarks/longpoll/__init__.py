"""Capacity benchmark of long polls: memory per wait and wake-up latency."""
