"""Private servers for fault tests; they live in ``chaos.servers``, shared with the fault suite."""

from chaos.servers import (
    PostgresPair,
    PrivatePostgres,
    PrivateRabbitMQ,
    PrivateRedis,
    TcpProxy,
    private_postgres,
    private_rabbitmq,
    private_redis,
)

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
