#!/usr/bin/env python3
"""Senders' clocks disagree: the live daemon's timers must not run on any one sender's clock.

Agent A (capture id 1, right clock) sends OPTIONS every 0.5 s. Agent B (capture id 2, HEP
timestamps one hour behind) sends 20 INVITEs, about 4 s later their 180, 200 and ACK, then BYE
and 200 about 3 s after that, with capture times whose intervals are known to the microsecond.
All 20 calls must complete, with PDD, set-up time and duration exactly as B's own timestamps say,
no unknown-dialog anomalies, nothing timed out, and B's clock offset counted (and logged) once.
Then agent C (capture id 3, timestamps twelve years behind: replaced by the receive time by the
timestamp fix-ups) places one call, which completes too without touching the clock offset counter.

Loopback only, free ports, every wait bounded; hepd is always killed at the end.

  clock_skew_test.py HEPD_BINARY
"""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HEPD = sys.argv[1]
US = 1_000_000
CALLS = 20
failures = []


def check(what, got, want):
    ok = got == want
    print(("ok  " if ok else "BAD ") + f"{what}: {got!r} (expected {want!r})", flush=True)
    if not ok:
        failures.append(what)


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_hep_port():
    """A port free for both UDP and TCP (hepd binds both)."""
    for _ in range(50):
        port = free_port(socket.SOCK_DGRAM)
        t = socket.socket()
        try:
            t.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            t.close()
    raise RuntimeError("no free port")


def now_us():
    return time.time_ns() // 1000


def chunk(t, value):
    return struct.pack("!HHH", 0, t, 6 + len(value)) + value


def hep3(sip, ts_us, capture_id, src=("10.0.0.1", 5060), dst=("10.0.0.2", 5060)):
    """A HEPv3 message as Kamailio's siptrace writes it; the capture time in whole microseconds."""
    seconds, micros = divmod(ts_us, US)
    body = b"".join([
        chunk(1, b"\x02"), chunk(2, b"\x11"),
        chunk(3, socket.inet_aton(src[0])), chunk(4, socket.inet_aton(dst[0])),
        chunk(7, struct.pack("!H", src[1])), chunk(8, struct.pack("!H", dst[1])),
        chunk(9, struct.pack("!I", seconds)), chunk(10, struct.pack("!I", micros)),
        chunk(11, b"\x01"), chunk(12, struct.pack("!I", capture_id)), chunk(15, sip.encode()),
    ])
    return b"HEP3" + struct.pack("!H", 6 + len(body)) + body


def sip(kind, call_id):
    common = (f"Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-{call_id}-{kind}\r\n"
              f"From: <sip:alice@a>;tag=ft-{call_id}\r\n"
              f"To: <sip:bob@b>{';tag=tt-' + call_id if kind not in ('INVITE', 'OPTIONS') else ''}\r\n"
              f"Call-ID: {call_id}\r\n")
    start, cseq = {
        "OPTIONS": ("OPTIONS sip:ping@10.0.0.2 SIP/2.0", "1 OPTIONS"),
        "200OPTIONS": ("SIP/2.0 200 OK", "1 OPTIONS"),
        "INVITE": ("INVITE sip:bob@10.0.0.2 SIP/2.0", "1 INVITE"),
        "180": ("SIP/2.0 180 Ringing", "1 INVITE"),
        "200": ("SIP/2.0 200 OK", "1 INVITE"),
        "ACK": ("ACK sip:bob@10.0.0.2 SIP/2.0", "1 ACK"),
        "BYE": ("BYE sip:bob@10.0.0.2 SIP/2.0", "2 BYE"),
        "200BYE": ("SIP/2.0 200 OK", "2 BYE"),
    }[kind]
    return f"{start}\r\n{common}CSeq: {cseq}\r\nContent-Length: 0\r\n\r\n"


class Daemon:
    def __init__(self, work, hep_port, metrics_port, config):
        self.log = open(os.path.join(work, "hepd.log"), "w+")
        state = os.path.join(work, "state")
        os.makedirs(state, exist_ok=True)
        self.proc = subprocess.Popen([HEPD, "--config", config, "--hep-listen", f"127.0.0.1:{hep_port}",
                                      "--metrics-listen", f"127.0.0.1:{metrics_port}", "--state-dir", state,
                                      "--cores", "2"], stdout=self.log, stderr=subprocess.STDOUT)
        self.metrics_port = metrics_port
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                self.scrape()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("hepd did not start:\n" + self.text())

    def scrape(self):
        return urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2).read().decode()

    def metric(self, name, **labels):
        total = 0.0
        for line in self.scrape().splitlines():
            m = re.match(r'([a-zA-Z0-9_:]+)(\{(.*)\})? ([0-9.e+-]+)$', line)
            if not m or m.group(1) != name:
                continue
            got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(m.group(4))
        return total

    def wait_metric(self, want, name, timeout=8, **labels):
        deadline = time.time() + timeout
        while time.time() < deadline and self.metric(name, **labels) != want:
            time.sleep(0.1)
        return self.metric(name, **labels)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        return self.proc.returncode

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()


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


