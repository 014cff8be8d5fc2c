#!/usr/bin/env bash
# install-test-tools.sh: installs on Debian (12 or later) every tool idalloc's
# tests use beyond Go, skipping what is already there, so that no test skips
# for want of one. .ci/run calls it; CONTRIBUTING.md says what each tool is
# for. Runs apt-get as root (through sudo when not root).
#
#   scripts/install-test-tools.sh
#
# Debian packages: mariadb-server, galera-4 and rsync (the e2e suite's private
# MariaDB servers and Galera cluster, the MySQL store tests), postgresql (the
# PostgreSQL store tests' server and the e2e failover tests' private ones),
# redis-server and redis-tools (lease stores, RESP tests), python3-redis,
# nodejs and npm (the Redis clients test), etcd-server (lease stores),
# chromium (the monitor page's browser test), prometheus (promtool),
# nginx, libnginx-mod-stream and docker-compose (the deploy checks),
# util-linux (unshare), protobuf-compiler (scripts/gen-proto.sh -check:
# the gRPC schema's generated code), python3-grpcio and python3-grpc-tools
# (the Python gRPC client's test, on Debian's own python3). Then ioredis from npm into the cache directory whose
# node_modules the tests read through IDALLOC_TEST_NODE_PATH:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/idalloc-ci-node
set -euo pipefail

say() { printf '%s\n' "install-test-tools: $*"; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# has CMD: CMD is on PATH or in /usr/sbin (Debian puts daemons there).
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

# PostgreSQL's server binaries: on PATH, or in Debian's versioned directories.
has_postgres() {
  has initdb && has pg_ctl && return 0
  local d
  for d in /usr/local/bin /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && return 0
  done
  return 1
}

missing=""
for tool in mariadbd:mariadb-server mariadb-install-db:mariadb-server rsync:rsync \
  redis-server:redis-server redis-cli:redis-tools redis-benchmark:redis-tools \
  etcd:etcd-server chromium:chromium promtool:prometheus prometheus:prometheus \
  nginx:nginx docker-compose:docker-compose node:nodejs npm:npm unshare:util-linux protoc:protobuf-compiler; do
  has "${tool%%:*}" || missing="$missing ${tool#*:}"
done
has_postgres || missing="$missing postgresql"
[ -e /usr/lib/galera/libgalera_smm.so ] || missing="$missing galera-4"
# Debian builds nginx's stream module (the RESP port in compose) apart.
[ -e /usr/lib/nginx/modules/ngx_stream_module.so ] || missing="$missing libnginx-mod-stream"
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || missing="$missing python3-redis"
/usr/bin/python3 -c 'import grpc' >/dev/null 2>&1 || missing="$missing python3-grpcio"
/usr/bin/python3 -c 'import grpc_tools' >/dev/null 2>&1 || missing="$missing python3-grpc-tools"

if [ -n "$missing" ]; then
  pkgs=$(echo "$missing" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')
  say "installing $pkgs"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # shellcheck disable=SC2086 # one word per package
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null
fi

# ioredis, for the test that connects Node's Redis client to the RESP port.
node_dir="${XDG_CACHE_HOME:-$HOME/.cache}/idalloc-ci-node"
if command -v npm >/dev/null 2>&1 && [ ! -d "$node_dir/node_modules/ioredis" ]; then
  say "installing ioredis from npm into $node_dir"
  npm install --silent --prefix "$node_dir" ioredis@5 >/dev/null
fi
say "done; for the Redis clients test: export IDALLOC_TEST_NODE_PATH=$node_dir/node_modules"
