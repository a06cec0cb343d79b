"""The ``svc`` command: the one place that reads the environment and starts roles."""
