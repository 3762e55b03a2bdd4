#!/usr/bin/env bash
# Builds the container image with podman and runs it as an operator would:
#   1. the image: runs as bun, keeps HEALTHCHECK, holds no tests, benchmarks or dev tools;
#   2. embedded mode with a volume: /healthz, the README's walk-through, a graceful
#      stop on SIGTERM, and the data (accounts, signing keys) still there after a restart;
#   3. scale-out: an API and a worker container (--network host) against this machine's
#      PostgreSQL (a scratch database) and Redis (a broker namespace of their own);
#   4. compose.yaml: parsed and checked for the shape the README promises.
# Registry images cannot be pulled here, so it first builds a stand-in for oven/bun
# (debootstrap + the Bun binary of the npm `bun` package) and builds on that. It takes
# no input, prints each check, the image size and the time taken, and exits 0 when all
# pass, 1 on a failure, and 77 (skipped) when podman is not usable here: missing and
# not installable with apt-get as root, or failing to start. .ci/run reports a skip.
# Installs podman, runc, debootstrap (and curl) with apt when missing; images stay cached.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
bun_version=$(sed -n 's/.*"packageManager": *"bun@\([^"]*\)".*/\1/p' package.json)
standin_image="localhost/bun-standin:$bun_version"
image="localhost/workflow-platform:check"
run_id="ccheck$$"
pg_admin="postgres://postgres@127.0.0.1:5432/postgres"
scratch_db="platform_$run_id"
redis_url="redis://127.0.0.1:6379"
checks=0
containers=()
volume=""
work_dir=$(mktemp -d)

say() { printf '%s\n' "$*"; }
ok() { checks=$((checks + 1)); printf 'ok   %s\n' "$*"; }
fail() {
  printf 'FAIL %s\n' "$*" >&2
  exit 1
}
pm() { podman --runtime runc "$@"; }

# start NAME ARGS...: a detached container, removed at exit. Without systemd, podman
# cannot schedule HEALTHCHECK timers and says so on stderr: that goes to a log, and
# the checks run each HEALTHCHECK themselves (podman healthcheck run).
start() {
  local name=$1
  shift
  containers+=("$name")
  pm run -d --name "$name" --ulimit host "$@" >/dev/null 2>>"$work_dir/podman.log" ||
    fail "could not start $name: $(tail -n 5 "$work_dir/podman.log")"
}

cleanup() {
  local status=$?
  set +e
  if [ "$status" -ne 0 ]; then
    for name in "${containers[@]}"; do
      # Both of the container's streams (Bun reports a failed start on stderr), and its
      # state: a container that exited says so here rather than by a refused connection.
      printf '\n--- %s: %s\n' "$name" \
        "$(pm inspect --format '{{.State.Status}}, exit code {{.State.ExitCode}} {{.State.Error}}' "$name" 2>&1)" >&2
      pm logs --tail 30 "$name" 2>&1 | grep -v 'systemd connection' >&2
    done
  fi
  for name in "${containers[@]}"; do pm rm -f -v -t 0 "$name" >/dev/null 2>&1; done
  [ -n "$volume" ] && pm volume rm -f "$volume" >/dev/null 2>&1
  if [ -n "${scratch_created:-}" ]; then
    psql "$pg_admin" -q -c "DROP DATABASE IF EXISTS $scratch_db WITH (FORCE)" >/dev/null 2>&1
  fi
  redis-cli -u "$redis_url" --scan --pattern "{$run_id%2F*" 2>/dev/null | xargs -r redis-cli -u "$redis_url" del >/dev/null 2>&1
  rm -rf "$work_dir"
  exit "$status"
}
trap cleanup EXIT

# ---------------------------------------------------------------- tools

