#!/usr/bin/env python3
"""Call records from the repository's sipp capture (10 calls through Kamailio, G.711 A-law with
RFC 2833 DTMF, tests/fixtures/README.md), offline and live:

1. `hepd pcap --records` with 1 and 2 cores: the same 10 lines, in INVITE order, every call
   completed (200, BYE answered 200, caller hung up) with its 4 streams (PCMA both ways with a
   MOS, telephone-event both ways without), and the parties sipp names.
2. The daemon (records on, 1 shard) fed the same packets as HEPv3 over UDP, paced as captured
   and with their capture times moved to now: its record file, once it holds 10 lines, equals
   the offline records except for what legitimately differs -- every absolute time is moved by
   the replay's offset (the intervals are the same to the microsecond), and a stream's
   end_reason is `idle` live where the offline run may end it at the end of the capture
   (`flushed`). Both runs use the same timers (one configuration file).
3. The same with 2 shards: the SIP side of every record and the DTMF streams are equal; the
   voice streams may differ at their start (see replay's caller below: bindings cross shards
   through a queue live, in input order offline).

Loopback only, free ports, every wait bounded by one deadline.

  records_live_test.py HEPD_BINARY FIXTURES_DIR SUPPORT_DIR
"""
import datetime
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

hepd, fixtures, support = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, support)
from hepd_live import US, check, chunk, Daemon, failures  # noqa: E402

CAPTURE = os.path.join(fixtures, "sipp-10-calls-g711-via-kamailio.pcap")
SIP_PORTS = {5060, 5061, 5070}
TIME_FIELDS = ("start", "ringing", "answer", "cancel", "bye", "end")
deadline = time.monotonic() + 150

CONFIG = """
timers:
  dialog_linger: 2s
  stream_idle_timeout: 2s
records:
  enabled: true
  hold: 2s
  flush_interval: 0s
"""


def frames(path):
    """(capture time in microseconds, src, dst, UDP payload) of every IPv4/UDP frame."""
    with open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack("<I", data[:4])
    assert magic == 0xa1b2c3d4, "a little-endian microsecond pcap"
    assert struct.unpack("<I", data[20:24])[0] == 1, "Ethernet"
    at, out = 24, []
    while at + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack("<IIII", data[at:at + 16])
        frame = data[at + 16:at + 16 + incl]
        at += 16 + incl
        if struct.unpack("!H", frame[12:14])[0] != 0x0800:
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0f) * 4
        if ip[9] != 17:
            continue
        udp = ip[ihl:]
        sport, dport, length = struct.unpack("!HHH", udp[:6])
        out.append((sec * US + usec, (socket.inet_ntoa(ip[12:16]), sport), (socket.inet_ntoa(ip[16:20]), dport),
                    udp[8:length]))
    return out


def hep3(payload, ts_us, src, dst, proto_type):
    seconds, micros = divmod(ts_us, US)
    body = b"".join([
        chunk(1, b"\x02"), chunk(2, b"\x11"),
        chunk(3, socket.inet_aton(src[0])), chunk(4, socket.inet_aton(dst[0])),
        chunk(7, struct.pack("!H", src[1])), chunk(8, struct.pack("!H", dst[1])),
        chunk(9, struct.pack("!I", seconds)), chunk(10, struct.pack("!I", micros)),
        chunk(11, bytes([proto_type])), chunk(12, struct.pack("!I", 2001)), chunk(15, payload),
    ])
    return b"HEP3" + struct.pack("!H", 6 + len(body)) + body


def offline(work, cores):
    out = os.path.join(work, f"offline-{cores}.jsonl")
    subprocess.run([hepd, "pcap", CAPTURE, "--config", os.path.join(work, "hepd.yaml"), "--cores", str(cores),
                    "--records", out], check=True, stdout=subprocess.DEVNULL, timeout=60)
    with open(out) as f:
        return f.read()


def us_of(text):
    t = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return round(t.timestamp() * US)


