#!/usr/bin/env bash
# Writes Fixtures/stores/lmdb-v1/: an LMDB store made by an earlier release of the CLI, and
# that release's answers to the queries of queries.txt. `OldStoreTests` opens a copy with
# today's code, asks the same queries and expects the same bytes, then appends to it.
#
#   Fixtures/stores/make-lmdb-store.sh OLD_AUTHLEDGER_BINARY
#
# Run once, with the binary of the release whose store the test keeps (see README.md);
# running it again makes a different store (event ids and OTP codes are random).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
old="$1"
out="$here/lmdb-v1"
rm -rf "$out"
mkdir -p "$out/answers"
export AUTHLEDGER_STORE="$out/store"
al() { "$old" "$@"; }

# The recorded scenarios (every event type but user.erased), then commands of the CLI.
al demo --fixtures "$here/../scenarios" >/dev/null
al register hana phone --name "Hana's Phone" --now 2026-03-02T08:00:00Z >/dev/null
otp=$(al send-otp hana --channel email --target hana@example.com --now 2026-03-02T08:00:00Z)
al verify-otp hana "$(sed -n 's/^otp //p' <<<"$otp")" "$(sed -n 's/^code //p' <<<"$otp")" --now 2026-03-02T08:01:00Z >/dev/null
al issue-challenge alice --device iphone --action login --context ip=192.0.2.7 --now 2026-03-02T08:00:00Z >/dev/null
al erase bob --reason "account closed" --now 2026-03-02T08:00:00Z >/dev/null
al set-policy --cooling-seconds 600 --actor admin:ops --now 2026-03-07T00:00:00Z >/dev/null
rm -f "$out/store/lock.mdb" "$out/store/compaction.lock"

# The answers: one file per line of queries.txt (arguments after `authledger`).
n=0
while IFS= read -r q; do
    [[ -z "$q" || "$q" == \#* ]] && continue
    n=$((n + 1))
    eval "args=($q)"
    AUTHLEDGER_ORIGIN=authledger.example/log al "${args[@]}" >"$out/answers/$n.out" 2>/dev/null
done <"$here/queries.txt"
rm -f "$out/store/lock.mdb" "$out/store/compaction.lock"
echo "wrote $out ($n answers)"
