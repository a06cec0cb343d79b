"""Private servers for fault tests; they live in ``harness.servers``, shared with the fault suite."""

from harness.servers.postgres import PostgresPair, PrivatePostgres, private_postgres
from harness.servers.proxy import TcpProxy
from harness.servers.rabbitmq import PrivateRabbitMQ, private_rabbitmq
from harness.servers.redis import PrivateRedis, private_redis

__all__ = [
    "PostgresPair",
    "PrivatePostgres",
    "PrivateRabbitMQ",
    "PrivateRedis",
    "TcpProxy",
    "private_postgres",
    "private_rabbitmq",
    "private_redis",
]
