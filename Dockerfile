# One image for both services and the migrate step; docker-compose.yml picks the command.
FROM node:20-bookworm-slim
WORKDIR /app
RUN npm install --global pnpm@12.21.0
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY packages ./packages
COPY services ./services
COPY prisma ./prisma
COPY prisma.config.ts tsconfig.json tsconfig.base.json ./
RUN pnpm install --frozen-lockfile && pnpm db:generate
ENV NODE_ENV=production
