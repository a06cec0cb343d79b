"""Kernel shared by the api, scheduler and dispatcher roles."""

__version__ = "0.1.0"
