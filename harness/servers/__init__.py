"""Private servers for fault runs and fault tests: a PostgreSQL cluster (alone, or a primary
with a synchronous streaming standby), a Redis, a RabbitMQ node and a three-node RabbitMQ
cluster of the caller's own, on free ports, and a TCP proxy that can hold, slow down or cut
traffic. The machine's shared services (5432, 5672, 6379) are never touched."""
