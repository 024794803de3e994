# The official image's contract, reduced to what the kneo profile uses: on an empty data folder, create the
# cluster with POSTGRES_USER / POSTGRES_PASSWORD (scram-sha-256) and the database POSTGRES_DB; then run the server
# in the foreground on 127.0.0.1 (the stack shares the master's network namespace). The password goes through a
# private file, never the command line.
set -eu
: "${POSTGRES_USER:?POSTGRES_USER is required}" "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
POSTGRES_DB=${POSTGRES_DB:-$POSTGRES_USER}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  umask 077
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  if [ "$POSTGRES_DB" != "postgres" ]; then
    echo "CREATE DATABASE \"$POSTGRES_DB\";" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses=127.0.0.1 -c unix_socket_directories=/tmp
