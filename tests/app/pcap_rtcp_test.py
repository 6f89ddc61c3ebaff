#!/usr/bin/env python3
"""`hepd pcap`: RTCP that an SDP sends elsewhere than next to its RTP reaches its call. An a=rtcp
port (RFC 3605) far from the RTP port, and an odd RTP port (its RTCP on the next, even, port:
another media key), carried as RTCP and as RTCP-JSON (HEP type 5 with the Call-ID as correlation
id): every report block is the call's (a reported stream of that call, with the SDP's codec),
none is unmatched, and 1, 2 and 3 shards give the same records and report (the RTCP address and
the RTP address may belong to different shards). RTCP next to an even RTP port still lands on the
measured stream. A re-INVITE that moves an RTCP-JSON-only call from opus to PCMA on the same
addresses moves its reported streams to PCMA. The capture is built here.

  pcap_rtcp_test.py HEPD
"""
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, failures  # noqa: E402

HEPD = sys.argv[1]


def udp_frame(src, sport, dst, dport, payload):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, socket.inet_aton(src),
                     socket.inet_aton(dst))
    return b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\x08\x00" + ip + udp


def hep3(src, sport, dst, dport, t, ptype, payload, corr):
    def ch(typ, val):
        return struct.pack("!HHH", 0, typ, 6 + len(val)) + val
    sec, us = int(t), int(round((t - int(t)) * 1e6))
    c = ch(1, b"\x02") + ch(2, b"\x11") + ch(3, socket.inet_aton(src)) + ch(4, socket.inet_aton(dst))
    c += ch(7, struct.pack("!H", sport)) + ch(8, struct.pack("!H", dport))
    c += ch(9, struct.pack("!I", sec)) + ch(10, struct.pack("!I", us))
    c += ch(11, bytes([ptype])) + ch(12, struct.pack("!I", 2001)) + ch(17, corr.encode()) + ch(15, payload)
    return b"HEP3" + struct.pack("!H", 6 + len(c)) + c


class Capture:
    def __init__(self):
        self.frames = []

    def add(self, t, src, sport, dst, dport, payload):
        self.frames.append((t, udp_frame(src, sport, dst, dport, payload if isinstance(payload, bytes)
                                         else payload.encode())))

    def add_hep(self, t, src, sport, dst, dport, payload, ptype, corr):
        self.add(t, "192.0.2.9", 40000, "192.0.2.10", 9060, hep3(src, sport, dst, dport, t, ptype, payload, corr))

    def write(self, path):
        self.frames.sort(key=lambda f: f[0])
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for t, fr in self.frames:
                sec, us = int(t), int(round((t - int(t)) * 1e6))
                f.write(struct.pack("<IIII", sec, us, len(fr), len(fr)) + fr)


def sdp(addr, port, extra=""):
    return (f"v=0\r\no=- 1 1 IN IP4 {addr}\r\ns=-\r\nc=IN IP4 {addr}\r\nt=0 0\r\n"
            f"m=audio {port} RTP/AVP 8\r\na=rtpmap:8 PCMA/8000\r\n{extra}")


def sip(first, call_id, ftag, ttag, cseq, method, src, body=""):
    h = (f"{first}\r\nVia: SIP/2.0/UDP {src}:5060;branch=z9hG4bK{call_id}{cseq}{method}\r\n"
         f"From: <sip:alice@example.com>;tag={ftag}\r\nTo: <sip:bob@example.com>{';tag=' + ttag if ttag else ''}\r\n"
         f"Call-ID: {call_id}\r\nCSeq: {cseq} {method}\r\nContact: <sip:x@{src}:5060>\r\nMax-Forwards: 70\r\n")
    if body:
        h += "Content-Type: application/sdp\r\n"
    return h + f"Content-Length: {len(body)}\r\n\r\n{body}"


def call(cap, t, call_id, a, b, offer, answer, hep=False):
    add = (lambda t, s, d, m: cap.add_hep(t, s, 5060, d, 5060, m.encode(), 1, call_id)) if hep else \
        (lambda t, s, d, m: cap.add(t, s, 5060, d, 5060, m))
    add(t, a, b, sip(f"INVITE sip:bob@{b} SIP/2.0", call_id, "ft", None, 1, "INVITE", a, offer))
    add(t + 0.1, b, a, sip("SIP/2.0 200 OK", call_id, "ft", "tt", 1, "INVITE", a, answer))
    add(t + 0.11, a, b, sip(f"ACK sip:bob@{b} SIP/2.0", call_id, "ft", "tt", 1, "ACK", a))
    add(t + 3.0, a, b, sip(f"BYE sip:bob@{b} SIP/2.0", call_id, "ft", "tt", 2, "BYE", a))
    add(t + 3.01, b, a, sip("SIP/2.0 200 OK", call_id, "ft", "tt", 2, "BYE", a))


