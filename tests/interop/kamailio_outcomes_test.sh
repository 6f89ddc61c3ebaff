#!/usr/bin/env bash
# Call outcomes and peer groups through a real proxy: sipp places calls through Kamailio (siptrace
# -> hepd over HEPv3) that are answered, refused with 486 and with 503, cancelled by the caller
# (487) and left ringing until Kamailio's fr_inv_timer gives up (408). The caller and each callee
# have their own loopback address, named as peer groups in hepd's configuration, so hepd must
# report each final status, outcome and pair of groups as sipp saw them; and the recording rules
# of config/prometheus/hepd-rules.yml, evaluated by promtool on hepd's counters, must give the
# ASR, NER and SER computed from sipp's own statistics (-trace_stat). Loopback only; bounded.
#   kamailio_outcomes_test.sh HEPD_BINARY
# Exit 77 (skipped) when kamailio, sipp or promtool is not installed.
set -euo pipefail
HEPD=$1
HERE=$(cd "$(dirname "$0")" && pwd)
RULES=$(cd "$HERE/../../config/prometheus" && pwd)/hepd-rules.yml
for tool in kamailio sipp promtool; do
    command -v "$tool" >/dev/null || { echo "$tool missing: skipped"; exit 77; }
done

WORK=$(mktemp -d /tmp/hepd-outcomes.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    sleep 0.3
    [ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HEP_PORT=$(free_port); METRICS_PORT=$(free_port); KAM_PORT=$(free_port); SIP_PORT=$(free_port)
# Every party on its own loopback address (the port is the same for all).
UAC=127.0.0.10; UAS_OK=127.0.0.21; UAS_BUSY=127.0.0.22; UAS_UNAVAIL=127.0.0.23; UAS_RING=127.0.0.24
# Calls per scenario.
ANSWERED=4; BUSY=3; UNAVAILABLE=2; CANCELLED=2; UNANSWERED=2

mkdir -p "$WORK/state"
cat >"$WORK/hepd.yaml" <<YAML
peers:
  - name: customers
    cidr: ["$UAC/32"]
  - name: carrier-a
    cidr: ["$UAS_OK/32", "$UAS_BUSY/32"]
  - name: carrier-b
    cidr: ["$UAS_UNAVAIL/32", "$UAS_RING/32"]
YAML
"$HEPD" --config "$WORK/hepd.yaml" --hep-listen "127.0.0.1:$HEP_PORT" --metrics-listen "127.0.0.1:$METRICS_PORT" \
    --state-dir "$WORK/state" --cores 2 >"$WORK/hepd.log" 2>&1 &
HEPD_PID=$!
PIDS+=("$HEPD_PID")

sed -e "s/@KAMAILIO_PORT@/$KAM_PORT/" -e "s/@HEP_PORT@/$HEP_PORT/" -e "s/@UAS_OK@/$UAS_OK:$SIP_PORT/" \
    -e "s/@UAS_BUSY@/$UAS_BUSY:$SIP_PORT/" -e "s/@UAS_UNAVAIL@/$UAS_UNAVAIL:$SIP_PORT/" \
    -e "s/@UAS_RING@/$UAS_RING:$SIP_PORT/" "$HERE/kamailio_outcomes.cfg.in" >"$WORK/kamailio.cfg"
for code in 408 486 503; do
    sed "s/@CODE@/$code/g" "$HERE/uac_final.xml.in" >"$WORK/uac_$code.xml"
done
sed -e "s/@CODE@/486/g" -e "s/@TEXT@/Busy Here/" "$HERE/uas_refuse.xml.in" >"$WORK/uas_486.xml"
sed -e "s/@CODE@/503/g" -e "s/@TEXT@/Service Unavailable/" "$HERE/uas_refuse.xml.in" >"$WORK/uas_503.xml"

kamailio -f "$WORK/kamailio.cfg" -DD -E >"$WORK/kamailio.log" 2>&1 &
PIDS+=("$!")
uas() {  # uas NAME ADDRESS SCENARIO-ARGS...
    local name=$1 address=$2
    shift 2
    timeout 90 sipp "$@" -i "$address" -p "$SIP_PORT" -nostdin >"$WORK/uas_$name.log" 2>&1 &
    PIDS+=("$!")
}
uas ok "$UAS_OK" -sn uas
uas busy "$UAS_BUSY" -sf "$WORK/uas_486.xml"
uas unavail "$UAS_UNAVAIL" -sf "$WORK/uas_503.xml"
uas ring "$UAS_RING" -sf "$HERE/uas_ringer.xml"

for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >/dev/null && break || sleep 0.2
done
sleep 1

uac() {  # uac NAME USER CALLS SCENARIO-ARGS...
    local name=$1 user=$2 calls=$3
    shift 3
    timeout 60 sipp "$@" "127.0.0.1:$KAM_PORT" -s "$user" -m "$calls" -r 5 -i "$UAC" -p "$SIP_PORT" -nostdin \
        -trace_stat -stf "$WORK/$name.csv" >"$WORK/uac_$name.log" 2>&1 || true
}
uac answered ok "$ANSWERED" -sn uac -d 500
uac busy busy "$BUSY" -sf "$WORK/uac_486.xml"
uac unavailable unavail "$UNAVAILABLE" -sf "$WORK/uac_503.xml"
uac cancelled ring "$CANCELLED" -sf "$HERE/uac_cancel.xml"
uac unanswered ring "$UNANSWERED" -sf "$WORK/uac_408.xml"
# The last dialogs end (hepd waits for nothing more: every call got its final response). Polled,
# not slept: on a loaded machine the last BYE may take a while to be counted.
# family_sum FAMILY [LABEL=VALUE...]: the sum of a family's samples with those labels, scraped now.
family_sum() {
    python3 - "$METRICS_PORT" "$@" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
family, wanted = sys.argv[2], [f'{kv.split("=", 1)[0]}="{kv.split("=", 1)[1]}"' for kv in sys.argv[3:]]
print(int(sum(float(line.split()[-1]) for line in text.splitlines()
              if line.startswith(family + "{") and all(w in line for w in wanted))))
PY
}
CALLS=$((ANSWERED + BUSY + UNAVAILABLE + CANCELLED + UNANSWERED))
for _ in $(seq 100); do
    [ "$(family_sum hepd_dialogs_finished_total)" = "$CALLS" ] &&
        [ "$(family_sum hepd_dialogs_final_status_total)" = "$CALLS" ] && break
    sleep 0.2
done
curl -s "http://127.0.0.1:$METRICS_PORT/metrics" >"$WORK/metrics.txt"

status=0
python3 - "$WORK" "$RULES" "$ANSWERED" "$BUSY" "$UNAVAILABLE" "$CANCELLED" "$UNANSWERED" <<'PY' || status=1
import csv, math, re, subprocess, sys
work, rules = sys.argv[1], sys.argv[2]
wanted = dict(zip(["answered", "busy", "unavailable", "cancelled", "unanswered"], map(int, sys.argv[3:8])))
# What each scenario is: the final status the caller gets, and the callee's peer group.
scenario = {"answered": ("200", "carrier-a"), "busy": ("486", "carrier-a"), "unavailable": ("503", "carrier-b"),
            "cancelled": ("487", "carrier-b"), "unanswered": ("408", "carrier-b")}
outcome_of = {"200": "completed", "486": "failed", "503": "failed", "487": "cancelled", "408": "failed"}

# sipp's own statistics: calls that ran their scenario to the end (got the expected final
# response) and calls that did not.
sipp = {}
for name in scenario:
    rows = list(csv.reader(open(f"{work}/{name}.csv"), delimiter=";"))
    head, last = rows[0], rows[-1]
    sipp[name] = (int(last[head.index("SuccessfulCall(C)")]), int(last[head.index("FailedCall(C)")]))
print("sipp (successful, failed):", sipp)

samples = []
for line in open(f"{work}/metrics.txt"):
    m = re.match(r'([a-zA-Z0-9_:]+)(\{(.*)\})? ([0-9.e+-]+|NaN)$', line.strip())
    if m:
        samples.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or "")), float(m.group(4))))

