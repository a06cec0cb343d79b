"""The fault suite: the service under steady payment load while its processes and stores fail."""
