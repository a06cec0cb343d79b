"""Private servers for fault tests; they live in ``chaos.servers``, shared with the fault suite."""

from chaos.servers.postgres import PostgresPair, PrivatePostgres, private_postgres
from chaos.servers.proxy import TcpProxy
from chaos.servers.rabbitmq import PrivateRabbitMQ, private_rabbitmq
from chaos.servers.redis import PrivateRedis, private_redis

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
