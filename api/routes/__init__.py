"""Route modules, one per resource of the API; each is described by the module of the same
name in ``api.description``."""