def rtp(seq, ts, ssrc):
    return struct.pack("!BBHII", 0x80, 8, seq & 0xFFFF, ts, ssrc) + b"\xd5" * 160


def rr(ssrc, about, lost):
    block = struct.pack("!IB", about, 25) + lost.to_bytes(3, "big") + struct.pack("!IIII", 1000, 80, 0, 0)
    return struct.pack("!BBHI", 0x81, 201, 7, ssrc) + block


def rr_json(ssrc, about, lost, jitter=80):
    return (f'{{"ssrc":{ssrc},"type":201,"report_count":1,"report_blocks":[{{"source_ssrc":{about},'
            f'"highest_seq_no":1000,"fraction_lost":25,"ia_jitter":{jitter},"packets_lost":{lost},"lsr":0,'
            f'"dlsr":0}}],"sdes_report_count":0,"sdes_information":[]}}').encode()


def media_call(cap, n, a, b, pa, pb, ra, rb, extra_a="", extra_b=""):
    """RTP both ways; RTCP from each side's RTCP address to the other's."""
    t = 100.0 + n
    call(cap, t, f"rtcp-{n}", a, b, sdp(a, pa, extra_a), sdp(b, pb, extra_b))
    for i in range(50):
        cap.add(t + 0.2 + i * 0.02, a, pa, b, pb, rtp(1000 + i, 160 * i, 0x1000 + n))
        cap.add(t + 0.2 + i * 0.02, b, pb, a, pa, rtp(1000 + i, 160 * i, 0x2000 + n))
    for k in range(3):
        cap.add(t + 0.5 + k * 0.5, b, rb, a, ra, rr(0x2000 + n, 0x1000 + n, 7 + k))
        cap.add(t + 0.51 + k * 0.5, a, ra, b, rb, rr(0x1000 + n, 0x2000 + n, 3 + k))


def json_call(cap, n, a, b, pa, pb, ra, rb, extra_a="", extra_b=""):
    """Signalling and RTCP-JSON only (rtpengine's way), all in HEP."""
    t = 100.0 + n
    cid = f"rtcp-{n}"
    call(cap, t, cid, a, b, sdp(a, pa, extra_a), sdp(b, pb, extra_b), hep=True)
    for k in range(3):
        cap.add_hep(t + 1 + k * 0.5, b, rb, a, ra, rr_json(0x2000 + n, 0x1000 + n, 7 + k), 5, cid)
        cap.add_hep(t + 1.01 + k * 0.5, a, ra, b, rb, rr_json(0x1000 + n, 0x2000 + n, 3 + k), 5, cid)


def reinvite_call(cap, n, a, b, pa, pb):
    """RTCP-JSON only, opus answered with opus; a re-INVITE on the same addresses moves the call to
    PCMA (a transfer to a PSTN leg). Reports before it count 20 ms of jitter at 48 kHz (960), after it
    10 ms at 8 kHz (80)."""
    t = 100.0 + n
    cid = f"rtcp-{n}"

    def add(t, s, d, m):
        cap.add_hep(t, s, 5060, d, 5060, m.encode(), 1, cid)

    def sdp_of(addr, port, fmt, maps):
        return (f"v=0\r\no=- 1 1 IN IP4 {addr}\r\ns=-\r\nc=IN IP4 {addr}\r\nt=0 0\r\n"
                f"m=audio {port} RTP/AVP {fmt} 101\r\na=rtpmap:{maps}\r\na=rtpmap:101 telephone-event/8000\r\n")

    opus_a, opus_b = sdp_of(a, pa, 111, "111 opus/48000/2"), sdp_of(b, pb, 111, "111 opus/48000/2")
    pcma_a, pcma_b = sdp_of(a, pa, 8, "8 PCMA/8000"), sdp_of(b, pb, 8, "8 PCMA/8000")
    add(t, a, b, sip(f"INVITE sip:bob@{b} SIP/2.0", cid, "ft", None, 1, "INVITE", a, opus_a))
    add(t + 0.1, b, a, sip("SIP/2.0 200 OK", cid, "ft", "tt", 1, "INVITE", a, opus_b))
    add(t + 0.11, a, b, sip(f"ACK sip:bob@{b} SIP/2.0", cid, "ft", "tt", 1, "ACK", a))
    for k in range(2):
        cap.add_hep(t + 1 + k * 0.4, b, pb + 1, a, pa + 1, rr_json(0x2000 + n, 0x1000 + n, 7, 960), 5, cid)
        cap.add_hep(t + 1.01 + k * 0.4, a, pa + 1, b, pb + 1, rr_json(0x1000 + n, 0x2000 + n, 3, 960), 5, cid)
    add(t + 2, a, b, sip(f"INVITE sip:bob@{b} SIP/2.0", cid, "ft", "tt", 2, "INVITE", a, pcma_a))
    add(t + 2.1, b, a, sip("SIP/2.0 200 OK", cid, "ft", "tt", 2, "INVITE", a, pcma_b))
    add(t + 2.11, a, b, sip(f"ACK sip:bob@{b} SIP/2.0", cid, "ft", "tt", 2, "ACK", a))
    for k in range(2):
        cap.add_hep(t + 2.5 + k * 0.4, b, pb + 1, a, pa + 1, rr_json(0x2000 + n, 0x1000 + n, 9, 80), 5, cid)
        cap.add_hep(t + 2.51 + k * 0.4, a, pa + 1, b, pb + 1, rr_json(0x1000 + n, 0x2000 + n, 5, 80), 5, cid)
    add(t + 3.5, a, b, sip(f"BYE sip:bob@{b} SIP/2.0", cid, "ft", "tt", 3, "BYE", a))
    add(t + 3.51, b, a, sip("SIP/2.0 200 OK", cid, "ft", "tt", 3, "BYE", a))


