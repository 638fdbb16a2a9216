#!/bin/sh
# CI only: the entry point of a stand-in for the official postgres image, on Debian's PostgreSQL,
# for a machine that reaches no image registry. It honours what compose.yaml uses of the official
# image: POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB, PGDATA, a first start that initialises the
# data directory, password (scram) authentication from the network, trust on the local socket.
# Any command other than `postgres` runs as given (the same image stands in for Redis).
set -eu
if [ "${1:-}" != postgres ]; then exec "$@"; fi
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
user="${POSTGRES_USER:-postgres}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ -n "${POSTGRES_DB:-}" ] && [ "$POSTGRES_DB" != postgres ]; then createdb -U "$user" "$POSTGRES_DB"; fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
shift
exec postgres -c listen_addresses='*' "$@"
