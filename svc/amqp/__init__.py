"""RabbitMQ: the topology of the AMQP contract, its messages, consuming, acks and publishing."""
