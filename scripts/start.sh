#!/usr/bin/env bash
# `pnpm start`: the whole system for a new user. Installs dependencies, generates the Prisma
# client and applies migrations (each a quick no-op when already done), then runs the events-api
# and one delivery-worker side by side with prefixed output. Ctrl-C or SIGTERM stops both cleanly.
# `pnpm start:prod` (--build) does the same from the production build (`pnpm build`): each process
# runs plain JavaScript, with no TypeScript compiled at start.
set -euo pipefail
cd "$(dirname "$0")/.."

pnpm install --frozen-lockfile --reporter=silent
pnpm --silent db:generate >/dev/null
if [ "${1:-}" = "--build" ]; then
  pnpm --silent build
  # The node options of each bundle are those of scripts/bundles.ts (a test compares them).
  migrate="node --enable-source-maps packages/db/dist/migrate.js"
  api="node --enable-source-maps services/events-api/dist/server.js"
  worker="node --enable-source-maps --max-semi-space-size=8 --heap-growing-percent=50 services/delivery-worker/dist/main.js"
else
  # node with tsx's loader rather than the tsx CLI, which kills a child that is slow to acknowledge a
  # signal: the services must get the whole SHUTDOWN_TIMEOUT_MS to finish their work.
  migrate="pnpm --silent db:migrate"
  api="node --import tsx services/events-api/src/server.ts"
  worker="node --import tsx services/delivery-worker/src/main.ts"
fi
if ! $migrate; then
  echo "start: could not migrate the database. Is PostgreSQL running where DATABASE_URL points (default postgresql://postgres@127.0.0.1:5432/herald)?" >&2
  exit 1
fi

exec node_modules/.bin/concurrently \
  --names api,worker --prefix-colors blue,magenta \
  --kill-others --kill-signal SIGTERM --success all \
  "$api" "$worker"
