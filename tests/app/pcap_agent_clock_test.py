#!/usr/bin/env python3
"""`hepd pcap`: HEP agents whose clocks disagree with the capture's. A capture of HEP traffic holds
two times for each datagram: the frame's (the capturing host's clock, one for the whole file) and
the HEP header's (each agent's own clock). Offline, as live with the receive time, each agent's
times are brought onto the frame clock (intake/sender_clocks.hpp): an agent an hour behind the
others must not make its streams look an hour idle to the shards' clock, which every other agent
moves on.

Agent A (capture id 2001) has the capture's clock; agent B (2002) stamps its HEP one hour behind.
Each sends ten calls (INVITE, 180 after a known delay, 200, ACK, BYE after a known duration) and
the calls' RTP both ways, 50 packets a direction, interleaved with A's in the capture. Every call
must complete with its PDD and duration exact (B's intervals come from B's own stamps), with one
stream each way that joined it, 40 streams in all and no loss; 1, 2 and 3 shards give the same
records and streams report.

  pcap_agent_clock_test.py HEPD
"""
import os
import socket
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, failures  # noqa: E402
from pcap_rtcp_test import Capture, rtp, run, same_at_more_shards, sdp, sip  # noqa: E402

FRAME_T0 = 1_765_000_000.0  # the capture's clock (2025-12-06)
AGENTS = {"a": (2001, 0.0), "b": (2002, -3600.0)}  # capture id, HEP clock against the frame clock


def hep3(src, sport, dst, dport, t, ptype, payload, capture_id):
    def ch(typ, val):
        return struct.pack("!HHH", 0, typ, 6 + len(val)) + val
    sec, us = int(t), int(round((t - int(t)) * 1e6))
    c = ch(1, b"\x02") + ch(2, b"\x11") + ch(3, socket.inet_aton(src)) + ch(4, socket.inet_aton(dst))
    c += ch(7, struct.pack("!H", sport)) + ch(8, struct.pack("!H", dport))
    c += ch(9, struct.pack("!I", sec)) + ch(10, struct.pack("!I", us))
    c += ch(11, bytes([ptype])) + ch(12, struct.pack("!I", capture_id)) + ch(15, payload)
    return b"HEP3" + struct.pack("!H", 6 + len(c)) + c


def agent_call(cap, agent, n):
    """Call n of an agent: PDD 100 + 10 n ms, 3 + n/10 s from the 200 to the BYE."""
    capture_id, offset = AGENTS[agent]
    host = 1 if agent == "a" else 2

    def add(t, src, sport, dst, dport, payload, ptype):
        data = payload if isinstance(payload, bytes) else payload.encode()
        cap.add(t, f"192.0.2.{host}", 40000, "192.0.2.10", 9060,
                hep3(src, sport, dst, dport, t + offset, ptype, data, capture_id))

    t = FRAME_T0 + 0.37 * n + (0.2 if agent == "b" else 0.0)
    cid, a, b = f"{agent}-{n}", f"10.{host}.{n}.1", f"10.{host}.{n}.2"
    pa, pb, pdd, talk = 20000 + 2 * n, 30000 + 2 * n, 0.1 + 0.01 * n, 3.0 + 0.1 * n
    add(t, a, 5060, b, 5060, sip(f"INVITE sip:bob@{b} SIP/2.0", cid, "ft", None, 1, "INVITE", a, sdp(a, pa)), 1)
    add(t + pdd, b, 5060, a, 5060, sip("SIP/2.0 180 Ringing", cid, "ft", "tt", 1, "INVITE", a), 1)
    add(t + pdd + 1, b, 5060, a, 5060, sip("SIP/2.0 200 OK", cid, "ft", "tt", 1, "INVITE", a, sdp(b, pb)), 1)
    add(t + pdd + 1.01, a, 5060, b, 5060, sip(f"ACK sip:bob@{b} SIP/2.0", cid, "ft", "tt", 1, "ACK", a), 1)
    for i in range(50):
        at = t + pdd + 1.05 + i * 0.02
        add(at, a, pa, b, pb, rtp(1000 + i, 160 * i, 0x1000 * host + n), 4)
        add(at, b, pb, a, pa, rtp(1000 + i, 160 * i, 0x8000 * host + n), 4)
    add(t + pdd + 1 + talk, a, 5060, b, 5060, sip(f"BYE sip:bob@{b} SIP/2.0", cid, "ft", "tt", 2, "BYE", a), 1)
    add(t + pdd + 1.01 + talk, b, 5060, a, 5060, sip("SIP/2.0 200 OK", cid, "ft", "tt", 2, "BYE", a), 1)
    return cid, pdd, talk


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cap = Capture()
        calls = {}
        for agent in AGENTS:
            for n in range(10):
                cid, pdd, talk = agent_call(cap, agent, n)
                calls[cid] = (pdd, talk)
        path = os.path.join(tmp, "agents.pcap")
        cap.write(path)

        records, report = run(path, 1)
        check("twenty call records", sorted(r["call_id"] for r in records), sorted(calls))
        for r in records:
            pdd, talk = calls[r["call_id"]]
            check(f"{r['call_id']}: completed", r.get("outcome"), "completed")
            check(f"{r['call_id']}: PDD from its agent's own stamps", r.get("pdd_ms"), round(pdd * 1000, 3))
            check(f"{r['call_id']}: duration from its agent's own stamps", r.get("duration_ms"), round(talk * 1000, 3))
            check(f"{r['call_id']}: one stream each way joined it",
                  sorted(s["packets"] for s in r.get("streams", [])), [50, 50])
        streams = report["streams"]
        check("40 streams, none cut by an agent's clock", streams.get("started"), 40)
        check("no stream ended idle", streams.get("finished", {}).get("idle", 0), 0)
        same_at_more_shards(path, records, report)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
