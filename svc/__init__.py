"""Kernel shared by the api, scheduler and dispatcher roles."""

from importlib.metadata import version

# The installed distribution's version, which pyproject.toml names: what GET /health, the
# svc_build metric, traces and the webhook User-Agent report. The OpenAPI document's
# info.version (1.0.0) is the API's version and apart from it.
__version__ = version("svc-payments")
