#!/usr/bin/env python3
"""Senders' clocks disagree: the live daemon's timers must not run on any one sender's clock.

Agent A (capture id 1, right clock) sends OPTIONS every 0.5 s. Agent B (capture id 2, HEP
timestamps one hour behind) sends an OPTIONS and its 200 (its offset is measured), then 20
INVITEs (their capture times 10 ms apart, sent at once), about 4 s later their 180, 200 and ACK, then BYE
and 200 about 3 s after that, with capture times whose intervals are known to the microsecond.
All 20 calls must complete, with PDD, set-up time and duration exactly as B's own timestamps say,
no unknown-dialog anomalies, nothing timed out, and B's clock offset counted (and logged) once.
Then agent C (capture id 3, timestamps twelve years behind: replaced by the receive time by the
timestamp fix-ups) places one call, which completes too without touching the clock offset counter.

Nothing here depends on how fast the machine is (CI runs it with `ctest -j2` and under ASan):
- every wait polls the metrics against a deadline; nothing is checked after a fixed sleep;
- B's intervals come from its HEP timestamps only. B's 180s leave about 2.5 s "late" for their
  stamps, so a delivery (or a receive thread) delayed by more than the offset limit minus that
  would count as a clock step and re-measure B's offset; the limit is 300 s, longer than this test
  may run (ctest TIMEOUT), so no delay can cause one, while B (3600 s off) is still far beyond it;
- C's stamp is chosen so that no fix-up can take it for a plausible time (a seconds field whose
  byte-swapped value falls in [now - 10 y, now + 24 h] is taken for a byte-swapped clock, which
  for "now - 12 years" happens during ~20 s out of every 256 s);
- C's PDD comes from receive times, so it is checked against bounds the test observes itself:
  the 180 is sent only once the INVITE has been counted, and the PDD must lie between
  (180 sent - INVITE counted) and (180 counted - INVITE sent).

Loopback only, free ports, every wait bounded (all of them together by one deadline); hepd is
always killed at the end.

  clock_skew_test.py HEPD_BINARY
"""
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import US, check, Daemon, failures, hep3, now_us, sip  # noqa: E402

HEPD = sys.argv[1]
CALLS = 20
OFFSET_LIMIT_S = 300  # hep.clock_offset_limit: longer than the test may run (see above)
# Every wait together: ctest kills the test at 180 s (a sanitizer build or qemu-user on a loaded
# box is many times slower; a passing run on an idle one takes a few seconds).
DEADLINE = time.monotonic() + 160


def implausible_seconds(now_s, years_behind):
    """A HEP seconds field about `years_behind` years before now that no timestamp fix-up can
    take for a plausible time (hep/timestamp.cpp): outside [now - 10 y, now + 24 h] as sent,
    byte-swapped, and as an NTP-epoch time. The low byte decides the byte-swapped value's high
    byte: 0x01 puts it in 1970."""
    s = ((now_s - years_behind * 365 * 86400) & ~0xFF) | 0x01
    low, high = now_s - 10 * 31_557_600 - 86400, now_s + 2 * 86400  # a day's margin each way
    swapped = int.from_bytes(s.to_bytes(4, "big"), "little")
    for v in (s, swapped, s - 2_208_988_800):
        assert not low <= v <= high, (s, v)
    return s


class AgentA(threading.Thread):
    """Right clock: an OPTIONS and its 200 every 0.5 s, until stopped."""

    def __init__(self, hep_port):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.to = ("127.0.0.1", hep_port)
        self.halt = threading.Event()
        self.sent = 0

    def run(self):
        while not self.halt.is_set():
            call_id = f"ping-{self.sent}"
            t = now_us()
            self.sock.sendto(hep3(sip("OPTIONS", call_id), t, 1), self.to)
            self.sock.sendto(hep3(sip("200OPTIONS", call_id), t + 5_000, 1), self.to)
            self.sent += 1
            self.halt.wait(0.5)

    def stop(self):
        self.halt.set()
        self.join(timeout=5)
        self.sock.close()


def sleep_until(t_us):
    delay = (t_us - now_us()) / US
    if delay > 0:
        time.sleep(delay)


def checks_hold(checks):
    return all(got == want for _, got, want in checks)


def report(checks):
    for what, got, want in checks:
        check(what, got, want)


def options_seen(s):
    return s.get("hepd_sip_requests_total", method="OPTIONS", agent="agent-a")


