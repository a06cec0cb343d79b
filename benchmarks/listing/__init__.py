"""The listing run: the API's lists of one large scope, first and deep pages, and their plans."""
