#!/usr/bin/env python3
"""RTCP beside sipp, for the rtpengine interoperability test (rtpengine_rtcp_test.sh).

sipp sends RTP but no RTCP, and rtpengine mirrors to HEP only the RTCP it receives. This plays
both ends of every call that rtpengine is anchoring: it asks rtpengine (ng control protocol,
bencode over UDP) for its calls and their media ports, and from each endpoint's RTCP address (its
SDP media port + 1) sends RFC 3550 sender reports to rtpengine's RTCP port facing that endpoint,
every INTERVAL seconds, with a real NTP time and one report block about the stream it receives:
fixed fraction lost, cumulative lost and jitter per call and side (so that the figures hepd
derives can be checked), and LSR/DLSR from the last sender report that came from rtpengine (so
that a receiver can derive an RTT).

  rtcp_sender.py NG_PORT SECONDS OUT.json [INTERVAL]

Runs for SECONDS, then writes OUT.json: per call and side what was reported (ssrc, the source
ssrc reported on, reports sent, fraction lost, cumulative lost, jitter, reports carrying an LSR).
"""
import json
import os
import random
import select
import socket
import struct
import sys
import time

NTP_EPOCH_OFFSET = 2208988800
STATS = {"fallback_binds": 0, "received": 0, "relayed_srs": 0}


def bencode(v):
    if isinstance(v, int):
        return b"i%de" % v
    if isinstance(v, str):
        v = v.encode()
    if isinstance(v, bytes):
        return b"%d:%s" % (len(v), v)
    if isinstance(v, list):
        return b"l" + b"".join(bencode(x) for x in v) + b"e"
    if isinstance(v, dict):
        return b"d" + b"".join(bencode(k) + bencode(v[k]) for k in sorted(v)) + b"e"
    raise TypeError(type(v))


def bdecode(data, i=0):
    c = data[i:i + 1]
    if c == b"i":
        end = data.index(b"e", i)
        return int(data[i + 1:end]), end + 1
    if c == b"l":
        out, i = [], i + 1
        while data[i:i + 1] != b"e":
            x, i = bdecode(data, i)
            out.append(x)
        return out, i + 1
    if c == b"d":
        out, i = {}, i + 1
        while data[i:i + 1] != b"e":
            k, i = bdecode(data, i)
            v, i = bdecode(data, i)
            out[k if isinstance(k, str) else k.decode(errors="replace")] = v
        return out, i + 1
    colon = data.index(b":", i)
    n = int(data[i:colon])
    raw = data[colon + 1:colon + 1 + n]
    try:
        return raw.decode(), colon + 1 + n
    except UnicodeDecodeError:
        return raw, colon + 1 + n


