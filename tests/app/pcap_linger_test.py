#!/usr/bin/env python3
"""`hepd pcap`: an ended call's media addresses are released when its linger runs out
(timers.dialog_linger, 32 s from the BYE by default), not at the first packet after that. RTP
that reaches one of its addresses at or after that deadline, with nothing in the input between
(an unmirrored later call on a recycled port, a NAT'd peer), joins no call; a new stream within
the linger still joins it. Six calls, each alone in the capture for 100 s, their late stream the
first packet past the deadline: exactly at it, a millisecond after, 45 s after, towards the
caller's and the callee's address (at 2 and 3 shards the dialog's shard and the address's are
not always one). 1, 2 and 3 shards give the same records and streams report. The capture is
built here (pcap_rtcp_test's builders).

  pcap_linger_test.py HEPD
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import check, failures  # noqa: E402
from pcap_rtcp_test import Capture, call, rtp, run, same_at_more_shards, sdp  # noqa: E402

LINGER = 32.0
BYE_AFTER = 3.0  # pcap_rtcp_test.call() sends the BYE 3 s after the INVITE
LATE_AFTER_DEADLINE = (0.0, 0.001, 45.0)


def stream(cap, t, src, sport, dst, dport, ssrc, n=5):
    for i in range(n):
        cap.add(t + i * 0.02, src, sport, dst, dport, rtp(1000 + i, 160 * i, ssrc))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cap = Capture()
        for n in range(6):
            t = 1000.0 + 100 * n
            a, b, pa, pb = f"10.0.{n}.1", f"10.0.{n}.2", 20000 + 2 * n, 30000 + 2 * n
            call(cap, t, f"linger-{n}", a, b, sdp(a, pa), sdp(b, pb))
            stream(cap, t + 0.2, a, pa, b, pb, 0x1000 + n, 50)
            stream(cap, t + 0.2, b, pb, a, pa, 0x2000 + n, 50)
            stream(cap, t + 20.0, b, pb, a, pa, 0x3000 + n)  # a new SSRC within the linger
            late = t + BYE_AFTER + LINGER + LATE_AFTER_DEADLINE[n % 3]
            to, port = (a, pa) if n % 2 == 0 else (b, pb)
            stream(cap, late, "192.0.2.77", 41000 + 2 * n, to, port, 0xCA00 + n)
        path = os.path.join(tmp, "linger.pcap")
        cap.write(path)

        records, report = run(path, 1)
        check("six calls", [r["call_id"] for r in records], [f"linger-{n}" for n in range(6)])
        for r in records:
            n = int(r["call_id"].split("-")[1])
            check(f"{r['call_id']}: its streams and the one within the linger, not the late one",
                  sorted(s["ssrc"] for s in r["streams"]), [0x1000 + n, 0x2000 + n, 0x3000 + n])
        check("every stream started, the late ones too", report["streams"]["started"], 6 * 4)
        same_at_more_shards(path, records, report)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
