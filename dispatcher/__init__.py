"""Dispatcher role: consumes delivery jobs, signs and POSTs them, records every outcome."""
