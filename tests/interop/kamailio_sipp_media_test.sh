#!/usr/bin/env bash
# Real media through the interoperability set-up: sipp calls through the Kamailio proxy with G.711
# A-law RTP in both directions (the UAC plays sipp's own g711a.pcap from the port it offers, the
# UAS `-sn uas -rtp_echo` echoes every packet back), recorded on lo with tcpdump and read back
# with `hepd pcap --json`. hepd must find one stream per call and direction, no loss, the codec's
# best MOS, and every stream attributed to the call whose SDP named its addresses (that mapping is
# read from the recording itself with tshark, not from hepd). Loopback only, bounded in time.
#   kamailio_sipp_media_test.sh HEPD                 the test (exit 77 = skipped: a tool is missing)
#   kamailio_sipp_media_test.sh HEPD --record PATH   record the flow of
#       tests/fixtures/sipp-10-calls-g711-via-kamailio.pcap into PATH (10 calls with DTMF, fixed
#       ports 5060/5061/5070 and media 16000/26000, which must be free) and print what tshark
#       reads in it; nothing is asserted.
# KEEP_WORK=1 keeps the work folder (logs, recording, report).
set -euo pipefail
HEPD=$1
RECORD=""
if [ "${2:-}" = "--record" ]; then
    RECORD=${3:?--record needs a PATH}
    case "$RECORD" in /*) ;; *) RECORD="$PWD/$RECORD" ;; esac
fi
HERE=$(cd "$(dirname "$0")" && pwd)
for tool in kamailio sipp tcpdump tshark python3; do
    command -v "$tool" >/dev/null || { echo "$tool missing: skipped (packaging/dev test installs it)"; exit 77; }
done
# sipp's own samples (Debian package sip-tester).
G711A_PCAP=$(dpkg -L sip-tester 2>/dev/null | grep '/g711a\.pcap$' | head -1 || true)
DTMF_PCAP=$(dpkg -L sip-tester 2>/dev/null | grep '/dtmf_2833_1\.pcap$' | head -1 || true)
if [ ! -r "$G711A_PCAP" ] || [ ! -r "$DTMF_PCAP" ]; then echo "sipp's sample pcaps missing: skipped"; exit 77; fi

WORK=$(mktemp -d /tmp/hepd-interop-media.XXXXXX)
KAMAILIO_PID=""; PIDS=()
# shellcheck source=capture.sh
source "$HERE/capture.sh"
# shellcheck source=ports.sh
source "$HERE/ports.sh"
stop_kamailio() {
    [ -n "$KAMAILIO_PID" ] || return 0
    # The main process stops its children on SIGTERM; whatever survives it is found by this
    # run's own configuration path and stopped by process id.
    kill -TERM "$KAMAILIO_PID" 2>/dev/null || true
    wait "$KAMAILIO_PID" 2>/dev/null || true
    for p in $(pgrep -f "kamailio -f $WORK/kamailio.cfg" || true); do kill -KILL "$p" 2>/dev/null || true; done
    KAMAILIO_PID=""
}
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    stop_tcpdump
    stop_kamailio
    if [ -n "${KEEP_WORK:-}" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

udp_bound() { [ -n "$(ss -Hlun "sport = :$1" 2>/dev/null)" ]; }
wait_bound() {  # port what
    for _ in $(seq 100); do udp_bound "$1" && return 0; sleep 0.1; done
    echo "BAD $2 never bound udp/$1"; exit 1
}

if [ -n "$RECORD" ]; then
    # The fixture's set-up: 10 calls at 10 per second, speech then an RFC 2833 digit, 2 s each.
    CALLS=10; RATE=10; SPEECH_PAUSE_MS=1000; WITH_DTMF=1
    KAM_PORT=5060; UAC_PORT=5061; UAS_PORT=5070; UAC_MEDIA=16000; UAS_MEDIA=26000
    for p in $KAM_PORT $UAC_PORT $UAS_PORT $UAS_MEDIA; do
        udp_bound "$p" && { echo "udp/$p is in use: --record needs the fixture's ports"; exit 1; }
    done
else
    # 8 calls, 5 per second, each ~1.5 s of speech: up to 8 in progress at once. 8 x 2 = 16
    # streams stays within the 20 rows of the report's `streams.worst`, the only place where it
    # names each stream with its Call-ID, so every stream is checked.
    CALLS=8; RATE=5; SPEECH_PAUSE_MS=1500; WITH_DTMF=0
    read -r KAM_PORT UAC_PORT UAS_PORT < <(free_ports 3)
    # The UAC plays call n from UAC_MEDIA + 4(n-1) ([auto_media_port]); sipp also binds its own
    # echo sockets at -mp and -mp + 2. The UAS echoes on UAS_MEDIA (and + 2 for video). One
    # range holds both.
    UAC_MEDIA=$(free_udp_range $((4 * CALLS + 4 + 4)))
    UAS_MEDIA=$((UAC_MEDIA + 4 * CALLS + 4))
fi
UAC_MEDIA_LAST=$((UAC_MEDIA + 4 * CALLS + 3))
PCAP=${RECORD:-$WORK/calls.pcap}
echo "ports: kamailio $KAM_PORT, uac $UAC_PORT (media $UAC_MEDIA-$UAC_MEDIA_LAST), uas $UAS_PORT (media $UAS_MEDIA)"

# Loopback, only this test's ports.
FILTER="udp and (port $KAM_PORT or port $UAC_PORT or port $UAS_PORT or portrange $UAC_MEDIA-$UAC_MEDIA_LAST or portrange $UAS_MEDIA-$((UAS_MEDIA + 3)))"
start_tcpdump "$PCAP" "$FILTER"

sed -e "s/@KAMAILIO_PORT@/$KAM_PORT/" -e "s/@HEP_PORT@/9/" -e "s/@UAS_PORT@/$UAS_PORT/" \
    -e "s/@BUSY_PORT@/$UAS_PORT/" "$HERE/kamailio.cfg.in" >"$WORK/kamailio.cfg"
kamailio -f "$WORK/kamailio.cfg" -DD -E -P "$WORK/kamailio.pid" >"$WORK/kamailio.log" 2>&1 &
KAMAILIO_PID=$!
timeout 60 sipp -sn uas -rtp_echo -mp "$UAS_MEDIA" -i 127.0.0.1 -p "$UAS_PORT" -nostdin >"$WORK/uas.log" 2>&1 &
PIDS+=("$!")
wait_bound "$KAM_PORT" kamailio
wait_bound "$UAS_PORT" "the sipp UAS"

sed -e "s|@G711A_PCAP@|$G711A_PCAP|" -e "s|@DTMF_PCAP@|$DTMF_PCAP|" -e "s|@SPEECH_PAUSE_MS@|$SPEECH_PAUSE_MS|" \
    "$HERE/uac_pcap.xml.in" >"$WORK/uac.xml"
[ "$WITH_DTMF" = 1 ] || sed -i '/<!-- dtmf begin -->/,/<!-- dtmf end -->/d' "$WORK/uac.xml"
uac_rc=0
timeout 60 sipp -sf "$WORK/uac.xml" "127.0.0.1:$KAM_PORT" -s service -m "$CALLS" -r "$RATE" -mp "$UAC_MEDIA" \
    -i 127.0.0.1 -p "$UAC_PORT" -nostdin -trace_stat -stf "$WORK/uac.csv" >"$WORK/uac.log" 2>&1 || uac_rc=$?
sleep 0.5  # the last echoes
stop_tcpdump
stop_kamailio
tail -3 "$WORK/tcpdump.log"

if [ -n "$RECORD" ]; then
    echo "recorded $RECORD (sipp UAC exit status $uac_rc)"
    tshark -r "$RECORD" -d "udp.port==$KAM_PORT,sip" -q -z io,phs 2>/dev/null | sed -n '/^eth/,$p'
    tshark -r "$RECORD" -d "udp.port==$KAM_PORT,sip" -d "udp.port==$UAS_MEDIA,rtp" -q -z rtp,streams 2>/dev/null
    exit "$uac_rc"
fi

"$HEPD" pcap "$PCAP" --cores 2 --json "$WORK/report.json" >"$WORK/hepd.log" 2>&1 || {
    echo "BAD hepd pcap exit status $?"; cat "$WORK/hepd.log"; exit 1; }
cat "$WORK/hepd.log"

# The truth from the recording, with tshark: SDP addresses per Call-ID, and the RTP streams
# (all of them have the UAS's echo port at one end).
tshark -r "$PCAP" -d "udp.port==$KAM_PORT,sip" -Y sdp -T fields -E separator='|' \
    -e sip.Call-ID -e sdp.connection_info -e sdp.media >"$WORK/sdp.txt" 2>/dev/null
tshark -r "$PCAP" -d "udp.port==$KAM_PORT,sip" -d "udp.port==$UAS_MEDIA,rtp" -q -z rtp,streams \
    >"$WORK/rtp_streams.txt" 2>/dev/null
cat "$WORK/rtp_streams.txt"

status=0
python3 - "$WORK" "$CALLS" "$uac_rc" <<'PY' || status=1
import csv, json, re, sys
work, calls, uac_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
failures = []

def check(what, got, want):
    ok = got == want
    print(("ok  " if ok else "BAD ") + f"{what}: {got!r} (expected {want!r})")
    if not ok:
        failures.append(what)

rows = list(csv.reader(open(f"{work}/uac.csv"), delimiter=";"))
head, last = rows[0], rows[-1]
check("sipp UAC exit status", uac_rc, 0)
check("calls sipp completed", int(last[head.index("SuccessfulCall(C)")]), calls)

# Call-ID -> the media addresses its SDP named (offer and answer).
named = {}
for line in open(f"{work}/sdp.txt"):
    call_id, conn, media = (line.rstrip("\n").split("|") + ["", ""])[:3]
    ip = conn.split()[-1]
    port = media.split()[1]
    named.setdefault(call_id, set()).add(f"{ip}:{port}")
check("Call-IDs with SDP in the recording", len(named), calls)

# tshark -z rtp,streams rows: start end src_ip src_port dst_ip dst_port ssrc payload... pkts lost.
streams = []
for line in open(f"{work}/rtp_streams.txt"):
    f = line.split()
    if len(f) < 10 or not re.fullmatch(r"0x[0-9A-Fa-f]+", f[6]):
        continue
    pkts_at = next(i for i in range(8, len(f)) if f[i].isdigit())
    streams.append({"src": f"{f[2]}:{f[3]}", "dst": f"{f[4]}:{f[5]}", "payload": " ".join(f[7:pkts_at]),
                    "packets": int(f[pkts_at]), "lost": int(f[pkts_at + 1])})
# The call a stream belongs to: the one whose SDP named both of its ends. The UAS answers every
# call with the same echo address, so its end alone says nothing; the UAC's end is per call.
expected_call, unclear = {}, []
for s in streams:
    owners = sorted(c for c, addrs in named.items() if s["src"] in addrs and s["dst"] in addrs)
    if len(owners) == 1:
        expected_call[(s["src"], s["dst"])] = owners[0]
    else:
        unclear.append(f"    {s['src']} -> {s['dst']}: named by {owners or 'no call'}")
check("recording: streams whose two ends one call's SDP named", len(expected_call), len(streams))
for line in unclear:
    print(line)

# What sipp sends here: one G.711 A-law stream per call and direction, no telephone-event (the
# DTMF part of the scenario is left out of this test).
check("recording: RTP streams (tshark)", len(streams), 2 * calls)
check("recording: payload types (tshark)", sorted({s["payload"] for s in streams}), ["g711A"])
# sipp loses nothing on loopback, but a loaded machine can drop packets before tcpdump sees them
# ("packets dropped by kernel"): then the recording has gaps, and hepd must find exactly those.
recorded_lost = {(s["src"], s["dst"]): s["lost"] for s in streams}
print(f"    recording: lost packets (tshark): {sum(recorded_lost.values())}")
check("recording: streams per call", sorted(list(expected_call.values()).count(c) for c in named), [2] * calls)

r = json.load(open(f"{work}/report.json"))
d, st = r["dialogs"], r["streams"]
check("hepd dialogs", d["created"], calls)
check("hepd completed dialogs", d["finished"].get("completed", 0), calls)
check("hepd streams (one per call and direction)", st["started"], len(streams))
check("hepd streams by codec", st["by_codec"], {"pcma": len(streams)})
check("hepd RTP packets (tshark's total)", st["rtp_packets"], sum(s["packets"] for s in streams))
check("hepd lost packets (tshark's total)", st["lost_packets"], sum(recorded_lost.values()))
check("hepd RTP parse errors", st["rtp_errors"], {})

# The best MOS hepd gives G.711: no loss, and no delay known (no RTCP), so its E-model
# (daemon/rtp/emodel.hpp, ITU-T G.107 with every other input at its default) has
# R = 93.2 - Id(0) - Ie_eff(Ie 0, Ppl 0) = 93.2 and MOS = 1 + 0.035 R + R (R - 60)(100 - R) 7e-6
# = 4.409285824 (the figure the report gives a clean stream; G.711 with PLC cannot score higher).
R = 93.2
MOS_MAX = 1 + 0.035 * R + R * (R - 60) * (100 - R) * 7e-6
mos = st["mos"]
check("hepd MOS count (every stream rated)", mos["count"], len(streams))
if all(lost == 0 for lost in recorded_lost.values()):
    check("hepd MOS min at the G.711 maximum", round(mos["min"], 6), round(MOS_MAX, 6))
check("hepd MOS max at the G.711 maximum", round(mos["max"], 6), round(MOS_MAX, 6))

worst = st["worst"]
check("hepd lists every stream with its Call-ID (streams.worst)", len(worst), len(streams))
wrong = []
for w in worst:
    key = (w["src"], w["dst"])
    want = expected_call.get(key)
    if want is None:
        failures.append(f"stream {key} not in the recording")
        print(f"BAD hepd stream {w['src']} -> {w['dst']} is not one tshark found")
        continue
    tshark_packets = next(s["packets"] for s in streams if (s["src"], s["dst"]) == key)
    if w["packets"] != tshark_packets:
        failures.append(f"stream {key} packets")
        print(f"BAD hepd stream {w['src']} -> {w['dst']}: {w['packets']} packets, tshark {tshark_packets}")
    # A clean stream scores the G.711 maximum, one with gaps less.
    clean = recorded_lost[key] == 0
    at_max = w["mos"] is not None and round(w["mos"], 6) == round(MOS_MAX, 6)
    if w["lost"] != recorded_lost[key] or (w["loss_percent"] == 0) != clean or w["mos"] is None or at_max != clean:
        failures.append(f"stream {key} quality")
        print(f"BAD hepd stream {w['src']} -> {w['dst']}: lost {w['lost']}, MOS {w['mos']}")
    if w["call_id"] != want:
        wrong.append(f"    {w['src']} -> {w['dst']}: hepd says {w['call_id'] or '(none)'}, SDP says {want}")
check("hepd streams attributed to the call whose SDP named them", len(wrong), 0)
for line in sorted(wrong):
    print(line)
sys.exit(1 if failures or wrong else 0)
PY

if [ "$status" -ne 0 ]; then
    echo "--- kamailio log"; tail -15 "$WORK/kamailio.log"
    echo "--- sipp UAC"; grep -A25 'Scenario Screen' "$WORK/uac.log" | tail -25 || true
fi
exit "$status"
