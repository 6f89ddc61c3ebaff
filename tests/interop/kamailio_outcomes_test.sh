#!/usr/bin/env bash
# Call outcomes and peer groups through a real proxy: sipp places calls through Kamailio (siptrace
# -> hepd over HEPv3) that are answered, refused with 486 and with 503, cancelled by the caller
# (487) and left ringing until Kamailio's fr_inv_timer gives up (408). The caller and each callee
# have their own loopback address, named as peer groups in hepd's configuration, so hepd must
# report each final status, outcome and pair of groups as sipp saw them; and the recording rules
# of config/prometheus/hepd-rules.yml, evaluated by promtool on hepd's counters, must give the
# ASR, NER and SER computed from sipp's own statistics (-trace_stat). Loopback only; bounded.
# Call records (daemon/records/RECORDS.md) are on: the record file has one line per call sipp
# placed (by its Call-ID, from sipp's message trace) with that scenario's outcome, final status,
# addresses and delays; and `hepd pcap --records` on a tcpdump recording of the HEP hepd received
# gives the same records, field for field.
#   kamailio_outcomes_test.sh HEPD_BINARY
# Exit 77 (skipped) when kamailio, sipp, promtool or tcpdump is not installed or cannot capture.
# KEEP_WORK=1 keeps the work folder (logs, recording, record files).
set -euo pipefail
HEPD=$1
HERE=$(cd "$(dirname "$0")" && pwd)
RULES=$(cd "$HERE/../../config/prometheus" && pwd)/hepd-rules.yml
for tool in kamailio sipp promtool tcpdump; do
    command -v "$tool" >/dev/null || { echo "$tool missing: skipped"; exit 77; }
done