def shifted(text, offset):
    t = datetime.datetime.fromtimestamp((us_of(text) + offset) / US, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def comparable(record, offset):
    """The record as the live daemon should have written it, offline times moved by `offset`."""
    r = dict(record)
    for k in TIME_FIELDS:
        if r[k] is not None:
            r[k] = shifted(r[k], offset)
    streams = []
    for s in r["streams"]:
        s = dict(s, first=shifted(s["first"], offset), last=shifted(s["last"], offset))
        del s["end_reason"]
        streams.append(s)
    r["streams"] = streams
    return r


def differences(got, want):
    """Field -> (got, want) where they differ; streams element by element."""
    out = {}
    for k in sorted(set(got) | set(want)):
        g, w = got.get(k), want.get(k)
        if k == "streams" and isinstance(g, list) and isinstance(w, list) and len(g) == len(w):
            for i, (gs, ws) in enumerate(zip(g, w)):
                for f in sorted(set(gs) | set(ws)):
                    if gs.get(f) != ws.get(f):
                        out[f"streams[{i}].{f}"] = (gs.get(f), ws.get(f))
        elif g != w:
            out[k] = (g, w)
    return out


class ShardedDaemon(Daemon):
    """hepd_live.Daemon with the shard count of the test's choosing."""

    def __init__(self, hepd, work, config, deadline, cores):
        self.cores = cores
        super().__init__(hepd, work, config, deadline)

    def _start(self, work, config):
        self.log = open(os.path.join(work, "hepd.log"), "w+")
        state = os.path.join(work, "state")
        os.makedirs(state, exist_ok=True)
        self.proc = subprocess.Popen([self.hepd, "--config", config, "--hep-listen", f"127.0.0.1:{self.hep_port}",
                                      "--metrics-listen", f"127.0.0.1:{self.metrics_port}", "--state-dir", state,
                                      "--cores", str(self.cores)], stdout=self.log, stderr=subprocess.STDOUT)
        self.up = False
        limit = time.monotonic() + self.remaining(20)
        while time.monotonic() < limit and self.proc.poll() is None:
            if self.try_scrape() is not None:
                self.up = True
                return True
            time.sleep(0.1)
        return False


def replay(packets, work, cores):
    """The daemon fed `packets` as HEP, paced as captured, times moved to now; its records
    once it has written 10, and the offset the times were moved by."""
    os.makedirs(work)
    config = os.path.join(work, "..", "hepd.yaml")
    daemon = ShardedDaemon(hepd, work, config, deadline, cores)
    record_file = os.path.join(work, "state", "records", "calls.jsonl")
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        first = packets[0][0]
        offset = (time.time_ns() // 1000) - first
        start = time.monotonic()
        for ts, src, dst, payload in packets:
            delay = (ts - first) / US - (time.monotonic() - start)
            if delay > 0:
                time.sleep(delay)
            kind = 1 if src[1] in SIP_PORTS or dst[1] in SIP_PORTS else 4
            sock.sendto(hep3(payload, ts + offset, src, dst, kind), ("127.0.0.1", daemon.hep_port))
        scrape = daemon.wait(lambda s: s.get("hepd_records_written_total") >= 10, timeout=60)
        check(f"{cores} shard(s): records written (metric)", scrape.get("hepd_records_written_total"), 10.0)
        check(f"{cores} shard(s): records dropped (metric)", scrape.get("hepd_records_dropped_total"), 0.0)
        check(f"{cores} shard(s): record bytes (metric)", scrape.get("hepd_records_written_bytes_total"),
              float(os.path.getsize(record_file)))
    finally:
        status = daemon.stop()
    check(f"{cores} shard(s): hepd exit status", status, 0)
    with open(record_file) as f:
        return [json.loads(line) for line in f], offset


def main():
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "hepd.yaml"), "w") as f:
            f.write(CONFIG)

        one, two = offline(work, 1), offline(work, 2)
        check("offline records identical for 1 and 2 cores", one == two, True)
        records = [json.loads(line) for line in one.splitlines()]
        check("offline records", len(records), 10)
        check("in INVITE order", [r["call_id"] for r in records], [f"{i}-15403@127.0.0.1" for i in range(1, 11)])
        check("schema version", {r["v"] for r in records}, {1})
        check("outcomes", {r["outcome"] for r in records}, {"completed"})
        check("final status, BYE status, hangup", {(r["final_status"], r["bye_status"], r["hangup"]) for r in records},
              {(200, 200, "caller")})
        check("parties", {(r["from_user"], r["from_host"], r["to_user"], r["to_host"]) for r in records},
              {("sipp", "127.0.0.1", "service", "127.0.0.1")})
        check("hops (UAC-proxy, proxy-UAS)", {r["hops"] for r in records}, {2})
        check("streams per call", [len(r["streams"]) for r in records], [4] * 10)
        check("codecs and MOS per call",
              {tuple(sorted((s["codec"], s["mos"] is not None) for s in r["streams"])) for r in records},
              {(("pcma", True), ("pcma", True), ("telephone_event", False), ("telephone_event", False))})
        # RFC 2833: an event's last packet is sent three times, with one sequence number.
        check("loss by codec (duplicates count negative)",
              {(s["codec"], s["lost"]) for r in records for s in r["streams"]}, {("pcma", 0), ("telephone_event", -2)})
        check("durations about 2 s", {round(r["duration_ms"] / 1000) for r in records}, {2})

        packets = frames(CAPTURE)
        check("frames in the capture", len(packets), 1010)
        # One shard: the live records equal the offline ones but for the replay's time offset.
        live, offset = replay(packets, os.path.join(work, "live-1"), 1)
        check("live records, 1 shard", len(live), 10)
        want = {r["call_id"]: comparable(r, offset) for r in records}
        got = {r["call_id"]: comparable(r, 0) for r in live}
        check("live calls, 1 shard", set(got), set(want))
        for call_id in sorted(want):
            if call_id in got and got[call_id] != want[call_id]:
                check(f"1 shard: live record of {call_id} equals the offline one",
                      differences(got[call_id], want[call_id]), {})
        check("1 shard: live records equal to the offline ones", sum(got.get(c) == want[c] for c in want), 10)

        # Two shards: the SIP side of every record is the same too. The streams are not always:
        # every call sends to the UAS's one media port with one SSRC (sipp replays one capture),
        # and live a binding reaches the stream's shard through a queue, after the first packets
        # of the next call may have gone to the previous call's stream (offline the bindings are
        # applied in input order). The DTMF streams, seconds into each call, are the same.
        live, offset = replay(packets, os.path.join(work, "live-2"), 2)
        check("live records, 2 shards", len(live), 10)
        want = {r["call_id"]: comparable(r, offset) for r in records}
        got = {r["call_id"]: comparable(r, 0) for r in live}
        check("live calls, 2 shards", set(got), set(want))
        sip_side = lambda r: {k: v for k, v in r.items() if k != "streams"}  # noqa: E731
        dtmf = lambda r: [s for s in r["streams"] if s["codec"] == "telephone_event"]  # noqa: E731
        check("2 shards: SIP fields equal to the offline ones",
              sum(sip_side(got[c]) == sip_side(want[c]) for c in want if c in got), 10)
        check("2 shards: DTMF streams equal to the offline ones",
              sum(dtmf(got[c]) == dtmf(want[c]) for c in want if c in got), 10)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