def metric(name, **labels):
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == x for k, x in labels.items()))

checks = []
for name, (code, callee) in scenario.items():
    ok, failed = sipp[name]
    checks.append((f"sipp {name}: calls that got {code}", ok, wanted[name]))
    checks.append((f"sipp {name}: calls that did not", failed, 0))
    checks.append((f"hepd final status {code}, customers -> {callee}",
                   metric("hepd_dialogs_final_status_total", code=code, caller_peer="customers", callee_peer=callee), ok))
for outcome in ["completed", "failed", "cancelled", "timed_out", "evicted"]:
    want = sum(sipp[n][0] for n, (code, _) in scenario.items() if outcome_of[code] == outcome)
    checks.append((f"hepd outcome {outcome}", metric("hepd_dialogs_finished_total", outcome=outcome), want))
total = sum(ok for ok, _ in sipp.values())
checks.append(("hepd dialogs, all groups", metric("hepd_dialogs_final_status_total"), total))
checks.append(("hepd dialogs from or to \"other\"",
               sum(v for n, l, v in samples if n == "hepd_dialogs_final_status_total"
                   and "other" in (l.get("caller_peer"), l.get("callee_peer"))), 0))
checks.append(("hepd SRD of the failed set-ups (486, 503: no provisional first)",
               metric("hepd_sip_srd_seconds_count", result="failure", caller_peer="customers"),
               sipp["busy"][0] + sipp["unavailable"][0]))
checks.append(("hepd set-up times, customers -> carrier-a",
               metric("hepd_dialog_setup_seconds_count", caller_peer="customers", callee_peer="carrier-a"),
               sipp["answered"][0]))
checks.append(("hepd HEP decode errors", metric("hepd_hep_decode_errors_total"), 0))