ensure_tools() {
  # Verified here as root only: rootful podman with runc, and debootstrap for the stand-in.
  if [ "$(id -u)" -ne 0 ]; then
    say "podman unavailable: the check needs root (rootful podman, debootstrap), not uid $(id -u)"
    exit 77
  fi
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v curl >/dev/null || missing+=(curl)
  if [ "${#missing[@]}" -gt 0 ]; then
    if ! command -v apt-get >/dev/null; then
      say "podman unavailable: ${missing[*]} missing, and no apt-get to install them"
      exit 77
    fi
    say "installing ${missing[*]} with apt-get"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
      >"$work_dir/apt.log" 2>&1; then
      say "podman unavailable: apt-get could not install ${missing[*]}: $(tail -n 3 "$work_dir/apt.log")"
      exit 77
    fi
  fi
  # setrlimit is refused inside this machine's containers unless podman leaves the limits alone.
  local conf=/etc/containers/containers.conf
  if ! grep -qs '^default_ulimits' "$conf"; then
    if grep -qs '^\[containers\]' "$conf"; then
      sed -i 's/^\[containers\]$/[containers]\ndefault_ulimits = []/' "$conf"
    else
      printf '[containers]\ndefault_ulimits = []\n' >>"$conf"
    fi
  fi
  if ! pm info >"$work_dir/info.log" 2>&1; then
    say "podman unavailable: 'podman --runtime runc info' fails: $(tail -n 3 "$work_dir/info.log")"
    exit 77
  fi
  ok "podman $(podman --version | awk '{print $3}') with runc"
}

# ---------------------------------------------------------------- images

# oven/bun stand-in: Debian bookworm (minbase), the Bun binary of the npm package, a
# `bun` user (uid 1000), and this machine's CA bundle (its proxy's CA included).
build_standin() {
  if pm image exists "$standin_image"; then
    ok "stand-in base image $standin_image (cached)"
    return
  fi
  say "building the stand-in base image $standin_image (debootstrap, about a minute)"
  local rootfs="$work_dir/rootfs" bun_binary
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work_dir/debootstrap.log" 2>&1 ||
    fail "debootstrap failed: $(tail -n 5 "$work_dir/debootstrap.log")"
  if [ "$(bun --version 2>/dev/null)" = "$bun_version" ]; then
    bun_binary=$(readlink -f "$(command -v bun)")
  else
    local arch
    case "$(uname -m)" in x86_64) arch=x64 ;; aarch64) arch=aarch64 ;; *) fail "no Bun build for $(uname -m)" ;; esac
    (cd "$work_dir" && npm pack --silent "@oven/bun-linux-$arch@$bun_version" >/dev/null) || fail "npm pack of Bun $bun_version failed"
    tar -xzf "$work_dir"/oven-bun-linux-*.tgz -C "$work_dir"
    bun_binary="$work_dir/package/bin/bun"
  fi
  install -m 0755 "$bun_binary" "$rootfs/usr/local/bin/bun"
  ln -sf bun "$rootfs/usr/local/bin/bunx"
  echo 'bun:x:1000:1000::/home/bun:/bin/sh' >>"$rootfs/etc/passwd"
  echo 'bun:x:1000:' >>"$rootfs/etc/group"
  echo 'bun:!:19000::::::' >>"$rootfs/etc/shadow"
  mkdir -p "$rootfs/home/bun/app" "$rootfs/etc/ssl/certs"
  chown -R 1000:1000 "$rootfs/home/bun"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -cf "$work_dir/rootfs.tar" .
  pm import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV BUN_RUNTIME_TRANSPILER_CACHE_PATH=0' \
    --change 'WORKDIR /home/bun/app' \
    --change 'CMD ["/usr/local/bin/bun"]' \
    "$work_dir/rootfs.tar" "$standin_image" >/dev/null 2>>"$work_dir/podman.log"
  rm -rf "$rootfs" "$work_dir/rootfs.tar"
  ok "stand-in base image $standin_image built"
}