WORK=$(mktemp -d /tmp/hepd-outcomes.XXXXXX)
PIDS=()
# shellcheck source=capture.sh
source "$HERE/capture.sh"
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    stop_tcpdump
    sleep 0.3
    [ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=ports.sh
source "$HERE/ports.sh"
# shellcheck source=metrics.sh
source "$HERE/metrics.sh"
read -r HEP_PORT METRICS_PORT KAM_PORT SIP_PORT < <(free_ports 4)
# Every party on its own loopback address (the port is the same for all).
UAC=127.0.0.10; UAS_OK=127.0.0.21; UAS_BUSY=127.0.0.22; UAS_UNAVAIL=127.0.0.23; UAS_RING=127.0.0.24
# Calls per scenario.
ANSWERED=4; BUSY=3; UNAVAILABLE=2; CANCELLED=2; UNANSWERED=2

mkdir -p "$WORK/state"
# Records written soon after each call: dialogs leave the table 2 s after their end and their
# record is written at once (no media to wait for), each batch as it comes.
RECORDS=$WORK/state/records/calls.jsonl
# Names HEP_PORT: written again if start_hepd has to move hepd to other ports.
hepd_ports_changed() {
    cat >"$WORK/hepd.yaml" <<YAML
timers:
  dialog_linger: 2s
records:
  enabled: true
  path: records/calls.jsonl
  hold: 0s
  flush_interval: 0s
pcap:
  hep_ports: [$HEP_PORT]
peers:
  - name: customers
    cidr: ["$UAC/32"]
  - name: carrier-a
    cidr: ["$UAS_OK/32", "$UAS_BUSY/32"]
  - name: carrier-b
    cidr: ["$UAS_UNAVAIL/32", "$UAS_RING/32"]
YAML
}
hepd_ports_changed
start_hepd "$WORK/hepd.log" --config "$WORK/hepd.yaml" --state-dir "$WORK/state" --cores 2

# What hepd receives, for `hepd pcap --records`.
start_tcpdump "$WORK/hep.pcap" "udp and dst port $HEP_PORT" -B 8192

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

sleep 1

# Each caller's messages are traced (-trace_msg): the Call-IDs of its INVITEs name its calls.
uac() {  # uac NAME USER CALLS SCENARIO-ARGS...
    local name=$1 user=$2 calls=$3
    shift 3
    timeout 60 sipp "$@" "127.0.0.1:$KAM_PORT" -s "$user" -m "$calls" -r 5 -i "$UAC" -p "$SIP_PORT" -nostdin \
        -trace_stat -stf "$WORK/$name.csv" -trace_msg -message_file "$WORK/$name.messages" \
        >"$WORK/uac_$name.log" 2>&1 || true
}
uac answered ok "$ANSWERED" -sn uac -d 500
uac busy busy "$BUSY" -sf "$WORK/uac_486.xml"
uac unavailable unavail "$UNAVAILABLE" -sf "$WORK/uac_503.xml"
uac cancelled ring "$CANCELLED" -sf "$HERE/uac_cancel.xml"
uac unanswered ring "$UNANSWERED" -sf "$WORK/uac_408.xml"
# The last dialogs end (hepd waits for nothing more: every call got its final response). Polled,
# not slept: on a loaded machine the last BYE may take a while to be counted.
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

# The calls sipp placed, by the Call-IDs of the INVITEs each caller sent (a retransmission is the
# same call); each call's record is due 2 s after its end.
PLACED=$(python3 - "$WORK" <<'PY'
import json, re, sys
work = sys.argv[1]
calls = {}
for name in ["answered", "busy", "unavailable", "cancelled", "unanswered", "reloaded"]:
    # -trace_msg: each message follows a dashed line, a "UDP message sent/received" line and a
    # blank one.
    for block in re.split(r"^-{10,}.*$", open(f"{work}/{name}.messages").read(), flags=re.M):
        text = block.strip().split("\n", 2)
        if len(text) == 3 and " message sent" in text[0] and text[2].startswith("INVITE "):
            call_id = re.search(r"^(?:Call-ID|i)\s*:\s*(\S+)", text[2], flags=re.M | re.I).group(1)
            calls[call_id] = name
json.dump(calls, open(f"{work}/calls.json", "w"))
print(len(calls))
PY
)
echo "calls sipp placed: $PLACED"
for _ in $(seq 100); do
    [ "$(family_sum hepd_records_written_total)" -ge "$PLACED" ] && break
    sleep 0.2
done
curl -s "http://127.0.0.1:$METRICS_PORT/metrics" >"$WORK/metrics_records.txt"

# Stop hepd first (its shutdown must be clean and write no record twice), then the recording.
kill -TERM "$HEPD_PID"
for _ in $(seq 50); do kill -0 "$HEPD_PID" 2>/dev/null || break; sleep 0.1; done
wait "$HEPD_PID" && rc=0 || rc=$?
[ "$rc" -eq 0 ] || { echo "BAD hepd exit status $rc"; status=1; }
stop_tcpdump
tail -3 "$WORK/tcpdump.log"
# A busy machine may drop a packet from the recording (not from hepd's socket): then the offline
# records may lack what it carried, and only the live ones are held to sipp's calls.
TCPDUMP_DROPS=$(tcpdump_drops)
"$HEPD" pcap "$WORK/hep.pcap" --config "$WORK/hepd.yaml" --records "$WORK/offline.jsonl" >"$WORK/pcap.log" 2>&1 ||
    { echo "BAD hepd pcap exit status"; cat "$WORK/pcap.log"; status=1; }

python3 - "$WORK" "$RECORDS" "$UAC" "$SIP_PORT" "$KAM_PORT" "$TCPDUMP_DROPS" \
    "$UAS_OK" "$UAS_BUSY" "$UAS_UNAVAIL" "$UAS_RING" <<'PY' || status=1
import json, re, sys
work, records, uac, sip_port, kam_port, recording_drops = sys.argv[1:7]
uas_ok, uas_busy, uas_unavail, uas_ring = sys.argv[7:11]
sip_port, kam_port, recording_drops = int(sip_port), int(kam_port), int(recording_drops)
calls = json.load(open(f"{work}/calls.json"))
failures = []
def check(what, got, want):
    ok = got == want
    print(("ok  " if ok else "BAD ") + f"{what}: {got!r} (expected {want!r})")
    if not ok:
        failures.append(what)

samples = {}
for line in open(f"{work}/metrics_records.txt"):
    m = re.match(r'([a-zA-Z0-9_:]+)(\{.*\})? ([0-9.e+-]+)$', line.strip())
    if m:
        samples[m.group(1)] = samples.get(m.group(1), 0) + float(m.group(3))
check("hepd records written", samples.get("hepd_records_written_total"), len(calls))
check("hepd records dropped", samples.get("hepd_records_dropped_total", 0), 0)
check("hepd records write errors", samples.get("hepd_records_write_errors_total"), 0)

def load(path):
    text = open(path, encoding="utf-8").read()
    check(f"{path.rsplit('/', 1)[-1]} ends with a whole line", text.endswith("\n"), True)
    return [json.loads(line) for line in text.splitlines()]
live = load(records)
check("record lines (one per call sipp placed)", len(live), len(calls))
check("records with schema version 1", sum(r.get("v") == 1 for r in live), len(live))
check("Call-IDs in the records and not placed by sipp, or placed and in no record",
      sorted({r["call_id"] for r in live} ^ set(calls)), [])

# What each scenario is, as a record: outcome, final status, state, who hung up, the answer to
# the BYE, the fields each must have and those it cannot have. sipp's built-in UAS rings (180)
# before it answers; the ringer rings until the CANCEL, the caller's or Kamailio's on its timer.
answered = dict(outcome="completed", final_status=200, state="terminated", hangup="caller", bye_status=200,
                present=["ringing", "answer", "bye", "end", "srd_ms", "pdd_ms", "setup_ms", "duration_ms", "sdd_ms"],
                absent=["cancel", "q850_cause"])
refused = dict(outcome="failed", state="failed", hangup=None, bye_status=None, present=["end", "srd_ms"],
               absent=["ringing", "answer", "cancel", "bye", "pdd_ms", "setup_ms", "duration_ms", "sdd_ms"])
# The callee side is the UAS Kamailio relayed the INVITE to; the groups are those of the
# configuration in force when the call started (the SIGHUP moved the answering UAS to carrier-c).
scenario = {
    "answered": dict(answered, user="ok", pause_ms=500, uas=uas_ok, group="carrier-a"),
    "reloaded": dict(answered, user="ok", pause_ms=200, uas=uas_ok, group="carrier-c"),
    "busy": dict(refused, user="busy", final_status=486, uas=uas_busy, group="carrier-a"),
    "unavailable": dict(refused, user="unavail", final_status=503, uas=uas_unavail, group="carrier-b"),
    "cancelled": dict(outcome="cancelled", final_status=487, state="cancelled", user="ring", hangup=None,
                      uas=uas_ring, group="carrier-b",
                      bye_status=None, present=["ringing", "cancel", "end", "srd_ms", "pdd_ms"],
                      absent=["answer", "bye", "setup_ms", "duration_ms", "sdd_ms"]),
    "unanswered": dict(outcome="failed", final_status=408, state="failed", user="ring", hangup=None, bye_status=None,
                       uas=uas_ring, group="carrier-b",
                       present=["ringing", "end", "srd_ms", "pdd_ms"],
                       absent=["answer", "bye", "setup_ms", "duration_ms", "sdd_ms"]),
}
wrong = 0
for r in live:
    want = scenario.get(calls.get(r["call_id"]))
    if want is None:  # not sipp's: counted above
        continue
    # The caller is sipp's address; the INVITE's first hop goes to Kamailio (callee_*), its last
    # from Kamailio to the UAS (callee_side_*, RECORDS.md).
    fields = ["outcome", "final_status", "state", "hangup", "bye_status", "to_user", "caller_ip", "caller_port",
              "callee_ip", "callee_port", "callee_side_ip", "callee_side_port", "caller_group", "callee_group",
              "hops", "streams", "reported"]
    got = {k: r.get(k) for k in fields}
    expect = {k: want[k] for k in ["outcome", "final_status", "state", "hangup", "bye_status"]}
    expect.update(to_user=want["user"], caller_ip=uac, caller_port=sip_port, callee_ip="127.0.0.1",
                  callee_port=kam_port, callee_side_ip=want["uas"], callee_side_port=sip_port,
                  caller_group="customers", callee_group=want["group"], hops=2, streams=[], reported=[])
    problems = [f"{k} {got[k]!r}, not {expect[k]!r}" for k in expect if got[k] != expect[k]]
    problems += [f"{k} missing" for k in want["present"] if r.get(k) is None]
    problems += [f"{k} {r[k]!r}, not null" for k in want["absent"] if r.get(k) is not None]
    # sipp pauses this long between its ACK and its BYE: the call lasted at least that.
    if "pause_ms" in want and (r.get("duration_ms") or 0) < want["pause_ms"]:
        problems.append(f"duration_ms {r.get('duration_ms')!r} under sipp's pause of {want['pause_ms']} ms")
    if problems:
        wrong += 1
        print(f"BAD record of {r['call_id']} ({calls[r['call_id']]}): " + "; ".join(problems))
check("records as sipp's scenario made the call", wrong, 0)

# The offline records of the recording: the same, field for field, whatever fields the records
# have. Expected differences, each with its reason:
def regrouped(field, live_record, offline_record):
    # The offline run reads the configuration as it is after the SIGHUP, under which the answering
    # callee is in carrier-c; the live records of the calls placed before it kept carrier-a.
    return (field == "callee_group" and calls.get(live_record["call_id"]) == "answered" and
            live_record.get(field) == "carrier-a" and offline_record.get(field) == "carrier-c")
expected_differences = [regrouped]
# Records pair by their dialog (Call-ID, From-tag); each pair is compared on every field either has.
offline = load(f"{work}/offline.jsonl")
dialog = lambda r: (r["call_id"], r["from_tag"])
live_by, offline_by = {dialog(r): r for r in live}, {dialog(r): r for r in offline}
differences = [f"{k[0]}: only live" for k in live_by.keys() - offline_by.keys()]
differences += [f"{k[0]}: only offline" for k in offline_by.keys() - live_by.keys()]
for a in sorted(live, key=lambda r: (r["start"], r["call_id"])):
    b = offline_by.get(dialog(a))
    if b is None:
        continue
    for field in sorted(set(a) | set(b)):
        if a.get(field, "(absent)") != b.get(field, "(absent)") and not any(e(field, a, b) for e in expected_differences):
            differences.append(f"{a['call_id']}: {field} live {a.get(field, '(absent)')!r}, "
                               f"offline {b.get(field, '(absent)')!r}")
for d in differences:
    print(("note " if recording_drops else "BAD  ") + "offline record: " + d)
if recording_drops:
    print(f"tcpdump dropped {recording_drops} packets: the offline records are not held to the live ones")
else:
    check("offline records (hepd pcap --records) different from the live ones", len(differences), 0)
    check("offline records", len(offline), len(calls))
sys.exit(1 if failures else 0)
PY

if [ "$status" -ne 0 ]; then
    echo "--- hepd log"; tail -20 "$WORK/hepd.log"
    echo "--- kamailio log"; tail -20 "$WORK/kamailio.log"
    for f in "$WORK"/uac_*.log; do echo "--- $f"; tail -5 "$f"; done
fi
exit "$status"
