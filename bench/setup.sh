#!/bin/sh
# Installs the load generators `deno task bench` drives: wrk (HTTP/1.1) and h2load (HTTP/2,
# from nghttp2-client), and Go with Debian's grpc-go sources for the grpc-go peer and the matrix's
# gRPC load generator (built offline by the bench; without them that peer is left out and the
# matrix's gRPC cells are skipped). Debian/Ubuntu only; run as root or with sudo.
# taskset (util-linux) is optional: without it client and server are not pinned to separate cores.
set -eu
missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v h2load >/dev/null 2>&1 || missing="$missing nghttp2-client"
command -v taskset >/dev/null 2>&1 || missing="$missing util-linux"
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
[ -d /usr/share/gocode/src/google.golang.org/grpc ] || missing="$missing golang-google-grpc-dev"
if [ -z "$missing" ]; then
  echo "bench tools present: wrk, h2load, taskset, go, grpc-go sources"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing:$missing; install them with your system's package manager" >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing:$missing"
$SUDO apt-get update -qq
# shellcheck disable=SC2086 # word splitting of the package list is intended
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