class Ng:
    def __init__(self, port):
        self.addr = ("127.0.0.1", port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(1.0)

    def call(self, command, **args):
        cookie = "%08x" % random.getrandbits(32)
        body = dict(args, command=command)
        self.sock.sendto(cookie.encode() + b" " + bencode(body), self.addr)
        while True:
            data, _ = self.sock.recvfrom(65535)
            got, _, rest = data.partition(b" ")
            if got.decode() == cookie:
                return bdecode(rest)[0]


def ntp_now():
    t = time.time() + NTP_EPOCH_OFFSET
    sec = int(t)
    return (sec << 32) | int((t - sec) * (1 << 32))


def middle32(ntp):
    return (ntp >> 16) & 0xFFFFFFFF


class Side:
    """One endpoint of one call: its RTCP socket and what it reports."""

    def __init__(self, call_id, tag, index, side, endpoint, engine, sockets):
        self.call_id, self.tag, self.side = call_id, tag, side
        self.engine = engine  # rtpengine's RTCP address facing this endpoint
        self.ssrc = random.getrandbits(32) | 1
        self.peer_ssrc = 0  # the other end's SSRC: the stream this one reports on
        # Figures fixed per call and side: 0..~9 % lost, jitter 40..400 timestamp units.
        self.fraction_lost = (index * 7 + (0 if side == "caller" else 3)) % 24
        self.cumulative_lost = 3 * index + (1 if side == "caller" else 2)
        self.jitter = 40 + 20 * index + (0 if side == "caller" else 10)
        self.reports = 0
        self.with_lsr = 0
        self.last_sr = None  # (middle 32 bits of the peer's NTP, when it arrived)
        key = (endpoint[0], endpoint[1] + 1)
        if key not in sockets:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                s.bind(key)
            except OSError:
                s.bind(("127.0.0.1", 0))  # the port is taken: rtpengine learns this one instead
                STATS["fallback_binds"] += 1
            sockets[key] = s
        self.sock = sockets[key]

    def send(self):
        now_ntp = ntp_now()
        lsr = dlsr = 0
        if self.last_sr is not None:
            lsr = self.last_sr[0]
            dlsr = int((time.time() - self.last_sr[1]) * 65536)
            self.with_lsr += 1
        block = struct.pack("!IIIIII", self.peer_ssrc,
                            (self.fraction_lost << 24) | (self.cumulative_lost & 0xFFFFFF),
                            1000 + self.reports * 50, self.jitter, lsr, dlsr)
        self.reports += 1
        sender_info = struct.pack("!IIIII", now_ntp >> 32, now_ntp & 0xFFFFFFFF, 160 * 50 * self.reports,
                                  50 * self.reports, 160 * 50 * self.reports)
        body = struct.pack("!I", self.ssrc) + sender_info + block
        header = struct.pack("!BBH", 0x81, 200, (len(body) + 4) // 4 - 1)
        self.sock.sendto(header + body, self.engine)

    def report(self):
        return {"call_id": self.call_id, "side": self.side, "ssrc": self.ssrc, "source_ssrc": self.peer_ssrc,
                "reports": self.reports, "with_lsr": self.with_lsr, "fraction_lost": self.fraction_lost,
                "cumulative_lost": self.cumulative_lost, "jitter": self.jitter}


def rtp_stream(media):
    for s in media.get("streams", []):
        flags = s.get("flags", [])
        if "RTCP" in flags and "RTP" not in flags:
            continue
        return s
    return None


def main():
    ng_port, seconds, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    interval = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
    ng = Ng(ng_port)
    calls = {}  # call-id -> [caller Side, callee Side]
    finished = []
    sockets = {}
    order = []
    end = time.time() + seconds
    next_poll = next_send = 0.0
    while time.time() < end:
        now = time.time()
        if now >= next_poll:
            next_poll = now + 0.2
            try:
                listed = ng.call("list", limit=1000).get("calls", [])
            except (socket.timeout, OSError):
                listed = []
            for call_id in list(calls):
                if call_id not in listed:  # deleted by the BYE
                    finished.extend(calls.pop(call_id))
            for call_id in listed:
                if call_id in calls:
                    continue
                try:
                    q = ng.call("query", **{"call-id": call_id})
                except (socket.timeout, OSError):
                    continue
                tags = q.get("tags", {})
                sides = []
                for tag, info in tags.items():
                    medias = info.get("medias", [])
                    stream = rtp_stream(medias[0]) if medias else None
                    if stream is None or not stream.get("local port"):
                        continue
                    ep = stream.get("advertised endpoint") or stream.get("endpoint") or {}
                    if not ep.get("port"):
                        continue
                    sides.append((info.get("created", 0), tag, (ep["address"], ep["port"]),
                                  ("127.0.0.1", stream["local port"] + 1)))
                if len(sides) < 2:
                    continue  # not answered yet: query again on the next poll
                if call_id not in order:
                    order.append(call_id)
                index = order.index(call_id)
                sides.sort()  # the caller's tag was created first (the offer)
                pair = [Side(call_id, tag, index, name, ep, engine, sockets)
                        for (_, tag, ep, engine), name in zip(sides[:2], ("caller", "callee"))]
                pair[0].peer_ssrc, pair[1].peer_ssrc = pair[1].ssrc, pair[0].ssrc
                calls[call_id] = pair
        if now >= next_send:
            next_send = now + interval
            for sides in calls.values():
                for s in sides:
                    s.send()
        # Relayed sender reports from the other end: LSR/DLSR for the next report, and its SSRC.
        socks = list(set(sockets.values()))
        ready, _, _ = select.select(socks, [], [], 0.05)
        for sock in ready:
            data, src = sock.recvfrom(2048)
            STATS["received"] += 1
            if STATS["received"] <= 3 and os.environ.get("RTCP_SENDER_DEBUG"):
                print("received", sock.getsockname(), src, data[:16].hex(),
                      [(s.sock.getsockname(), s.ssrc) for v in calls.values() for s in v][:6], flush=True)
            if len(data) < 28 or data[1] != 200:
                continue
            # rtpengine may send its own SR (its own SSRC) rather than the other end's: either way
            # it comes from its RTCP port facing this end, and an RR's LSR/DLSR about it measures
            # the round trip between rtpengine and this end.
            _, ntp_hi, ntp_lo = struct.unpack("!III", data[4:16])
            for sides in calls.values():
                for me in sides:
                    if me.sock is sock and me.engine == src:
                        me.last_sr = (middle32((ntp_hi << 32) | ntp_lo), time.time())
                        STATS["relayed_srs"] += 1
    for sides in calls.values():
        finished.extend(sides)
    json.dump([s.report() for s in finished], open(out, "w"), indent=1)
    print(f"rtcp_sender: {len(finished)} call sides, {sum(s.reports for s in finished)} reports sent, "
          f"{sum(s.with_lsr for s in finished)} with an LSR; {STATS}")


if __name__ == "__main__":
    main()