def main():
    work = tempfile.mkdtemp(prefix="hepd-clock-skew.")
    config = os.path.join(work, "hepd.yaml")
    with open(config, "w") as f:
        f.write(f"hep:\n  clock_offset_limit: {OFFSET_LIMIT_S}s\n"
                "agents:\n"
                "  - {name: agent-a, capture_id: 1}\n"
                "  - {name: agent-b, capture_id: 2}\n"
                "  - {name: agent-c, capture_id: 3}\n")
    d = None
    a = None
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        d = Daemon(HEPD, work, config, DEADLINE)
        to = ("127.0.0.1", d.hep_port)
        a = AgentA(d.hep_port)
        a.start()
        # A's clock drives the shards first, as in the field report.
        check("A's pings reach the shards", d.wait_metric(2, "hepd_sip_requests_total", method="OPTIONS",
                                                          agent="agent-a") >= 2, True)

        # B: one hour behind. Intervals in B's own clock (whole microseconds): ringing 1.5 s and
        # answer 3.5 s after the INVITE, ACK 0.1 s later, BYE 7 s after the INVITE (duration
        # 3.5 s). The 180s, 200s and ACKs all leave about 4 s after the INVITEs (so intervals
        # taken from arrival times would be wrong), the BYEs about 7 s after.
        pdd, setup, ack, bye = 1_500_000, 3_500_000, 3_600_000, 7_000_000
        # B's first datagrams: its offset is measured from them (exactly from its next datagram,
        # stamped by the kernel, when the first came in a batch read up to a read window late:
        # sender_clocks.hpp), before any of its calls begins, so every interval below is B's own.
        probe = now_us() - 3600 * US
        b.sendto(hep3(sip("OPTIONS", "b-probe"), probe, 2), to)
        b.sendto(hep3(sip("200OPTIONS", "b-probe"), probe + 5_000, 2), to)
        d.wait(lambda s: s.get("hepd_sip_requests_total", method="OPTIONS", agent="agent-b") >= 1)
        time.sleep(0.3)
        real0 = now_us()
        b0 = real0 - 3600 * US
        invites = [b0 + i * 10_000 for i in range(CALLS)]
        for i, t in enumerate(invites):
            b.sendto(hep3(sip("INVITE", f"b-call-{i}"), t, 2), to)
        s = d.wait(lambda s: s.get("hepd_sip_requests_total", method="INVITE", agent="agent-b") >= CALLS)
        check("B: INVITEs seen", s.get("hepd_sip_requests_total", method="INVITE", agent="agent-b"), CALLS)
        # B's calls stay unanswered while A's packets (and the idle ticks) move the shard clocks
        # on: a shard on A's clock without B's offset would expire them (invite timeout) now.
        pings = options_seen(s)
        sleep_until(real0 + 4 * US)
        check("A's pings meanwhile", options_seen(d.wait(lambda s: options_seen(s) >= pings + 2)) >= pings + 2, True)
        for i, t in enumerate(invites):
            for kind, after in (("180", pdd), ("200", setup), ("ACK", ack)):
                b.sendto(hep3(sip(kind, f"b-call-{i}"), t + after, 2), to)
        check("B: calls confirmed", d.wait_metric(CALLS, "hepd_dialogs_active", state="confirmed"), CALLS)
        sleep_until(real0 + bye)
        for i, t in enumerate(invites):
            b.sendto(hep3(sip("BYE", f"b-call-{i}"), t + bye, 2), to)
            b.sendto(hep3(sip("200BYE", f"b-call-{i}"), t + bye + 20_000, 2), to)

        # Everything from one scrape, taken once the last of it is in (the shards update their
        # counters one after another, so wait for all of them, not for one).
        a_sent = a.sent

        def b_checks(s):
            checks = [
                ("B: 20 calls completed", s.get("hepd_dialogs_finished_total", outcome="completed"), CALLS),
                ("nothing timed out", s.get("hepd_dialogs_finished_total", outcome="timed_out"), 0),
                ("no other outcome", s.get("hepd_dialogs_finished_total"), CALLS),
            ]
            for reason in ("response_unknown_dialog", "ack_unknown_dialog", "bye_unknown_dialog", "clock_skew"):
                checks.append((f"anomaly {reason}", s.get("hepd_sip_anomalies_total", reason=reason), 0))
            checks += [
                ("PDD count", s.get("hepd_dialog_pdd_seconds_count"), CALLS),
                ("PDD sum (B's 1.5 s)", s.get("hepd_dialog_pdd_seconds_sum"), CALLS * pdd / US),
                ("PDD bucket le=1", s.get("hepd_dialog_pdd_seconds_bucket", le="1"), 0),
                ("PDD bucket le=2", s.get("hepd_dialog_pdd_seconds_bucket", le="2"), CALLS),
                ("setup sum (B's 3.5 s)", s.get("hepd_dialog_setup_seconds_sum"), CALLS * setup / US),
                ("setup bucket le=3", s.get("hepd_dialog_setup_seconds_bucket", le="3"), 0),
                ("setup bucket le=5", s.get("hepd_dialog_setup_seconds_bucket", le="5"), CALLS),
                ("duration sum (B's 3.5 s)", s.get("hepd_dialog_duration_seconds_sum"), CALLS * (bye - setup) / US),
                ("duration count", s.get("hepd_dialog_duration_seconds_count"), CALLS),
                ("B's responses counted as B's",
                 s.get("hepd_sip_responses_total", method="INVITE", status_class="2xx", agent="agent-b"), CALLS),
                ("clock offset exceeded: B once", s.get("hepd_hep_clock_offset_exceeded_total", agent="agent-b"), 1),
                ("clock offset exceeded: not A", s.get("hepd_hep_clock_offset_exceeded_total", agent="agent-a"), 0),
                ("no clock steps", s.get("hepd_hep_clock_steps_total"), 0),
                ("A's pings answered, none timed out",
                 s.get("hepd_sip_transactions_total", method="OPTIONS", outcome="timed_out"), 0),
                ("A's pings seen, all of them so far", options_seen(s) >= a_sent, True),
            ]
            return checks

        report(b_checks(d.wait(lambda s: checks_hold(b_checks(s)))))
        b_lines = [l for l in d.text().splitlines() if "hep sender 127.0.0.1 capture id 2 " in l]
        check("B's offset logged once", len(b_lines), 1)
        check("the log names the offset", bool(b_lines) and "3600." in b_lines[0] and "behind" in b_lines[0], True)

        # C: twelve years behind, outside [now - 10 y, now + 24 h]: every time is replaced by the
        # receive time (a fix-up), so C is on the receive clock and its call completes as well.
        s = d.scrape()
        fixups_before = s.get("hepd_hep_timestamp_fixups_total", kind="out_of_range")
        pdd_before = s.get("hepd_dialog_pdd_seconds_sum")
        c_stamp = implausible_seconds(now_us() // US, 12) * US

        def c_send(kind):
            c.sendto(hep3(sip(kind, "c-call"), c_stamp, 3), to)

        invite_sent = time.time()
        c_send("INVITE")
        check("C: INVITE seen",
              d.wait_metric(1, "hepd_sip_requests_total", method="INVITE", agent="agent-c"), 1)
        invite_seen = time.time()
        time.sleep(0.3)
        ringing_sent = time.time()
        c_send("180")
        check("C: 180 seen", d.wait_metric(1, "hepd_sip_responses_total", method="INVITE", status_class="1xx",
                                           agent="agent-c"), 1)
        ringing_seen = time.time()
        for kind in ("200", "ACK", "BYE", "200BYE"):
            c_send(kind)

        def c_checks(s):
            return [
                ("C: call completed", s.get("hepd_dialogs_finished_total", outcome="completed"), CALLS + 1),
                ("C: PDD counted", s.get("hepd_dialog_pdd_seconds_count"), CALLS + 1),
                ("C: times replaced by the receive time",
                 s.get("hepd_hep_timestamp_fixups_total", kind="out_of_range") - fixups_before, 6),
                ("C: not a clock offset", s.get("hepd_hep_clock_offset_exceeded_total", agent="agent-c"), 0),
                ("still no clock steps", s.get("hepd_hep_clock_steps_total"), 0),
                ("still nothing timed out", s.get("hepd_dialogs_finished_total", outcome="timed_out"), 0),
            ]

        s = d.wait(lambda s: checks_hold(c_checks(s)))
        report(c_checks(s))
        # Receive times: the INVITE's at most when it was seen counted, at least when it was sent;
        # the 180's likewise. 2 ms for the rounding of the times to microseconds and of the sum.
        c_pdd = s.get("hepd_dialog_pdd_seconds_sum") - pdd_before
        low, high = ringing_sent - invite_seen - 0.002, ringing_seen - invite_sent + 0.002
        print(f"C's PDD {c_pdd:.6f} s, bounds [{low:.6f}, {high:.6f}]", flush=True)
        check("C: its PDD from receive times (at least the 0.3 s between)", low <= c_pdd <= high, True)

        a.stop()
        a = None
        check("exit status after SIGTERM", d.stop(), 0)
    finally:
        if a is not None:
            a.stop()
        b.close()
        c.close()
        if d is not None:
            d.stop()
            if failures:
                print("--- hepd log\n" + d.text()[-4000:])
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