build_image() {
  grep -qx "ARG BUN_IMAGE=oven/bun:$bun_version" Dockerfile ||
    fail "Dockerfile's BUN_IMAGE is not oven/bun:$bun_version, the Bun of package.json"
  ok "Dockerfile builds on oven/bun:$bun_version, the Bun of package.json"
  local t=$SECONDS previous
  previous=$(pm image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  # --format docker keeps HEALTHCHECK (the OCI format has no field for it).
  pm build --format docker --network host --build-arg "BUN_IMAGE=$standin_image" -t "$image" . \
    >"$work_dir/build.log" 2>&1 || fail "podman build failed:
$(tail -n 30 "$work_dir/build.log")"
  # The image this build replaced (its layers stay cached for the next build).
  if [ -n "$previous" ] && [ "$previous" != "$(pm image inspect --format '{{.Id}}' "$image")" ]; then
    pm rmi "$previous" >/dev/null 2>&1 || true
  fi
  ok "image $image built in $((SECONDS - t)) s"
}

inspect() { pm image inspect --format "$1" "$image"; }

check_image() {
  [ "$(inspect '{{.Config.User}}')" = "bun" ] || fail "the image does not run as user bun"
  ok "runs as user bun"
  [ "$(inspect '{{json .Config.Cmd}}')" = '["bun","run","start"]' ] || fail "default command is $(inspect '{{json .Config.Cmd}}')"
  ok "default command: bun run start (embedded)"
  inspect '{{json .Config.Volumes}}' | grep -q '"/data"' || fail "/data is not a volume"
  ok "/data is a volume"
  inspect '{{json .Config.Healthcheck}}' | grep -q '/healthz' || fail "the image has no HEALTHCHECK on /healthz"
  ok "HEALTHCHECK on /healthz kept"
  # What runs is there, and nothing else: no tests, benchmarks, scripts, history, dev
  # tools or type packages.
  local listing strays
  # shellcheck disable=SC2016 # expanded by the container's shell
  listing=$(pm run --rm --ulimit host --entrypoint '' "$image" 2>>"$work_dir/podman.log" sh -c '
    cd /app
    for file in apps/api/src/main.ts apps/worker/src/main.ts packages/db/src/migrations/index.ts \
      apps/api/node_modules/elysia/package.json packages/db/node_modules/@electric-sql/pglite/package.json; do
      [ -e "$file" ] || echo "missing $file"
    done
    find . -name node_modules -prune -o \( -name "*.test.ts" -o -name test -o -name testing.ts -o -name bench \
      -o -name scripts -o -name .git -o -name .ci -o -name README.md -o -name Dockerfile -o -name data \) -print
    ls node_modules/.bun | grep -E "^(turbo|@turbo|@biomejs|typescript|@types|bun-types)" || true')
  strays=$(printf '%s\n' "$listing" | grep -v '^missing ' || true)
  [ -z "$strays" ] || fail "the image holds files that do not run: $strays"
  ! grep -q '^missing ' <<<"$listing" || fail "the image lacks what runs: $(grep '^missing ' <<<"$listing")"
  ok "sources and runtime dependencies only: no tests, benchmarks, scripts, .git, dev tools or types"
}

# ---------------------------------------------------------------- HTTP helpers

free_port() { bun -e 'const s = Bun.serve({ port: 0, fetch: () => new Response() }); console.log(s.port); s.stop(true)'; }

# request METHOD URL [curl args...]: sets $status and $body.
request() {
  local method=$1 url=$2
  shift 2
  body=$(curl -s -o - -w '\n%{http_code}' -X "$method" "$url" "$@") || body=$'\n000'
  status=${body##*$'\n'}
  body=${body%$'\n'*}
}

# expect STATUS [TEXT]: the last response had STATUS and its body contains TEXT.
expect() {
  [ "$status" = "$1" ] || fail "expected $1, got $status: $body"
  [ -z "${2:-}" ] || [[ $body == *"$2"* ]] || fail "expected a body containing $2, got: $body"
}

json() { printf '%s' "$body" | bun -e "const d = JSON.parse(await Bun.stdin.text()); console.log($1)"; }

# wait_for URL WHAT: polls until URL answers 200 (90 s at most).
wait_for() {
  for _ in $(seq 1 180); do
    request GET "$1"
    [ "$status" = 200 ] && return 0
    sleep 0.5
  done
  fail "$2 did not answer 200 at $1 within 90 s (last: $status $body)"
}

healthcheck() {
  local name=$1 result
  result=$(pm healthcheck run "$name" 2>>"$work_dir/podman.log") || fail "HEALTHCHECK of $name: $result"
  ok "HEALTHCHECK of $name passes"
}

# stop NAME: SIGTERM, and the process must exit 0 by itself within its grace period.
graceful_stop() {
  local name=$1 code
  pm stop -t 30 "$name" >/dev/null 2>>"$work_dir/podman.log"
  code=$(pm inspect --format '{{.State.ExitCode}}' "$name")
  [ "$code" = 0 ] || fail "$name exited $code after SIGTERM (137: it had to be killed)"
  pm logs "$name" 2>&1 | grep -q '"msg":"stopped"' || fail "$name did not log its graceful stop"
  ok "$name stopped gracefully on SIGTERM (exit 0)"
}

json_post() { request POST "$1" -H 'content-type: application/json' -d "$2" "${@:3}"; }

EMAIL="ada@example.com"
PASSWORD="correct horse battery"

# The README's walk-through against BASE; sets TOKEN.
walk_through() {
  local base=$1 key
  request GET "$base/healthz"
  expect 200 '{"status":"ok"}'
  request GET "$base/readyz"
  expect 200 '"status":"ready"'
  ok "/healthz and /readyz answer"
  request GET "$base/openapi.json"
  expect 200 '"openapi":"3.1'
  request GET "$base/docs"
  expect 200 '/docs/swagger-ui-bundle.js'
  request GET "$base/docs/swagger-ui-bundle.js"
  expect 200
  request GET "$base/metrics"
  expect 200 'http_requests_total'
  ok "/openapi.json, /docs with its assets, /metrics"
  request GET "$base/console/sign-in"
  expect 200 '/console/assets/'
  local script
  script=$(printf '%s' "$body" | grep -o '/console/assets/[^"]*\.js' | head -n1)
  request GET "$base$script" -H 'accept-encoding: br'
  expect 200
  ok "the web console and its built assets (built into the image)"
  json_post "$base/accounts/signup" \
    "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\",\"account_name\":\"acme\",\"display_name\":\"Ada\"}"
  expect 200 '"root_email":"ada@example.com"'
  ok "sign-up"
  sign_in "$base"
  request GET "$base/accounts/payment/prices" -H "authorization: Bearer $TOKEN"
  expect 200 '"id":"price_free"'
  ok "prices with the access token"
  json_post "$base/accounts/api-keys" '{"name":"ci","allowed_paths":["GET /accounts/users"]}' -H "authorization: Bearer $TOKEN"
  expect 200 '"key":"wfk_'
  key=$(json d.data.key)
  request GET "$base/accounts/users" -H "x-api-key: $key"
  expect 200 "\"$EMAIL\""
  request GET "$base/accounts/payment/prices" -H "x-api-key: $key"
  expect 403 '{"error":"this API key is not allowed on this path"}'
  ok "API key: allowed on its path, 403 elsewhere"
  request GET "$base/secrets/db-password"
  expect 401 '{"error":"missing credential"}'
  ok "no credential: 401 in the spec's shape"
}

sign_in() {
  json_post "$1/accounts/auth-with-password" "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}"
  expect 200 '"auth_token"'
  TOKEN=$(json d.data.auth_token)
  ok "sign-in"
}

# ---------------------------------------------------------------- embedded

check_embedded() {
  local port first
  port=$(free_port)
  volume="$run_id-data"
  pm volume create "$volume" >/dev/null
  first="$run_id-embedded"
  start "$first" -p "127.0.0.1:$port:3000" -v "$volume:/data" "$image"
  wait_for "http://127.0.0.1:$port/healthz" "the embedded container"
  ok "embedded container answers on a published port ($port -> 3000)"
  healthcheck "$first"
  [ "$(pm exec "$first" id -u)" = 1000 ] || fail "the embedded process does not run as uid 1000"
  ok "process runs as uid 1000"
  walk_through "http://127.0.0.1:$port"
  local token_before=$TOKEN
  graceful_stop "$first"

  # A new container on the same volume: the upgrade path of an embedded install.
  local second="$run_id-embedded-2"
  start "$second" -p "127.0.0.1:$port:3000" -v "$volume:/data" "$image"
  wait_for "http://127.0.0.1:$port/healthz" "the restarted embedded container"
  request GET "http://127.0.0.1:$port/accounts/payment/prices" -H "authorization: Bearer $token_before"
  expect 200 '"id":"price_free"'
  ok "after a restart on the same volume: the earlier access token still verifies"
  sign_in "http://127.0.0.1:$port"
  graceful_stop "$second"
}

# ---------------------------------------------------------------- scale-out

check_scale_out() {
  psql "$pg_admin" -q -c "CREATE DATABASE $scratch_db" >/dev/null || fail "could not create the scratch database"
  scratch_created=1
  local api_port worker_port key secrets_key
  api_port=$(free_port)
  worker_port=$(free_port)
  key=$(bun -e 'console.log(Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url"))')
  secrets_key=$(bun -e 'console.log(Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url"))')
  local env=(
    -e "DATABASE_URL=postgres://postgres@127.0.0.1:5432/$scratch_db"
    -e "REDIS_URL=$redis_url"
    -e "BROKER_NAMESPACE=$run_id"
  )
  local api="$run_id-api" worker="$run_id-worker"
  # REFRESH_REUSE_GRACE_S=0: the check presents a spent refresh token at once and
  # expects the revocation a reuse after the grace window gets.
  start "$api" --network host "${env[@]}" -e "PORT=$api_port" -e "REFRESH_REUSE_GRACE_S=0" \
    -e "JWT_SIGNING_KEYS=main:$key" -e "SECRETS_KEY=$secrets_key" "$image" bun run start:api
  start "$worker" --network host "${env[@]}" -e "WORKER_HEALTH_PORT=$worker_port" "$image" bun run start:worker
  local base="http://127.0.0.1:$api_port"
  wait_for "$base/readyz" "the api container"
  expect 200 '"checks":{"database":"ok","broker":"ok"}'
  ok "api container ready on PostgreSQL and Redis (port $api_port)"
  wait_for "http://127.0.0.1:$worker_port/healthz" "the worker container"
  expect 200 '"checks":{"database":"ok","broker":"ok"}'
  ok "worker container healthy on PostgreSQL and Redis (health port $worker_port)"
  healthcheck "$api"
  healthcheck "$worker"
  # The worker's HEALTHCHECK must have probed the worker's port, not the API's.
  pm inspect --format '{{json .State.Healthcheck.Log}}' "$worker" | grep -q ":$worker_port/healthz 200" ||
    fail "the worker's HEALTHCHECK did not probe its health port $worker_port"
  ok "the worker's HEALTHCHECK probes WORKER_HEALTH_PORT"

  json_post "$base/accounts/signup" \
    "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\",\"account_name\":\"acme\",\"display_name\":\"Ada\"}"
  expect 200 '"root_email":"ada@example.com"'
  sign_in "$base"
  request GET "$base/accounts/users" -H "authorization: Bearer $TOKEN"
  expect 200 "\"$EMAIL\""
  ok "authenticated round trip on the api container"
  check_scale_out_features "$base"
  graceful_stop "$worker"
  graceful_stop "$api"
}

# ============================================================================
# EXTEND HERE as features land: end-to-end checks of the scale-out containers.
# $1 is the API's base URL and $TOKEN a signed-in access token; the worker
# container is running on the same PostgreSQL database and Redis namespace.
# Use request/json_post/expect/ok as above.
# ============================================================================
check_scale_out_features() {
  local base=$1 auth="authorization: Bearer $TOKEN" refresh_token
  # Sign-in sessions: a refresh rotates the token, and the spent one is refused.
  json_post "$base/accounts/auth-with-password" "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}"
  expect 200 '"refresh_token":"rt_'
  refresh_token=$(json d.data.refresh_token)
  json_post "$base/accounts/refresh" "{\"refresh_token\":\"$refresh_token\"}"
  expect 200 '"auth_token"'
  request GET "$base/secrets" -H "authorization: Bearer $(json d.data.auth_token)"
  expect 200 '{"data":[]}'
  json_post "$base/accounts/refresh" "{\"refresh_token\":\"$refresh_token\"}"
  expect 401 '{"error":"refresh token was already used; sign in again"}'
  ok "sign-in, refresh and refresh-token reuse refused on the api container"

  # A KV round trip, kept in Redis under this run's broker namespace.
  request PUT "$base/storage/kv/settings" -H "$auth" -H 'content-type: application/json' -d '{"description":"app settings"}'
  expect 200 '{"message":"success"}'
  request PUT "$base/storage/kv/settings/keys/theme" -H "$auth" -H 'content-type: application/json' \
    -d '{"value":{"dark":true}}'
  expect 200 '"revision":'
  request GET "$base/storage/kv/settings/keys/theme" -H "$auth"
  expect 200 '"value":{"dark":true}'
  redis-cli -u "$redis_url" --scan --pattern "{$run_id%2F*}:kv:*" | grep -q . ||
    fail "the KV bucket is not in Redis under the namespace $run_id"
  ok "KV round trip on the api container (bucket, put, get), stored in Redis"

  check_signed_webhook "$base"
}

# stripe_signature SECRET TIMESTAMP PAYLOAD: a Stripe-Signature header value, made the way
# Stripe documents it (HMAC-SHA256 of "<t>.<payload>" keyed with the whole whsec_ secret).
stripe_signature() {
  printf 't=%s,v1=%s' "$2" "$(printf '%s.%s' "$2" "$3" | openssl dgst -sha256 -hmac "$1" | sed 's/^.*= //')"
}

# A Stripe-signed webhook end to end: acknowledged by the api container with a run id,
# a tampered copy refused, and the run taken to `succeeded` by the worker container (the
# api container runs no worker in scale-out mode).
check_signed_webhook() {
  local base=$1 auth="authorization: Bearer $TOKEN" secret="whsec_containerCheckSecret00000000"
  local hook payload now hook_run run_status=""
  json_post "$base/flows" '{"name":"stripe payments","trigger":{"type":"webhook","access":"signature","service":"stripe",'"\"signing_secret\":\"$secret\""'},"steps":[{"name":"pick","subject":"transform","payload":{"event":"{{trigger.id}}","amount":"{{trigger.data.object.amount}}"}}]}' \
    -H "$auth"
  expect 200 '"webhook":{'
  hook=$(json d.data.webhook.id)
  payload='{"id":"evt_container_check","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount":4200}}}'
  now=$(date +%s)
  request POST "$base/webhooks/$hook" -H 'content-type: application/json' \
    -H "stripe-signature: $(stripe_signature "$secret" "$now" "$payload")" -d "$payload"
  expect 200 '"message":"accepted","run_id":"'
  hook_run=$(json d.run_id)
  request POST "$base/webhooks/$hook" -H 'content-type: application/json' \
    -H "stripe-signature: $(stripe_signature "$secret" "$now" "$payload")" -d "${payload/4200/1}"
  expect 401 '"error":'
  ok "a Stripe-signed webhook is acknowledged with a run id on the api container; a tampered one is 401"
  for _ in $(seq 1 120); do
    request GET "$base/runs/$hook_run" -H "$auth"
    expect 200
    run_status=$(json d.status)
    [ "$run_status" = succeeded ] || [ "$run_status" = failed ] && break
    sleep 0.5
  done
  [ "$run_status" = succeeded ] || fail "the webhook's run $hook_run ended as '$run_status', not succeeded: $body"
  expect 200 '"output":{"event":"evt_container_check","amount":4200}'
  ok "the worker container took the webhook's run to succeeded"
}

# ---------------------------------------------------------------- compose.yaml

check_compose() {
  local summary
  summary=$(bun scripts/compose-check.ts compose.yaml) || fail "compose.yaml is not what the README describes"
  ok "compose.yaml: $summary"
}

# ---------------------------------------------------------------- main

ensure_tools
check_compose
build_standin
build_image
check_image
check_embedded
check_scale_out
size=$(pm image inspect --format '{{.Size}}' "$image")
base_size=$(pm image inspect --format '{{.Size}}' "$standin_image")
say ""
say "image $image: $((size / 1000000)) MB ($(((size - base_size) / 1000000)) MB over the base image, $((base_size / 1000000)) MB)"
say "container check: $checks checks passed in $((SECONDS - started)) s"
