# syntax=docker/dockerfile:1
# One image per service, from one build: the build stage bundles each service with esbuild; the
# runtime stage holds only production dependencies, the migrations and the operator command, and
# each service's target adds that service's bundle (scripts/image/stage.ts decides the lists; no
# source, test or fake is copied). Pick the image with --target (docker-compose.yml and the
# manifests name one per service). Operators run `ingest <command>` in a container
# (admin, deadletters, setup, healthcheck: docs/runbook.md).
# Not built on the machines this project is developed on (no Docker engine there): a unit test
# (scripts/image/image.test.ts) checks this file against the build and the runbook instead.

FROM node:24-slim AS build
WORKDIR /app
# Manifests first so the dependency layer is cached until a manifest changes.
# Every workspace's package.json is listed here (a unit test checks this): npm ci installs what the
# lockfile names. The benchmark's and the test kit's sources are never copied, and both declare
# only devDependencies, so `npm prune --omit=dev` leaves none of their packages in the image.
COPY package.json package-lock.json ./
COPY schemas/package.json schemas/
COPY packages/platform/package.json packages/platform/
COPY packages/domain/package.json packages/domain/
COPY packages/http/package.json packages/http/
COPY packages/client/package.json packages/client/
COPY services/gateway/package.json services/gateway/
COPY services/console/package.json services/console/
COPY services/processor/package.json services/processor/
COPY services/crm-sink/package.json services/crm-sink/
COPY tools/cli/package.json tools/cli/
COPY bench/package.json bench/
COPY testkit/package.json testkit/
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY schemas schemas
COPY packages packages
COPY services services
COPY tools tools
COPY scripts scripts
RUN npm run build && npm prune --omit=dev --no-audit --no-fund && node dist/build/stage-image.mjs /stage

FROM node:24-slim AS runtime
# A 64 MB young generation: the services allocate a short-lived object or two per event, and
# V8's default (16 MB) scavenges so often under load that GC took 14% of the gateway's CPU in
# the pipeline benchmark (6% with this; `npm run bench`, docs/benchmarks.md).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=64 \
    CLICKHOUSE_MIGRATIONS_DIR=/app/deploy/clickhouse/migrations
WORKDIR /app
# What every image holds: production node_modules, migrations and the operator command.
COPY --from=build /stage/base/ ./
RUN ln -s /app/dist/ingest.mjs /usr/local/bin/ingest
USER node
# Liveness of the service this container runs (its ops /healthz; the image has no curl).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["ingest", "healthcheck"]
CMD ["sh", "-c", "if [ \"$SERVICE\" = setup ]; then exec ingest setup; else exec node --enable-source-maps services/${SERVICE}/dist/main.js; fi"]

# One image per deployable (`docker build --target gateway .`), each with its own bundle only:
# the ingest gateway's image holds no admin, dashboard or web code. The setup Job and the
# compose setup service run `ingest setup` from any of them (SERVICE=setup).
FROM runtime AS gateway
# Each service's bundle sits in services/<name>/dist next to its own nested node_modules.
COPY --from=build /stage/gateway/ ./
ENV SERVICE=gateway

FROM runtime AS console
COPY --from=build /stage/console/ ./
ENV SERVICE=console

FROM runtime AS crm-sink
COPY --from=build /stage/crm-sink/ ./
ENV SERVICE=crm-sink

# Last: the default target of a plain `docker build .`.
FROM runtime AS processor
COPY --from=build /stage/processor/ ./
ENV SERVICE=processor
