# One image for the three roles of the platform:
#   embedded (default)   bun run start          API + worker, PGlite in /data
#   scale-out API        bun run start:api      needs DATABASE_URL, REDIS_URL, JWT_SIGNING_KEYS, SECRETS_KEY
#   scale-out worker     bun run start:worker   needs DATABASE_URL, REDIS_URL
# Build: docker build -t workflow-platform .   (podman: add --format docker to keep HEALTHCHECK)
# BUN_IMAGE is the official image of the Bun version in package.json ("packageManager");
# point it at a mirror, or at a local stand-in (scripts/container-check.sh builds one).
ARG BUN_IMAGE=oven/bun:1.4.5

# Every workspace's package.json, the lockfile and the dependencies' patches, and nothing
# else, so the install layer below is reused until a manifest changes (new workspaces are
# found, not listed).
FROM ${BUN_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests \
 && find . -name package.json -not -path '*/node_modules/*' -exec cp --parents {} /manifests/ \; \
 && cp -r bun.lock patches /manifests/

# Runtime dependencies only, exactly as locked.
FROM ${BUN_IMAGE} AS dependencies
WORKDIR /app
COPY --from=manifests /manifests/ ./
# Bun installs peers too: @trpc/server and elysia name typescript and Bun's types,
# which nothing loads at run time (a third of node_modules): they stay behind.
RUN bun install --frozen-lockfile --production \
 && rm -rf node_modules/.bun/typescript@* node_modules/.bun/bun-types@* node_modules/.bun/@types+*

# The console, built with every dependency: the client's sources it bundles take the API's
# enums from @platform/core, a dev dependency of the client (its packed build copies them in),
# so the runtime install above cannot resolve them.
FROM ${BUN_IMAGE} AS console
WORKDIR /app
COPY --from=manifests /manifests/ ./
RUN bun install --frozen-lockfile
COPY . .
RUN bun run build:web

FROM ${BUN_IMAGE}
WORKDIR /app
ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=3000 \
    WORKER_HEALTH_PORT=3001
COPY --from=dependencies /app ./
# Sources only: .dockerignore keeps tests, benchmarks, scripts and .git out.
COPY . .
# The console, built in its stage after the sources it was built from: the start scripts
# rebuild it only if a source is newer (never, in the image).
COPY --from=console /app/apps/web/dist apps/web/dist
RUN chown -R bun:bun apps/web && mkdir -p /data && chown bun:bun /data
USER bun
VOLUME /data
EXPOSE 3000 3001
# GET /healthz on the port of this container's role: the worker's health port when
# PID 1 runs the worker (start:worker), the API's otherwise. No curl: Bun's fetch.
# It prints the URL and status it got (docker inspect shows them under State.Health).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["bun", "-e", "const worker = require('fs').readFileSync('/proc/1/cmdline', 'utf8').includes('worker'); const url = 'http://127.0.0.1:' + (worker ? process.env.WORKER_HEALTH_PORT : process.env.PORT) + '/healthz'; const res = await fetch(url, { signal: AbortSignal.timeout(4000) }); console.log(url, res.status); process.exit(res.ok ? 0 : 1)"]
# Bun is PID 1: `bun run` hands SIGTERM to the script's process, which stops taking
# requests, finishes those in flight (SHUTDOWN_GRACE_MS) and exits 0.
STOPSIGNAL SIGTERM
CMD ["bun", "run", "start"]