def main():
    work = tempfile.mkdtemp(prefix="hepd-clock-skew.")
    config = os.path.join(work, "hepd.yaml")
    with open(config, "w") as f:
        f.write("hep:\n  clock_offset_limit: 5s\n"
                "agents:\n"
                "  - {name: agent-a, capture_id: 1}\n"
                "  - {name: agent-b, capture_id: 2}\n"
                "  - {name: agent-c, capture_id: 3}\n")
    hep_port, metrics_port = free_hep_port(), free_port()
    d = None
    a = None
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    to = ("127.0.0.1", hep_port)
    try:
        d = Daemon(work, hep_port, metrics_port, config)
        a = AgentA(hep_port)
        a.start()
        time.sleep(1.2)  # A's clock drives the shards first, as in the field report

        # B: one hour behind. Intervals in B's own clock (whole microseconds): ringing 1.5 s and
        # answer 3.5 s after the INVITE, ACK 0.1 s later, BYE 7 s after the INVITE (duration
        # 3.5 s). Each message leaves at about the real time its stamp says, so B's clock keeps
        # its offset (a real sender's capture times track its own clock).
        pdd, setup, ack, bye = 1_500_000, 3_500_000, 3_600_000, 7_000_000
        real0 = now_us()
        b0 = real0 - 3600 * US
        invites = [b0 + i * 10_000 for i in range(CALLS)]
        for i, t in enumerate(invites):
            b.sendto(hep3(sip("INVITE", f"b-call-{i}"), t, 2), to)
        sleep_until(real0 + 4 * US)
        for i, t in enumerate(invites):
            for kind, after in (("180", pdd), ("200", setup), ("ACK", ack)):
                b.sendto(hep3(sip(kind, f"b-call-{i}"), t + after, 2), to)
        check("B: calls confirmed", d.wait_metric(CALLS, "hepd_dialogs_active", state="confirmed"), CALLS)
        sleep_until(real0 + bye)
        for i, t in enumerate(invites):
            b.sendto(hep3(sip("BYE", f"b-call-{i}"), t + bye, 2), to)
            b.sendto(hep3(sip("200BYE", f"b-call-{i}"), t + bye + 20_000, 2), to)

        check("B: 20 calls completed", d.wait_metric(CALLS, "hepd_dialogs_finished_total", outcome="completed"), CALLS)
        check("nothing timed out", d.metric("hepd_dialogs_finished_total", outcome="timed_out"), 0)
        check("no other outcome", d.metric("hepd_dialogs_finished_total"), CALLS)
        for reason in ("response_unknown_dialog", "ack_unknown_dialog", "bye_unknown_dialog", "clock_skew"):
            check(f"anomaly {reason}", d.metric("hepd_sip_anomalies_total", reason=reason), 0)
        check("PDD count", d.metric("hepd_dialog_pdd_seconds_count"), CALLS)
        check("PDD sum (B's 1.5 s)", d.metric("hepd_dialog_pdd_seconds_sum"), CALLS * pdd / US)
        check("PDD bucket le=1", d.metric("hepd_dialog_pdd_seconds_bucket", le="1"), 0)
        check("PDD bucket le=2", d.metric("hepd_dialog_pdd_seconds_bucket", le="2"), CALLS)
        check("setup sum (B's 3.5 s)", d.metric("hepd_dialog_setup_seconds_sum"), CALLS * setup / US)
        check("setup bucket le=3", d.metric("hepd_dialog_setup_seconds_bucket", le="3"), 0)
        check("setup bucket le=5", d.metric("hepd_dialog_setup_seconds_bucket", le="5"), CALLS)
        check("duration sum (B's 3.5 s)", d.metric("hepd_dialog_duration_seconds_sum"), CALLS * (bye - setup) / US)
        check("duration count", d.metric("hepd_dialog_duration_seconds_count"), CALLS)
        check("B's responses counted as B's",
              d.metric("hepd_sip_responses_total", method="INVITE", status_class="2xx", agent="agent-b"), CALLS)
        check("clock offset exceeded: B once",
              d.metric("hepd_hep_clock_offset_exceeded_total", agent="agent-b"), 1)
        check("clock offset exceeded: not A", d.metric("hepd_hep_clock_offset_exceeded_total", agent="agent-a"), 0)
        check("no clock steps", d.metric("hepd_hep_clock_steps_total"), 0)
        check("A's pings answered, none timed out",
              d.metric("hepd_sip_transactions_total", method="OPTIONS", outcome="timed_out"), 0)
        check("A's pings seen", d.metric("hepd_sip_requests_total", method="OPTIONS", agent="agent-a") >= 10, True)
        b_lines = [l for l in d.text().splitlines() if "hep sender 127.0.0.1 capture id 2 " in l]
        check("B's offset logged once", len(b_lines), 1)
        check("the log names the offset", bool(b_lines) and "3600." in b_lines[0] and "behind" in b_lines[0], True)

        # C: twelve years behind, outside [now - 10 y, now + 24 h]: every time is replaced by the
        # receive time (a fix-up), so C is on the receive clock and its call completes as well.
        fixups_before = d.metric("hepd_hep_timestamp_fixups_total", kind="out_of_range")
        c_skew = 12 * 365 * 24 * 3600 * US
        for kind, pause in (("INVITE", 0.3), ("180", 0.3), ("200", 0.1), ("ACK", 0.5), ("BYE", 0.05), ("200BYE", 0)):
            c.sendto(hep3(sip(kind, "c-call"), now_us() - c_skew, 3), to)
            time.sleep(pause)
        check("C: call completed", d.wait_metric(CALLS + 1, "hepd_dialogs_finished_total", outcome="completed"),
              CALLS + 1)
        check("C: times replaced by the receive time",
              d.metric("hepd_hep_timestamp_fixups_total", kind="out_of_range") - fixups_before, 6)
        check("C: not a clock offset", d.metric("hepd_hep_clock_offset_exceeded_total", agent="agent-c"), 0)
        check("still nothing timed out", d.metric("hepd_dialogs_finished_total", outcome="timed_out"), 0)
        check("C: its PDD from receive times (about 0.3 s)",
              0.2 < d.metric("hepd_dialog_pdd_seconds_sum") - CALLS * pdd / US < 2.0, True)

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
