# syntax=docker/dockerfile:1.7
# Toolport: one image for every role (ROLE=all | api | worker) and for the migration job.
#
# The runtime keeps running TypeScript with tsx (`node --import tsx apps/api/src/main.ts`), exactly
# like `npm start`, rather than an esbuild bundle: the code finds files next to its sources through
# import.meta.url (the drizzle migrations, PGlite's wasm and data files, the dashboard's dist/), and
# a bundle would move them. tsx transpiles each module once at start (well under a second) and
# caches under /tmp; esbuild, which tsx needs, ships in node_modules anyway.

ARG NODE_IMAGE=node:20-slim

# Only the package manifests, so `npm ci` below is cached until a dependency changes.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests \
 && find . -name package.json -not -path '*/node_modules/*' -exec cp --parents {} /manifests \; \
 && cp package-lock.json /manifests/

# Production dependencies of every workspace, exactly as locked.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NODE_ENV=production
COPY --from=manifests /manifests/ ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --no-audit --no-fund

# The dashboard bundle (esbuild is a production dependency of apps/dashboard).
FROM deps AS build
COPY apps/dashboard ./apps/dashboard
RUN node --import tsx apps/dashboard/src/build.ts --force

# What runs: sources of the server, migrations, the built dashboard, production node_modules.
FROM ${NODE_IMAGE} AS runtime
# HOST: inside a container loopback is unreachable from outside, so even the embedded default
# listens on every interface here; who reaches it is what `-p` publishes.
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
# Owned by root and read-only to the app's user: the process cannot change its own code.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY packages/core/package.json ./packages/core/
COPY packages/core/src ./packages/core/src
COPY packages/core/drizzle ./packages/core/drizzle
COPY apps/api/package.json ./apps/api/
COPY apps/api/src ./apps/api/src
COPY apps/dashboard/package.json ./apps/dashboard/
COPY apps/dashboard/src/index.ts ./apps/dashboard/src/
COPY --from=build /app/apps/dashboard/dist ./apps/dashboard/dist
# DATA_DIR: the embedded database and key when run alone; unused with DATABASE_URL + REDIS_URL.
RUN mkdir -p /data && chown 1000:1000 /data
# The image's `node` user, by number so Kubernetes can verify runAsNonRoot.
USER 1000:1000
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node is PID 1 and handles SIGTERM itself (main.ts closes the server, then the services).
CMD ["node", "--import", "tsx", "apps/api/src/main.ts"]
