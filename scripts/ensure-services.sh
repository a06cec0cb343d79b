#!/usr/bin/env bash
# Make RabbitMQ and Redis reachable: use running ones, start installed ones, or say what is missing.
set -u
amqp_host=127.0.0.1 amqp_port=5672 redis_host=127.0.0.1 redis_port=6379
[ -n "${SVC_TEST_AMQP_URL:-}" ] && exit 0

up() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_up() {
  for _ in $(seq 1 60); do up "$1" "$2" && return 0; sleep 1; done
  return 1
}

missing=()
if ! up $redis_host $redis_port; then
  if command -v redis-server >/dev/null; then
    echo "starting Redis on $redis_host:$redis_port"
    redis-server --daemonize yes --bind 127.0.0.1 --port $redis_port --save "" --appendonly no >/dev/null
    wait_up $redis_host $redis_port || missing+=("Redis did not come up on port $redis_port")
  else
    missing+=("Redis is not running on $redis_host:$redis_port and redis-server is not installed (apt-get install redis-server)")
  fi
fi
if ! up $amqp_host $amqp_port; then
  if command -v rabbitmq-server >/dev/null; then
    echo "starting RabbitMQ on $amqp_host:$amqp_port (takes a few seconds)"
    rabbitmq-server -detached >/dev/null 2>&1
    wait_up $amqp_host $amqp_port || missing+=("RabbitMQ did not come up on port $amqp_port")
  else
    missing+=("RabbitMQ is not running on $amqp_host:$amqp_port and rabbitmq-server is not installed (apt-get install rabbitmq-server)")
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  printf 'cannot start: %s\n' "${missing[@]}" >&2
  echo "or point SVC_TEST_AMQP_URL / SVC_TEST_REDIS_URL (tests) and SVC_AMQP_URL / SVC_REDIS_URL at running ones" >&2
  exit 1
fi
