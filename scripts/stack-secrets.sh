#!/bin/sh
# Writes the secrets of the compose stack (compose.yaml) that are missing, never replacing one:
#   secrets/svc.env       DATABASE_URL (with the database password), SVC_MASTER_KEY, SVC_OPERATOR_TOKEN
#   secrets/postgres.env  POSTGRES_PASSWORD, the same password
# The folder and the files are readable by their owner only. SVC_SECRETS_DIR names another folder.
# Keep a copy of SVC_MASTER_KEY with the database backups: without it the stored webhook secrets
# cannot be read (docs/operations.md, "Backup and restore").
set -eu
dir="${SVC_SECRETS_DIR:-secrets}"
umask 077
mkdir -p "$dir"
random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
if [ -e "$dir/svc.env" ] || [ -e "$dir/postgres.env" ]; then
  echo "$dir/svc.env or $dir/postgres.env exists: kept as it is"
  exit 0
fi
password="$(random_hex 24)"
cat > "$dir/postgres.env" <<ENV
POSTGRES_PASSWORD=$password
ENV
cat > "$dir/svc.env" <<ENV
DATABASE_URL=postgres://svc:$password@postgres:5432/svc
SVC_MASTER_KEY=$(random_hex 32)
SVC_OPERATOR_TOKEN=$(random_hex 32)
ENV
echo "wrote $dir/svc.env and $dir/postgres.env (mode 600)"
