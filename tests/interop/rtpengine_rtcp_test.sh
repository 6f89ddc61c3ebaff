#!/usr/bin/env bash
# rtpengine's QoS as first-class streams: a Kamailio + rtpengine estate as hepd sees it. sipp calls
# through Kamailio (siptrace -> hepd over HEPv3), whose rtpengine module anchors the media at a
# real rtpengine (user space, no kernel module) that mirrors the RTCP it relays to hepd as HEP
# type 5 RTCP-JSON with the Call-ID as correlation id. sipp sends no RTCP, so rtcp_sender.py plays
# RTCP from both ends of every call (sender reports with real NTP times, report blocks with known
# loss and jitter, LSR/DLSR from the other end's relayed reports). hepd captures no RTP at all.
# The live daemon (--cores N) must:
#  - count every relayed report, each with its Call-ID;
#  - finish every reported stream with its call (reason call_ended) into the stream families under
#    source="rtcp": loss ratio, jitter, lost packets, RTT and the E-model MOS equal to what the
#    sender reported;
#  - drop every SDP media binding once the calls' dialogs end (hepd_rtp_pending_bindings back to 0);
#  - write one call record per call, holding that call's reported streams with the same figures.
# The HEP it received is also recorded (tcpdump) and read by `hepd pcap --json --records`: the
# offline report lists every reported stream under its own Call-ID with the same figures, and the
# offline call records equal the live ones.
#   rtpengine_rtcp_test.sh HEPD [CORES]      exit 77 = skipped (a tool is missing)
# KEEP_WORK=1 keeps the work folder (logs, recording, reports).
set -euo pipefail
HEPD=$1
CORES=${2:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
for tool in rtpengine kamailio sipp tcpdump python3; do
    command -v "$tool" >/dev/null || { echo "$tool missing: skipped (packaging/dev test installs it)"; exit 77; }
done
ls /usr/lib/*/kamailio/modules/rtpengine.so >/dev/null 2>&1 || { echo "Kamailio's rtpengine module missing: skipped"; exit 77; }
G711A_PCAP=$(dpkg -L sip-tester 2>/dev/null | grep '/g711a\.pcap$' | head -1 || true)
[ -r "$G711A_PCAP" ] || { echo "sipp's sample pcap missing: skipped"; exit 77; }

CALLS=10; RATE=5; SPEECH_PAUSE_MS=3000
WORK=$(mktemp -d /tmp/hepd-interop-rtpengine.XXXXXX)
HEPD_PID=""; KAMAILIO_PID=""; RTPENGINE_PID=""; PIDS=()
# shellcheck source=capture.sh
source "$HERE/capture.sh"
# shellcheck source=ports.sh
source "$HERE/ports.sh"
stop() {  # pid: TERM, then KILL after 5 s
    [ -n "$1" ] || return 0
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
stop_kamailio() {
    [ -n "$KAMAILIO_PID" ] || return 0
    stop "$KAMAILIO_PID"
    for p in $(pgrep -f "kamailio -f $WORK/kamailio.cfg" || true); do kill -KILL "$p" 2>/dev/null || true; done
    KAMAILIO_PID=""
}
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    stop_kamailio
    stop "$RTPENGINE_PID"
    stop "$HEPD_PID"
    stop_tcpdump
    if [ -n "${KEEP_WORK:-}" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

udp_bound() { [ -n "$(ss -Hlun "sport = :$1" 2>/dev/null)" ]; }
wait_bound() {
    for _ in $(seq 100); do udp_bound "$1" && return 0; sleep 0.1; done
    echo "BAD $2 never bound udp/$1"; exit 1
}

read -r HEP_PORT METRICS_PORT KAM_PORT UAC_PORT UAS_PORT NG_PORT < <(free_ports 6)
# One range for all media, split: the UAC's calls (4 ports each, and sipp's own), the UAS, and
# rtpengine's 200 ports.
UAC_MEDIA=$(free_udp_range $((4 * CALLS + 4 + 4 + 200)))
UAS_MEDIA=$((UAC_MEDIA + 4 * CALLS + 4))
ENGINE_MIN=$((UAS_MEDIA + 4))
echo "ports: hep $HEP_PORT, metrics $METRICS_PORT, kamailio $KAM_PORT, uac $UAC_PORT (media $UAC_MEDIA), uas $UAS_PORT (media $UAS_MEDIA), rtpengine ng $NG_PORT (media $ENGINE_MIN+200), $CORES shard(s)"

# Short timers so that the calls' records end within the test. rtpengine deletes a call 30 s after
# Kamailio asks it to and relays RTCP until then: the sender's reports go on a few seconds past the
# BYE. Dialogs linger 10 s after the BYE, longer than that tail; when one leaves its table, its
# reported streams finish with it (call_ended), well before their 20 s idle timeout; the record
# is written 1 s later and flushed at once.
# Names HEP_PORT: written again if start_hepd has to move hepd to other ports.
hepd_ports_changed() {
    cat >"$WORK/hepd.yaml" <<EOF
timers:
  dialog_linger: 10s
  stream_idle_timeout: 20s
records:
  enabled: true
  hold: 1s
  flush_interval: 0s
pcap:
  hep_ports: [$HEP_PORT]
EOF
}
hepd_ports_changed
start_hepd "$WORK/hepd.log" --config "$WORK/hepd.yaml" --state-dir "$WORK/state" --cores "$CORES"

# What hepd receives, for the offline half.
start_tcpdump "$WORK/hep.pcap" "udp and dst port $HEP_PORT" -B 8192

# User space only (--table=-1): no kernel module, nothing to clean up in the kernel. Its own
# ports, so a packaged rtpengine service (Debian's listens on 2223) does not collide with it.
rtpengine --config-file=none --foreground --log-stderr --table=-1 --interface=127.0.0.1 \
    --listen-ng="127.0.0.1:$NG_PORT" --port-min="$ENGINE_MIN" --port-max=$((ENGINE_MIN + 199)) \
    --homer="127.0.0.1:$HEP_PORT" --homer-protocol=udp --homer-id=2002 --pidfile="$WORK/rtpengine.pid" \
    >"$WORK/rtpengine.log" 2>&1 &
RTPENGINE_PID=$!

sed -e "s/@KAMAILIO_PORT@/$KAM_PORT/" -e "s/@HEP_PORT@/$HEP_PORT/" -e "s/@UAS_PORT@/$UAS_PORT/" \
    -e "s/@BUSY_PORT@/$UAS_PORT/" -e "s/@RTPENGINE_NG_PORT@/$NG_PORT/" "$HERE/kamailio.cfg.in" >"$WORK/kamailio.cfg"
kamailio -f "$WORK/kamailio.cfg" -DD -E -A WITH_SIPTRACE -A WITH_RTPENGINE -P "$WORK/kamailio.pid" \
    >"$WORK/kamailio.log" 2>&1 &
KAMAILIO_PID=$!
timeout 60 sipp -sn uas -rtp_echo -mp "$UAS_MEDIA" -i 127.0.0.1 -p "$UAS_PORT" -nostdin >"$WORK/uas.log" 2>&1 &
PIDS+=("$!")
wait_bound "$NG_PORT" rtpengine
wait_bound "$KAM_PORT" kamailio
wait_bound "$UAS_PORT" "the sipp UAS"
wait_bound "$HEP_PORT" hepd

# RTCP for as long as the calls last (10 calls at 5/s, ~3.5 s each, then the BYEs).
timeout 40 env RTCP_SENDER_DEBUG=${RTCP_SENDER_DEBUG:-} python3 "$HERE/rtcp_sender.py" "$NG_PORT" 9 "$WORK/rtcp.json" 0.5 >"$WORK/rtcp_sender.log" 2>&1 &
SENDER_PID=$!
PIDS+=("$SENDER_PID")
sed -e "s|@G711A_PCAP@|$G711A_PCAP|" -e "s|@SPEECH_PAUSE_MS@|$SPEECH_PAUSE_MS|" "$HERE/uac_pcap.xml.in" >"$WORK/uac.xml"
sed -i '/<!-- dtmf begin -->/,/<!-- dtmf end -->/d' "$WORK/uac.xml"
uac_rc=0
timeout 60 sipp -sf "$WORK/uac.xml" "127.0.0.1:$KAM_PORT" -s service -m "$CALLS" -r "$RATE" -mp "$UAC_MEDIA" \
    -i 127.0.0.1 -p "$UAC_PORT" -nostdin -trace_stat -stf "$WORK/uac.csv" >"$WORK/uac.log" 2>&1 || uac_rc=$?
sender_rc=0
wait "$SENDER_PID" || sender_rc=$?
cat "$WORK/rtcp_sender.log"

status=0
python3 - "$WORK" "$CALLS" "$uac_rc" "$sender_rc" "$METRICS_PORT" "$CORES" <<'PY' || status=1
import csv, json, math, re, sys, time, urllib.request
work, calls, uac_rc, sender_rc, port, cores = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
failures = []

def check(what, got, want, ok=None):
    ok = (got == want) if ok is None else ok
    print(("ok  " if ok else "BAD ") + f"{what}: {got!r} (expected {want!r})")
    if not ok:
        failures.append(what)

def scrape():
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    samples = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)', line)
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
        samples.append((m.group(1), labels, float(m.group(4))))
    return samples

def metric(samples, name, **want):
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == w for k, w in want.items()))

rows = list(csv.reader(open(f"{work}/uac.csv"), delimiter=";"))
check("sipp UAC exit status", uac_rc, 0)
check("calls sipp completed", int(rows[-1][rows[0].index("SuccessfulCall(C)")]), calls)
check("RTCP sender exit status", sender_rc, 0)
sides = json.load(open(f"{work}/rtcp.json"))
check("call sides the RTCP sender played (rtpengine's calls x 2)", len(sides), 2 * calls)
sent = sum(s["reports"] for s in sides)
check("every side sent reports", min((s["reports"] for s in sides), default=0) > 0, True)
with_lsr = sum(1 for s in sides if s["with_lsr"] > 0)
check("sides that got the other end's relayed SR (LSR/DLSR)", with_lsr, len(sides))

# The figures hepd must derive from the reports (reported_stream.hpp): each side reported a fixed
# fraction lost (the mean is that fraction), cumulative lost and jitter (PCMA/PCMU: 8 kHz).
# Loopback RTTs are a few ms and the jitter under 30 ms: the one-way delay stays under 100 ms,
# where the E-model's delay impairment is 0, so the MOS depends on the loss alone (G.711 + PLC).
def mos_of(loss_percent):
    ie_eff = 0 + (95 - 0) * loss_percent / (loss_percent / 1.0 + 25.1)
    r = 93.2 - ie_eff
    return 1.0 if r <= 0 else 4.5 if r >= 100 else 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6
n = len(sides)
want_loss = sum(s["fraction_lost"] / 256 for s in sides)
want_jitter = sum(s["jitter"] / 8000 for s in sides)
want_lost = sum(s["cumulative_lost"] for s in sides)
want_mos = sum(mos_of(100 * s["fraction_lost"] / 256) for s in sides)

# Wait (bounded) for the dialogs to leave (BYE + 10 s linger), their reported streams to finish
# with them and the records to be written (hold).
deadline = time.time() + 40
while True:
    m = scrape()
    done = metric(m, "hepd_rtp_streams_finished_total", source="rtcp")
    pending = metric(m, "hepd_rtp_pending_bindings")
    written = metric(m, "hepd_records_written_total")
    if (done >= n and pending == 0 and written >= calls) or time.time() > deadline:
        break
    time.sleep(0.5)

check("hepd RTCP-JSON reports (every one rtpengine relayed)", metric(m, "hepd_rtcp_reports_total", source="rtcp_json"), sent)
check("hepd RTCP-JSON without a Call-ID", metric(m, "hepd_rtcp_json_uncorrelated_total"), 0)
check("hepd RTCP-JSON parse errors", metric(m, "hepd_rtcp_json_parse_errors_total"), 0)
check("hepd RTP captured (none: rtpengine sends only RTCP stats)", metric(m, "hepd_rtp_packets_total"), 0)
check("hepd completed dialogs", metric(m, "hepd_dialogs_finished_total", outcome="completed"), calls)
check("hepd reported streams finished (source=rtcp)", metric(m, "hepd_rtp_streams_finished_total", source="rtcp"), n)
check("hepd reported streams finished with their call",
      metric(m, "hepd_rtp_streams_finished_total", source="rtcp", reason="call_ended"), n)
check("hepd measured streams finished", metric(m, "hepd_rtp_streams_finished_total", source="measured"), 0)
check("hepd reported streams by codec (PCMA offer, PCMU answer)",
      metric(m, "hepd_rtp_streams_by_codec_total", source="rtcp", codec="pcma")
      + metric(m, "hepd_rtp_streams_by_codec_total", source="rtcp", codec="pcmu"), n)
check("hepd lost packets (source=rtcp)", metric(m, "hepd_rtp_lost_packets_total", source="rtcp"), want_lost)
check("hepd loss ratio count (source=rtcp)", metric(m, "hepd_rtp_loss_ratio_count", source="rtcp"), n)
got = metric(m, "hepd_rtp_loss_ratio_sum", source="rtcp")
check("hepd loss ratio sum = the reported fractions", round(got, 6), round(want_loss, 6))
check("hepd jitter count (source=rtcp)", metric(m, "hepd_rtp_jitter_seconds_count", source="rtcp"), n)
got = metric(m, "hepd_rtp_jitter_seconds_sum", source="rtcp")
check("hepd jitter sum = the reported jitters at 8 kHz", round(got, 6), round(want_jitter, 6))
check("hepd RTT count (source=rtcp)", metric(m, "hepd_rtp_rtt_seconds_count", source="rtcp"), with_lsr)
got = metric(m, "hepd_rtp_rtt_seconds_sum", source="rtcp")
check("hepd RTT sum: loopback, under 50 ms a stream", round(got, 4), f"< {0.05 * with_lsr}", ok=0 <= got < 0.05 * with_lsr)
check("hepd MOS count (source=rtcp)", metric(m, "hepd_rtp_mos_count", source="rtcp"), n)
got = metric(m, "hepd_rtp_mos_sum", source="rtcp")
check("hepd MOS sum = the E-model of the reported loss", round(got, 4), round(want_mos, 4),
      ok=abs(got - want_mos) < 1e-6 * n)
check("hepd pending media bindings after the calls", metric(m, "hepd_rtp_pending_bindings"), 0)
check("hepd bindings released with their dialogs", metric(m, "hepd_rtp_binding_events_total", event="released") > 0, True)
check("hepd bindings expired (none waited for the 4 h timeout)", metric(m, "hepd_rtp_binding_events_total", event="expired"), 0)
check("hepd binding ends sent = received", metric(m, "hepd_shard_unbinds_total", direction="sent"),
      metric(m, "hepd_shard_unbinds_total", direction="received"))

# The call records: one per call, each with its two reported streams and the sender's figures.
check("hepd records written", metric(m, "hepd_records_written_total"), calls)
check("hepd records dropped", metric(m, "hepd_records_dropped_total"), 0)
records = [json.loads(line) for line in open(f"{work}/state/records/calls.jsonl")]
check("call records (one per call)", len(records), calls)
check("call records with outcome completed", sum(r["outcome"] == "completed" for r in records), calls)
by_call = {r["call_id"]: r for r in records}
check("call records, one per Call-ID", len(by_call), calls)
bad = []
for s in sides:
    rows = [x for x in by_call.get(s["call_id"], {}).get("reported", []) if x["ssrc"] == s["source_ssrc"]]
    if len(rows) != 1:
        bad.append(f"{s['call_id']} SSRC {s['source_ssrc']}: {len(rows)} reported entries")
        continue
    x = rows[0]
    loss = 100 * s["fraction_lost"] / 256
    want = (s["reports"], s["cumulative_lost"], round(loss, 2), s["jitter"] / 8, round(loss, 3))
    got = (x["reports"], x["cumulative_lost"], x["fraction_lost_pct"], x["jitter_ms"], x["loss_pct"])
    if (got != want or x["mos"] is None or abs(x["mos"] - mos_of(loss)) > 0.005 + 1e-9
            or x["codec"] not in ("pcma", "pcmu") or (s["with_lsr"] > 0) != (x["rtt_ms"] is not None)
            or x["end_reason"] != "call_ended"):
        bad.append(f"{s['call_id']} SSRC {s['source_ssrc']}: (reports, lost, fraction %, jitter ms, loss %) "
                   f"{got}, sent {want}; MOS {x['mos']} (E-model {mos_of(loss):.4f}), codec {x['codec']}, "
                   f"RTT {x['rtt_ms']}, end {x['end_reason']}")
for b in bad:
    print("BAD record " + b)
check("reported streams in the records with the sender's figures", len(sides) - len(bad), len(sides))
check("reported streams in the records, all told", sum(len(r["reported"]) for r in records), len(sides))
json.dump({"sides": sides}, open(f"{work}/expected.json", "w"))
sys.exit(1 if failures else 0)
PY

# Stop hepd first (its shutdown must be clean), then the recording: hepd pcap reads what it got.
kill -TERM "$HEPD_PID"
for _ in $(seq 50); do kill -0 "$HEPD_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$HEPD_PID" 2>/dev/null; then echo "BAD hepd still running 5 s after SIGTERM"; status=1; fi
wait "$HEPD_PID" && rc=0 || rc=$?
HEPD_PID=""
[ "$rc" -eq 0 ] || { echo "BAD hepd exit status $rc"; status=1; }
stop_tcpdump
tail -3 "$WORK/tcpdump.log"
# A busy machine may still drop a packet from the recording (not from hepd's socket): then a
# stream may count fewer reports offline; its figures stay (the sender's are the same each time).
TCPDUMP_DROPS=$(tcpdump_drops)

"$HEPD" pcap "$WORK/hep.pcap" --config "$WORK/hepd.yaml" --cores "$CORES" --json "$WORK/report.json" \
    --records "$WORK/offline.jsonl" >"$WORK/pcap.log" 2>&1 || { echo "BAD hepd pcap exit status"; cat "$WORK/pcap.log"; status=1; }
python3 - "$WORK" "$TCPDUMP_DROPS" <<'PY' || status=1
import json, sys
work, recording_drops = sys.argv[1], int(sys.argv[2])
sides = json.load(open(f"{work}/rtcp.json"))
report = json.load(open(f"{work}/report.json"))
rep = report["streams"]["reported"]
failures = []
def check(what, got, want):
    ok = got == want
    print(("ok  " if ok else "BAD ") + f"offline: {what}: {got!r} (expected {want!r})")
    if not ok:
        failures.append(what)
check("reported streams finished", sum(rep["finished"].values()), len(sides))
rows = {(w["call_id"], w["ssrc"]): w for w in rep["worst"]}
check("reported streams listed, each under its Call-ID and SSRC", len(rows), min(len(sides), 20))
for s in sides:
    w = rows.get((s["call_id"], s["source_ssrc"]))
    if w is None:
        if len(sides) <= 20:
            failures.append("missing row")
            print(f"BAD offline: no reported stream {s['call_id']} SSRC {s['source_ssrc']}")
        continue
    reports = s["reports"] if recording_drops == 0 or not 0 < w["reports"] <= s["reports"] else w["reports"]
    want = (reports, s["cumulative_lost"], round(100 * s["fraction_lost"] / 256, 6), round(s["jitter"] / 8, 6))
    got = (w["reports"], w["lost"], round(w["loss_percent"], 6), round(w["max_jitter_ms"], 6))
    if got != want or w["mos"] is None or (s["with_lsr"] > 0) != (w["rtt_ms"] is not None):
        failures.append("row figures")
        print(f"BAD offline: {s['call_id']} SSRC {s['source_ssrc']}: (reports, lost, loss %, jitter ms) {got}, "
              f"sent {want}; MOS {w['mos']}, RTT {w['rtt_ms']}")
check("rows with the figures the sender reported", len(failures), 0)

# The offline records equal the live ones, but for how each reported stream ended (live: its call
# or its idle timeout; offline: the end of the capture may come first).
def comparable(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        for x in r["reported"]:
            x.pop("end_reason")
            if recording_drops:  # a report missing from the recording
                x.pop("reports"), x.pop("last")
        out[r["call_id"]] = r
    return out
live = comparable(f"{work}/state/records/calls.jsonl")
offline = comparable(f"{work}/offline.jsonl")
check("offline records: the same calls", sorted(offline), sorted(live))
differ = [c for c in live if c in offline and live[c] != offline[c]]
for c in differ[:3]:
    print(f"BAD offline record {c}:\n  live    {json.dumps(live[c], sort_keys=True)}\n  offline {json.dumps(offline[c], sort_keys=True)}")
check("offline records equal to the live ones", len(differ), 0)
sys.exit(1 if failures else 0)
PY

if [ "$status" -ne 0 ]; then
    echo "--- hepd log"; tail -20 "$WORK/hepd.log"
    echo "--- rtpengine log"; tail -15 "$WORK/rtpengine.log"
    echo "--- kamailio log"; tail -15 "$WORK/kamailio.log"
    echo "--- sipp UAC"; grep -A25 'Scenario Screen' "$WORK/uac.log" | tail -25 || true
fi
exit "$status"
