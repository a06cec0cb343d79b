#!/usr/bin/env bash
# Make PostgreSQL, RabbitMQ and Redis reachable: use running ones, start installed ones, or say
# what is missing. With --database NAME, also create that database when it does not exist.
set -u
amqp_host=127.0.0.1 amqp_port=5672 redis_host=127.0.0.1 redis_port=6379
pg_host=127.0.0.1 pg_port=5432
database=""
[ "${1:-}" = "--database" ] && database="${2:-}"
[ -n "${SVC_TEST_AMQP_URL:-}" ] && [ -z "$database" ] && exit 0

up() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_up() {
  for _ in $(seq 1 60); do up "$1" "$2" && return 0; sleep 1; done
  return 1
}

missing=()
if [ -z "${SVC_TEST_DATABASE_URL:-}" ] && ! up $pg_host $pg_port; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    version=$(ls /etc/postgresql | sort -V | tail -1)
    echo "starting PostgreSQL $version on $pg_host:$pg_port"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start >/dev/null 2>&1
    wait_up $pg_host $pg_port || missing+=("PostgreSQL did not come up on port $pg_port")
  else
    missing+=("PostgreSQL is not running on $pg_host:$pg_port and is not installed (apt-get install postgresql)")
  fi
fi
if [ -n "$database" ] && [ -z "${SVC_DATABASE_URL:-}" ] && up $pg_host $pg_port; then
  if ! psql -h $pg_host -p $pg_port -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$database'" | grep -q 1; then
    echo "creating database $database"
    createdb -h $pg_host -p $pg_port -U postgres "$database" || missing+=("could not create database $database")
  fi
fi
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
  echo "or point SVC_TEST_DATABASE_URL / SVC_TEST_AMQP_URL / SVC_TEST_REDIS_URL (tests) and" \
    "SVC_DATABASE_URL / SVC_AMQP_URL / SVC_REDIS_URL at running ones" >&2
  exit 1
fi
