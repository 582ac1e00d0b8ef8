# syntax=docker/dockerfile:1
# One image for every service: build stage bundles each service with esbuild, runtime stage
# holds only production dependencies and the bundles. Pick the service with SERVICE
# (docker-compose.yml sets it per container).

FROM node:24-slim AS build
WORKDIR /app
# Manifests first so the dependency layer is cached until a manifest changes.
# Every workspace's package.json is listed here (a unit test checks this).
COPY package.json package-lock.json ./
COPY schemas/package.json schemas/
COPY packages/platform/package.json packages/platform/
COPY packages/domain/package.json packages/domain/
COPY packages/testkit/package.json packages/testkit/
COPY services/gateway/package.json services/gateway/
COPY services/processor/package.json services/processor/
COPY services/crm-sink/package.json services/crm-sink/
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY schemas schemas
COPY packages packages
COPY services services
COPY scripts scripts
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-slim AS runtime
# A 64 MB young generation: the services allocate a short-lived object or two per event, and
# V8's default (16 MB) scavenges so often under load that GC took 14% of the gateway's CPU in
# the pipeline benchmark (6% with this; `npm run bench`, README "Benchmark").
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=64 \
    CLICKHOUSE_MIGRATIONS_DIR=/app/deploy/clickhouse/migrations
WORKDIR /app
COPY --from=build /app/node_modules node_modules
# Each service's bundle sits in services/<name>/dist next to its own nested node_modules.
COPY --from=build /app/services services
COPY --from=build /app/dist dist
COPY deploy/clickhouse/migrations deploy/clickhouse/migrations
USER node
ARG SERVICE=processor
ENV SERVICE=${SERVICE}
CMD ["sh", "-c", "if [ \"$SERVICE\" = setup ]; then exec node --enable-source-maps dist/setup/main.js; else exec node --enable-source-maps services/${SERVICE}/dist/main.js; fi"]
