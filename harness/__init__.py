"""What the tests, the benchmarks and the fault suite share: private servers, free ports,
process supervision, receivers, the payment load and the run's own database."""