# The ratios from sipp's statistics, by their definitions (METRICS.md, "RFC 6076"): ASR = 200 over
# all; NER = 200, 480, 486, 487, 600, 603 over all; SER = 200 over all but redirects (none here).
def ratios(names):
    calls = {scenario[n][0]: sipp[n][0] for n in names}
    all_ = sum(calls.values())
    if all_ == 0:
        return None
    good = lambda codes: sum(calls.get(c, 0) for c in codes)
    return {"asr": good(["200"]) / all_, "ner": good(["200", "480", "486", "487", "600", "603"]) / all_,
            "ser": good(["200"]) / (all_ - good(["3xx"]))}
expected = {(): ratios(scenario)}
for group in ["carrier-a", "carrier-b"]:
    expected[(("caller_peer", "customers"), ("callee_peer", group))] = ratios([n for n in scenario if scenario[n][1] == group])
print("ratios from sipp:", {k: {r: round(v, 4) for r, v in x.items()} for k, x in expected.items()})

# The recording rules on hepd's counters: each scraped series becomes a promtool input series
# growing by its value every minute, so every rate is proportional to the count and each ratio
# is the ratio of the counts.
series = []
for n, l, v in samples:
    if n in ("hepd_dialogs_final_status_total", "hepd_dialogs_finished_total"):
        labels = ",".join(f'{k}="{x}"' for k, x in sorted({**l, "job": "hepd", "instance": "interop"}.items()))
        series.append(f"      - series: '{n}{{{labels}}}'\n        values: '0+{v:g}x30'\n")
tests = []
for key, values in expected.items():
    level = "instance_peers" if key else "instance"
    selector = ",".join('%s="%s"' % kv for kv in key)
    labels = ",".join('%s="%s"' % kv for kv in sorted({**dict(key), "job": "hepd", "instance": "interop"}.items()))
    for r, value in values.items():
        tests.append("      - expr: round(%s:hepd_sip_%s:ratio_rate15m{%s} * 10000)\n" % (level, r, selector) +
                     "        eval_time: 20m\n        exp_samples:\n" +
                     "          - labels: '{%s}'\n            value: %d\n" % (labels, math.floor(value * 10000 + 0.5)))
with open(f"{work}/ratios.test.yml", "w") as f:
    f.write(f"rule_files:\n  - {rules}\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n")
    f.write("".join(series))
    f.write("    promql_expr_test:\n" + "".join(tests))
run = subprocess.run(["promtool", "test", "rules", f"{work}/ratios.test.yml"], capture_output=True, text=True)
checks.append(("promtool: the recording rules on hepd's counters equal sipp's ratios", run.returncode, 0))
if run.returncode != 0:
    print(run.stdout, run.stderr)

bad = 0
for what, got, want in checks:
    flag = "ok " if got == want else "BAD"
    bad += got != want
    print(f"{flag} {what}: {got:g} (expected {want})")
sys.exit(1 if bad else 0)
PY

# SIGHUP: carrier-a's answering UAS moves to a new group; the next call counts under it, the
# earlier ones stay where they were.
sed -i "s|cidr: \[\"$UAS_OK/32\", \"$UAS_BUSY/32\"\]|cidr: [\"$UAS_BUSY/32\"]\n  - name: carrier-c\n    cidr: [\"$UAS_OK/32\"]|" \
    "$WORK/hepd.yaml"
kill -HUP "$HEPD_PID"
for _ in $(seq 100); do grep -q "SIGHUP: reloaded" "$WORK/hepd.log" && break; sleep 0.1; done
uac reloaded ok 1 -sn uac -d 200
for _ in $(seq 100); do
    [ "$(family_sum hepd_dialogs_final_status_total code=200 callee_peer=carrier-c)" = 1 ] && break
    sleep 0.2
done
python3 - "$METRICS_PORT" "$ANSWERED" <<'PY' || status=1
import re, sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
def final_200(callee):
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("hepd_dialogs_final_status_total{") and
               all(f'{k}="{v}"' in line for k, v in [("code", "200"), ("caller_peer", "customers"), ("callee_peer", callee)]))
bad = 0
for what, got, want in [("after SIGHUP: answered, customers -> carrier-c", final_200("carrier-c"), 1),
                        ("after SIGHUP: answered before it, customers -> carrier-a", final_200("carrier-a"), int(sys.argv[2]))]:
    bad += got != want
    print(f"{'ok ' if got == want else 'BAD'} {what}: {got:g} (expected {want})")
sys.exit(1 if bad else 0)
PY

kill -TERM "$HEPD_PID"
for _ in $(seq 50); do kill -0 "$HEPD_PID" 2>/dev/null || break; sleep 0.1; done
wait "$HEPD_PID" && rc=0 || rc=$?
[ "$rc" -eq 0 ] || { echo "BAD hepd exit status $rc"; status=1; }
if [ "$status" -ne 0 ]; then
    echo "--- hepd log"; tail -20 "$WORK/hepd.log"
    echo "--- kamailio log"; tail -20 "$WORK/kamailio.log"
    for f in "$WORK"/uac_*.log; do echo "--- $f"; tail -5 "$f"; done
fi
exit "$status"
