"""Private PostgreSQL, RabbitMQ and Redis servers on free ports, and a TCP proxy to fault them."""
