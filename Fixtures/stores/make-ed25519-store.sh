#!/usr/bin/env bash
# Writes Fixtures/stores/ed25519-keys/store: an LMDB store as a release before the Ed25519
# point check wrote it, holding device keys that are no usable point. `Ed25519PointTests`
# expects `verify` to name seq 2 (the first of them) and the store's reads to go on.
#
#   Fixtures/stores/make-ed25519-store.sh OLD_AUTHLEDGER_BINARY
#
# seq 1: alice's phone, a real key (RFC 8032 test 1); seq 2: bob's phone, the key y = 2
# (no point has it); seq 3: carol's phone, the neutral element (small order).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
old="$1"
out="$here/ed25519-keys/store"
rm -rf "$out"
export AUTHLEDGER_STORE="$out" AUTHLEDGER_KEY_DIR="" AUTHLEDGER_SERVER_KEY_FILE="" AUTHLEDGER_CHECKPOINT_KEY_FILE=""
key() { printf '{"kty":"OKP","crv":"Ed25519","x":"%s"}' "$1"; }
"$old" register alice phone --name "Alice Phone" --public-key "$(key 11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo)" --now 2026-05-01T10:00:00Z
"$old" register bob phone --name "Bob Phone" --public-key "$(key AgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA)" --now 2026-05-01T10:00:01Z
"$old" register carol phone --name "Carol Phone" --public-key "$(key AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA)" --now 2026-05-01T10:00:02Z
"$old" checkpoint --vkey >/dev/null   # the checkpoint key, so the store is whole
rm -f "$out/lock.mdb" "$out/compaction.lock"
echo "wrote $out"
