#!/usr/bin/env bash
# Interoperability with a real sender: sipp places calls through a Kamailio proxy whose siptrace
# mirrors them to hepd as HEPv3; hepd must account for exactly the calls sipp completed and the
# ones that failed (with their codes). Loopback only; every step is bounded in time.
#   kamailio_sipp_test.sh HEPD_BINARY [udp|tcp]
# The HEP transport is UDP unless `tcp` is given (siptrace's duplicate_uri with ;transport=tcp).
# Exit 77 (skipped) when kamailio or sipp is not installed.
set -euo pipefail
HEPD=$1
HEP_TRANSPORT=${2:-udp}
HERE=$(cd "$(dirname "$0")" && pwd)
command -v kamailio >/dev/null && command -v sipp >/dev/null || { echo "kamailio or sipp missing: skipped"; exit 77; }

WORK=$(mktemp -d /tmp/hepd-interop.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    pkill -f "kamailio -f $WORK" 2>/dev/null || true
    sleep 0.2
    [ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=ports.sh
source "$HERE/ports.sh"
# shellcheck source=metrics.sh
source "$HERE/metrics.sh"
read -r HEP_PORT METRICS_PORT KAM_PORT UAS_PORT BUSY_PORT UAC_PORT < <(free_ports 6)
COMPLETED=5; BUSY=3

start_hepd "$WORK/hepd.log" --state-dir "$WORK/state" --cores 2

sed -e "s/@KAMAILIO_PORT@/$KAM_PORT/" -e "s/@HEP_PORT@/$HEP_PORT/" -e "s/@UAS_PORT@/$UAS_PORT/" \
    -e "s/@BUSY_PORT@/$BUSY_PORT/" "$HERE/kamailio.cfg.in" >"$WORK/kamailio.cfg"
KAMAILIO_DEFINES=(-A WITH_SIPTRACE)
if [ "$HEP_TRANSPORT" = tcp ]; then KAMAILIO_DEFINES+=(-A WITH_HEP_TCP); fi
kamailio -f "$WORK/kamailio.cfg" "${KAMAILIO_DEFINES[@]}" -DD -E -P "$WORK/kamailio.pid" >"$WORK/kamailio.log" 2>&1 &
PIDS+=("$!")

timeout 60 sipp -sn uas -i 127.0.0.1 -p "$UAS_PORT" -nostdin >"$WORK/uas.log" 2>&1 &
PIDS+=("$!")
timeout 60 sipp -sf "$HERE/uas_busy.xml" -i 127.0.0.1 -p "$BUSY_PORT" -nostdin >"$WORK/busy.log" 2>&1 &
PIDS+=("$!")

# Kamailio and both sipp callees have bound their SIP ports (polled, not slept).
udp_bound() {  # udp_bound PORT...: true when every port is taken for UDP on 127.0.0.1
    python3 - "$@" <<'PY'
import socket, sys
for port in sys.argv[1:]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", int(port)))
        except OSError:
            continue
        sys.exit(1)
PY
}
for _ in $(seq 100); do udp_bound "$KAM_PORT" "$UAS_PORT" "$BUSY_PORT" && break || sleep 0.1; done

# Answered calls (1 s long), then refused ones.
timeout 60 sipp -sn uac "127.0.0.1:$KAM_PORT" -s 1000 -m "$COMPLETED" -r 5 -d 1000 -i 127.0.0.1 -p "$UAC_PORT" \
    -nostdin -trace_stat -stf "$WORK/uac.csv" >"$WORK/uac.log" 2>&1 || true
timeout 60 sipp -sf "$HERE/uac_busy.xml" "127.0.0.1:$KAM_PORT" -s busy -m "$BUSY" -r 5 -i 127.0.0.1 \
    -p "$UAC_PORT" -nostdin -trace_stat -stf "$WORK/busy_uac.csv" >"$WORK/busy_uac.log" 2>&1 || true
# The last dialogs end and both hops of their last messages are counted. Polled, not slept: on a
# loaded machine the last BYE may take a while to be counted (20 s at most; the checks below tell
# what is missing).
for _ in $(seq 100); do
    kill -0 "$HEPD_PID" 2>/dev/null || break
    [ "$(family_sum hepd_dialogs_finished_total)" = "$((COMPLETED + BUSY))" ] &&
        [ "$(family_sum hepd_sip_requests_total method=BYE)" = "$((2 * COMPLETED))" ] &&
        [ "$(family_sum hepd_sip_responses_total method=INVITE status_class=4xx)" = "$((2 * BUSY))" ] && break
    sleep 0.2
done
curl -s "http://127.0.0.1:$METRICS_PORT/metrics" > "$WORK/metrics.txt" 2>/dev/null || true

status=0
python3 - "$METRICS_PORT" "$WORK/uac.csv" "$WORK/busy_uac.csv" "$COMPLETED" "$BUSY" "$HEP_TRANSPORT" <<'PY' || status=1
import csv, re, sys, urllib.request
port, uac_csv, busy_csv, want_ok, want_busy = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
transport = sys.argv[6]

def sipp_counts(path):
    rows = list(csv.reader(open(path), delimiter=";"))
    head, last = rows[0], rows[-1]
    return int(last[head.index("SuccessfulCall(C)")]), int(last[head.index("FailedCall(C)")])

ok, ok_failed = sipp_counts(uac_csv)
busy_done, busy_failed = sipp_counts(busy_csv)
print(f"sipp: answered calls successful {ok}, failed {ok_failed}; busy scenario successful {busy_done}, failed {busy_failed}")
text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()

def metric(name, **labels):
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        m = re.match(r'([a-zA-Z0-9_:]+)(\{(.*)\})? ([0-9.e+-]+|NaN)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(4))
    return total

checks = [
    ("calls sipp completed", ok, want_ok),
    ("busy calls sipp saw refused", busy_done, want_busy),
    ("hepd completed dialogs", metric("hepd_dialogs_finished_total", outcome="completed"), ok),
    ("hepd failed dialogs", metric("hepd_dialogs_finished_total", outcome="failed"), busy_done),
    ("hepd Q.850 cause 17", metric("hepd_sip_q850_causes_total", cause="17"), busy_done),
    ("hepd INVITE 4xx responses (both hops)", metric("hepd_sip_responses_total", method="INVITE", status_class="4xx"), 2 * busy_done),
    ("hepd BYE requests (both hops)", metric("hepd_sip_requests_total", method="BYE"), 2 * ok),
    ("hepd HEP decode errors", metric("hepd_hep_decode_errors_total"), 0),
    (f"HEP packets received over {transport} (all of them)",
     metric("hepd_hep_received_packets_total", transport=transport), metric("hepd_hep_received_packets_total")),
]
bad = 0
for what, got, want in checks:
    flag = "ok " if got == want else "BAD"
    bad += got != want
    print(f"{flag} {what}: {got:g} (expected {want})")
sys.exit(1 if bad else 0)
PY

# Graceful stop: SIGTERM drains, writes the final snapshot and exits 0, well within 20 s (a
# loaded box or a sanitizer build is slow; one that does not stop by itself is still caught).
kill -TERM "$HEPD_PID"
for _ in $(seq 200); do kill -0 "$HEPD_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$HEPD_PID" 2>/dev/null; then
    echo "BAD hepd still running 20 s after SIGTERM"
    status=1
    kill -KILL "$HEPD_PID"
fi
wait "$HEPD_PID" && rc=0 || rc=$?
[ "$rc" -eq 0 ] || { echo "BAD hepd exit status $rc"; status=1; }
if [ "$status" -ne 0 ]; then
    echo "--- hepd log"; tail -30 "$WORK/hepd.log"
    echo "--- kamailio log"; tail -30 "$WORK/kamailio.log"
fi
exit "$status"
