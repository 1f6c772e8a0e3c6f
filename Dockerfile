# One image for both services and the migrate step; docker-compose.yml picks the command.
# Build stage: every dependency (esbuild, Prisma's generator), then `pnpm build`.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN npm install --global pnpm@12.21.0
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY packages ./packages
COPY services ./services
COPY prisma ./prisma
COPY scripts ./scripts
COPY prisma.config.ts tsconfig.json tsconfig.base.json ./
RUN pnpm install --frozen-lockfile && pnpm build
# What the final stage runs: the bundles, the migrations (read at run time) and the production
# dependencies of each workspace package, installed from the store the first install filled. The
# bundles require each package through the node_modules of the workspace package that lists it,
# so the workspace layout is kept (package.json files, node_modules, dist/), without the sources.
# No install script is needed (the Prisma client is generated into the sources, now bundled).
RUN mkdir /runtime \
  && cp package.json pnpm-lock.yaml pnpm-workspace.yaml /runtime/ \
  && for dir in packages/* services/*; do mkdir -p "/runtime/$dir" && cp "$dir/package.json" "/runtime/$dir/"; done \
  && for dir in packages/db services/events-api services/delivery-worker; do cp -r "$dir/dist" "/runtime/$dir/"; done \
  && mkdir -p /runtime/prisma && cp -r prisma/migrations /runtime/prisma/ \
  && cd /runtime && pnpm install --prod --frozen-lockfile --prefer-offline --ignore-scripts

# Runtime: plain JavaScript, no TypeScript compiled at start, no build tool installed.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /runtime ./
USER node
EXPOSE 3000
# Run without a command (`docker run herald`), the image serves the events-api, listening on every
# interface as production does; docker-compose.yml names each service's command, a worker's among them.
CMD ["node", "--enable-source-maps", "services/events-api/dist/server.js"]
