#!/bin/bash
# How long a snapshot pauses the shard, under load. hepd with one shard on CPU 0 snapshots every
# 5 s while bench/hepd_load sends HEPv3 SIP and RTCP-JSON from CPU 1; prints, for every snapshot,
# the records written and the two phases hepd logs at debug level: the images made ready (on the
# snapshot thread) and the shard's pause to fill them.
#
#   bench/snapshot_pause.sh [BUILD_DIR] [RATE] [SECONDS] [CALLS]    (defaults: build 20000 60 20000)
#
# 20,000 calls cycled at 20,000 packets/s hold about 60,000 dialogs from 30 s on (each lingers
# 32 s after its BYE); the last snapshots show the steady state. Loopback ports 19070 and 19479.
set -euo pipefail
build=${1:-build}
rate=${2:-20000}
seconds=${3:-60}
calls=${4:-20000}
work=$(mktemp -d /tmp/hepd-snapshot-pause.XXXXXX)
trap 'kill "$hepd" 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/hepd.yaml" <<YAML
hep:
  listen: ["127.0.0.1:19070"]
metrics:
  listen: "127.0.0.1:19479"
state:
  dir: "$work"
  snapshot_interval: 5s
  snapshot_on_shutdown: false
shards:
  count: 1
YAML
taskset -c 0 "$build/daemon/app/hepd" --config "$work/hepd.yaml" --log-level debug > "$work/hepd.log" 2>&1 &
hepd=$!
sleep 1
taskset -c 1 "$build/bench/hepd_load" --to 127.0.0.1:19070 --rate "$rate" --duration "$seconds" --calls "$calls" \
    > "$work/load.json"
sleep 1
kill "$hepd"
wait "$hepd" || true
paste -d ' ' <(grep -o 'snapshot written to [^:]*: [0-9]* bytes, [0-9]* dialogs, [0-9]* streams' "$work/hepd.log" |
                   sed 's/.*: //') \
             <(grep -o 'made ready in [0-9.]* s, shards paused [0-9.]* s' "$work/hepd.log")
