#!/usr/bin/env bash
# Make the benchmark host's SSH host key and the workers' client key under docker/ssh/ (ignored
# by git), and print the BENCH_HOST_KEY line for .env: the workers' connection pins that key.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/ssh"
mkdir -p "$dir/host" "$dir/client"
[ -f "$dir/host/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N "" -f "$dir/host/ssh_host_ed25519_key"
[ -f "$dir/client/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -f "$dir/client/id_ed25519"
cp "$dir/client/id_ed25519.pub" "$dir/host/authorized_keys"
# the key with its type: without "ssh-ed25519" the SSH provider reads the key as RSA ("Invalid key")
echo "BENCH_HOST_KEY=\"$(cut -d' ' -f1,2 "$dir/host/ssh_host_ed25519_key.pub")\""
