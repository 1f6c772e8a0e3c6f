#!/usr/bin/env bash
# Writes .env for `docker compose` from .env.example: each empty value gets fresh random bytes as
# hex (32 bytes for SECRETS_KEY, 24 for a token or password), every other line is copied. Refuses
# to overwrite a file, which may hold the key that stored credentials are encrypted with.
# Needs only a shell and /dev/urandom, not Node.js: a Docker user may have neither Node nor pnpm.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:-.env}"
if [ -e "$target" ]; then
  echo "docker-env: $target exists; left as it is (delete it first to make a new one)" >&2
  exit 1
fi
random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
umask 077
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    SECRETS_KEY=) echo "SECRETS_KEY=$(random_hex 32)" ;;
    [A-Z]*=) echo "$line$(random_hex 24)" ;;
    *) echo "$line" ;;
  esac
done < .env.example > "$target"
echo "docker-env: wrote $target"