def run(path, cores):
    out = path + f".{cores}.json"
    r = subprocess.run([HEPD, "pcap", path, "--cores", str(cores), "--records", "-", "--json", out],
                       capture_output=True, text=True, timeout=60)
    check(f"hepd pcap --cores {cores} exits 0", r.returncode, 0)
    records = sorted((json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")),
                     key=lambda rec: rec["call_id"])
    with open(out) as f:
        return records, json.load(f)


def same_at_more_shards(path, records, report, shard_counts=(2, 3)):
    """The records and streams report of one shard, checked against those of more."""
    for cores in shard_counts:
        again, other = run(path, cores)
        check(f"--cores {cores}: the same records", again, records)
        check(f"--cores {cores}: the same streams report", other["streams"], report["streams"])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cap = Capture()
        media_call(cap, 1, "10.0.0.1", "10.0.0.2", 20000, 30000, 20001, 30001)  # RTCP next to RTP
        media_call(cap, 2, "10.0.2.1", "10.0.2.2", 20000, 30000, 20555, 30777, "a=rtcp:20555\r\n",
                   "a=rtcp:30777\r\n")
        media_call(cap, 3, "10.0.3.1", "10.0.3.2", 20001, 30001, 20002, 30002)  # odd RTP ports
        media_call(cap, 4, "10.0.4.1", "10.0.4.2", 20000, 30000, 41001, 51001,
                   "a=rtcp:41001 IN IP4 10.0.4.1\r\n", "a=rtcp:51001 IN IP4 10.0.4.2\r\n")
        json_call(cap, 5, "10.0.5.1", "10.0.5.2", 20000, 30000, 20555, 30777, "a=rtcp:20555\r\n",
                  "a=rtcp:30777\r\n")
        reinvite_call(cap, 6, "10.0.6.1", "10.0.6.2", 20000, 30000)
        path = os.path.join(tmp, "rtcp.pcap")
        cap.write(path)

        records, report = run(path, 1)
        check("six calls", [r["call_id"] for r in records], [f"rtcp-{n}" for n in range(1, 7)])
        by_call = {r["call_id"]: r for r in records}
        # Next to an even RTP port: on the measured streams, as before.
        check("rtcp-1: views on its streams", sorted(s["rtcp"]["reports"] for s in by_call["rtcp-1"]["streams"]
                                                     if s["rtcp"]), [3, 3])
        for n in range(2, 6):
            got = by_call[f"rtcp-{n}"].get("reported", [])
            check(f"rtcp-{n}: both directions reported under the call",
                  sorted((r["ssrc"], r["reports"], r["cumulative_lost"]) for r in got),
                  [(0x1000 + n, 3, 9), (0x2000 + n, 3, 5)])
            check(f"rtcp-{n}: with the SDP's codec", sorted({r["codec"] for r in got}), ["pcma"])
        # A re-INVITE moved the call from opus to PCMA: each reported stream ends with PCMA, its
        # largest jitter the opus reports' 20 ms (not 960 units read at 8 kHz), scored as PCMA.
        got = by_call["rtcp-6"]["reported"]
        check("rtcp-6: both directions reported", sorted((r["ssrc"], r["reports"]) for r in got),
              [(0x1006, 4), (0x2006, 4)])
        check("rtcp-6: the codec after the re-INVITE", [r["codec"] for r in got], ["pcma", "pcma"])
        check("rtcp-6: the largest jitter in time", [r["max_jitter_ms"] for r in got], [20.0, 20.0])
        check("rtcp-6: the last jitter at 8 kHz", [r["jitter_ms"] for r in got], [10.0, 10.0])
        check("rtcp-6: by_codec under source=rtcp", report["streams"]["reported"]["by_codec"], {"pcma": 10})
        same_at_more_shards(path, records, report)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
