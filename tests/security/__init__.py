"""The adversarial suite: what a security review of the service tries, each refused."""
