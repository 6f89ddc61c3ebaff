#!/usr/bin/env python3
"""`hepd pcap`: a binding (an SDP offer) that another shard applies meets the stream table as a
single reader's would: its stream expiry run to where that reader's media side stood, the newest
input time before the SIP message, first. A stream to the offered address that a single reader
had already expired as idle (30 s without a packet, the input's clock moved on by a packet to
another address) neither joins the call nor ends `rebound`; its next packet starts a new stream
that joins it. Eight scenarios 200 s apart, each on its own address (at 2 and 3 shards the
offer's shard and the address's are not always one), half of them with input times going back
(a second capture appended: the INVITE and the packet after it 6 minutes before the stream).
And the ends of two calls' bindings that one step of their shard's SIP clock brings (their
lingers run out 2.8 s apart, nothing in the input between) apply at their own deadlines, in
deadline order whatever order the dialog table sends them in: RTP to the address of the call
whose linger ran out first, between the two deadlines, joins no call.
And two dialogs of one Call-ID leave their table in the order their lingers run out, not in the
order of the deadlines armed at their INVITEs, however often the clock stepped in between (a
shard reading beside others steps less often than a single reader): an RTCP-JSON report naming
only the Call-ID joins the same one of them at any shard count.
And a stream known only from RTCP-JSON is one reporter's view: the two ends of a sipp-style call
(one SSRC both ways) each report on the stream they receive, and each report stays with its
reporter's view, as at more shards (a reporter's address decides its shard), not one view with
the other end's reports folded in.
1, 2 and 3 shards give the same records and streams report. The capture is built here
(pcap_rtcp_test's builders), in input order, not sorted by time.

  pcap_order_test.py HEPD
"""
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, failures  # noqa: E402
from pcap_rtcp_test import hep3, rr_json, rtp, run, same_at_more_shards, sdp, sip, udp_frame  # noqa: E402


class InputOrder:
    """A capture written in the order frames are added (times may go back)."""

    def __init__(self):
        self.frames = []

    def add(self, t, src, sport, dst, dport, payload):
        self.frames.append((t, udp_frame(src, sport, dst, dport, payload if isinstance(payload, bytes)
                                         else payload.encode())))

    def write(self, path):
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for t, fr in self.frames:
                sec, us = int(t), int(round((t - int(t)) * 1e6))
                f.write(struct.pack("<IIII", sec, us, len(fr), len(fr)) + fr)


def stale(cap, n, back):
    """A stream to A:pa, idle for 48 s (a packet elsewhere moves the clock), then an INVITE
    offering A:pa and the stream's next packet."""
    t = 1000.0 + 200 * n
    a, b, pa = f"10.0.{n}.1", f"10.0.{n}.2", 20000 + 2 * n
    cap.add(t, "192.0.2.7", 41000 + 2 * n, a, pa, rtp(1000, 0, 0xA000 + n))
    cap.add(t + 48.2, "192.0.2.8", 41000 + 2 * n, f"10.9.{n}.9", 20010, rtp(1000, 0, 0xB000 + n))
    at = t - 328.3 if back else t + 48.3
    invite = sip(f"INVITE sip:bob@{b} SIP/2.0", f"order-{n}", "ft", None, 1, "INVITE", a, sdp(a, pa))
    cap.add(at, a, 5060, b, 5060, invite)
    cap.add(at + 17.6, "192.0.2.7", 41000 + 2 * n, a, pa, rtp(1001, 160, 0xA000 + n))


def ends_out_of_order(cap, t):
    """Call c188-10 answered, call c188-6 not (its BYE ends it): their lingers run out at
    t + 34.3 and t + 37.1; RTP to c188-6's address at t + 34.4; the clock then moves past both."""
    a1, a2, b = "10.0.1.1", "10.0.3.1", "10.1.3.2"
    for at, src, dst, msg in [
        (0.0, a1, b, sip(f"INVITE sip:bob@{b} SIP/2.0", "c188-10", "f10", None, 1, "INVITE", a1, sdp(a1, 20006))),
        (0.1, b, a1, sip("SIP/2.0 200 OK", "c188-10", "f10", "tt", 1, "INVITE", a1, sdp(b, 30000))),
        (0.18, a2, b, sip(f"INVITE sip:bob@{b} SIP/2.0", "c188-6", "f6", None, 1, "INVITE", a2, sdp(a2, 20004))),
        (2.3, a2, b, sip(f"BYE sip:bob@{b} SIP/2.0", "c188-6", "f6", None, 2, "BYE", a2)),
        (5.13, a1, b, sip(f"BYE sip:bob@{b} SIP/2.0", "c188-10", "f10", "tt", 2, "BYE", a1)),
    ]:
        cap.add(t + at, src, 5060, dst, 5060, msg)
    cap.add(t + 34.38, "192.0.2.3", 41002, a2, 20004, rtp(1000, 0, 0xC0DE))
    cap.add(t + 37.87, "10.1.2.2", 5060, "10.0.0.1", 5060,
            sip("SIP/2.0 100 Trying", "other", "fo", None, 1, "INVITE", "10.0.0.1"))


