"""Test and run harness shared by tests/, benchmarks/ and chaos/."""
