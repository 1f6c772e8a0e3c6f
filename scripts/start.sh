#!/usr/bin/env bash
# `pnpm start`: the whole system for a new user. Installs dependencies, generates the Prisma
# client and applies migrations (each a quick no-op when already done), then runs the events-api
# and one delivery-worker side by side with prefixed output. Ctrl-C or SIGTERM stops both cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

pnpm install --frozen-lockfile --reporter=silent
pnpm --silent db:generate >/dev/null
if ! pnpm --silent db:migrate; then
  echo "start: could not migrate the database. Is PostgreSQL running where DATABASE_URL points (default postgresql://postgres@127.0.0.1:5432/herald)?" >&2
  exit 1
fi

# node with tsx's loader rather than the tsx CLI, which kills a child that is slow to acknowledge a
# signal: the services must get the whole SHUTDOWN_TIMEOUT_MS to finish their work.
exec node_modules/.bin/concurrently \
  --names api,worker --prefix-colors blue,magenta \
  --kill-others --kill-signal SIGTERM --success all \
  "node --import tsx services/events-api/src/server.ts" \
  "node --import tsx services/delivery-worker/src/main.ts"