def one_call_id_twice(cap, t, elsewhere):
    """Two dialogs of Call-ID `twice` whose deadlines armed at their INVITEs (t + 32, t + 42) come
    in the other order than the ends of their lingers (t + 52, t + 47), and an RTCP-JSON report
    that names only the Call-ID. A packet at t + 45 (on another shard when there are more) makes a
    single reader's clock step between the armed deadlines and the lingers' ends; a shard reading
    beside others steps at t + 60 only. The report joins the dialog that left the table first."""
    b = "10.1.20.2"
    for at, src, dst, msg in [
        (0.0, "10.0.20.1", b, sip(f"INVITE sip:bob@{b} SIP/2.0", "twice", "fa", None, 1, "INVITE", "10.0.20.1",
                                   sdp("10.0.20.1", 20000))),
        (0.1, b, "10.0.20.1", sip("SIP/2.0 200 OK", "twice", "fa", "ta", 1, "INVITE", "10.0.20.1", sdp(b, 30000))),
        (10.0, "10.0.21.1", b, sip(f"INVITE sip:bob@{b} SIP/2.0", "twice", "fb", None, 1, "INVITE", "10.0.21.1",
                                    sdp("10.0.21.1", 20000))),
        (10.1, b, "10.0.21.1", sip("SIP/2.0 200 OK", "twice", "fb", "tb", 1, "INVITE", "10.0.21.1", sdp(b, 30002))),
        (15.0, "10.0.21.1", b, sip(f"BYE sip:bob@{b} SIP/2.0", "twice", "fb", "tb", 2, "BYE", "10.0.21.1")),
        (20.0, "10.0.20.1", b, sip(f"BYE sip:bob@{b} SIP/2.0", "twice", "fa", "ta", 2, "BYE", "10.0.20.1")),
    ]:
        cap.add(t + at, src, 5060, dst, 5060, msg)
    cap.add(t + 16.0, "192.0.2.9", 40000, "192.0.2.10", 9060,
            hep3("10.0.21.1", 20001, b, 30003, t + 16.0, 5, rr_json(0x7001, 0x7002, 3), "twice"))
    cap.add(t + 45.0, "192.0.2.5", 41000, elsewhere, 20000, rtp(1000, 0, 0xD00D))
    cap.add(t + 60.0, "192.0.2.5", 41000, elsewhere, 20000, rtp(1001, 160, 0xD00D))


def one_ssrc_both_ways(cap, t):
    """Call `sipp-ssrc` (sipp-style: both ends send with one SSRC; their RTP not captured), and each
    end's RTCP-JSON reports on the stream it receives: two views of SSRC 0x5150 under one Call-ID,
    from two reporters (whose addresses are not always on one shard)."""
    a, b = "10.0.30.1", "10.1.30.2"
    for at, src, dst, msg in [
        (0.0, a, b, sip(f"INVITE sip:bob@{b} SIP/2.0", "sipp-ssrc", "fs", None, 1, "INVITE", a, sdp(a, 20000))),
        (0.1, b, a, sip("SIP/2.0 200 OK", "sipp-ssrc", "fs", "ts", 1, "INVITE", a, sdp(b, 30000))),
        (9.0, a, b, sip(f"BYE sip:bob@{b} SIP/2.0", "sipp-ssrc", "fs", "ts", 2, "BYE", a)),
    ]:
        cap.add(t + at, src, 5060, dst, 5060, msg)
    for k in range(3):
        cap.add(t + 1.5 + k, "192.0.2.9", 40000, "192.0.2.10", 9060,
                hep3(a, 20001, b, 30001, t + 1.5 + k, 5, rr_json(0x5150, 0x5150, 1 + k), "sipp-ssrc"))
        cap.add(t + 1.6 + k, "192.0.2.9", 40000, "192.0.2.10", 9060,
                hep3(b, 30001, a, 20001, t + 1.6 + k, 5, rr_json(0x5150, 0x5150, 7 + k), "sipp-ssrc"))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cap = InputOrder()
        for n in range(8):
            stale(cap, n, back=n % 2 == 1)
        ends_out_of_order(cap, 3000.0)
        one_call_id_twice(cap, 6000.0, "10.9.0.4")
        one_ssrc_both_ways(cap, 7000.0)
        path = os.path.join(tmp, "order.pcap")
        cap.write(path)

        records, report = run(path, 1)
        check("thirteen calls", [r["call_id"] for r in records],
              ["c188-10", "c188-6"] + [f"order-{n}" for n in range(8)] + ["sipp-ssrc", "twice", "twice"])
        late = [s["ssrc"] for r in records for s in r["streams"] if s["ssrc"] == 0xC0DE]
        check("RTP between the two lingers' deadlines joins no call", late, [])
        for r in records[2:10]:
            n = int(r["call_id"].split("-")[1])
            streams = [(s["ssrc"], s["packets"]) for s in r["streams"]]
            check(f"{r['call_id']}: the new stream only, not the stale one", streams, [(0xA000 + n, 1)])
        check("the stale streams end idle, none rebound", report["streams"]["finished"].get("rebound", 0), 0)
        check("the report joins the dialog whose linger ran out first",
              sorted((r["from_tag"], len(r["reported"])) for r in records[11:13]), [("fa", 0), ("fb", 1)])
        check("sipp-ssrc: each reporter's view of the SSRC its own, with its own reports",
              sorted((s["reporter_ip"], s["reports"], s["cumulative_lost"]) for s in records[10]["reported"]),
              [("10.0.30.1", 3, 3), ("10.1.30.2", 3, 9)])
        same_at_more_shards(path, records, report)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
