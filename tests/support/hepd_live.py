"""A live hepd for the Python tests: free loopback ports, HEPv3 messages carrying SIP as a proxy's
siptrace mirrors them, a daemon on its own ports, configuration and state directory, and its
/metrics read back. Every wait is bounded by the caller's deadline (time.monotonic()).
"""
import os
import random
import re
import signal
import socket
import struct
import subprocess
import time
import urllib.request

US = 1_000_000
EX_UNAVAILABLE = 69  # hepd could not listen (a free port taken meanwhile): start again

failures = []  # what the test's checks found wrong; the test exits 1 when it is not empty


def shown(value, limit=200):
    if isinstance(value, set) and len(value) > 5:
        return f"{len(value)} values from {min(value)} to {max(value)}"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check(what, got, want):
    """One line per check, ok or BAD; a wrong value is remembered in `failures`. Returns ok."""
    ok = got == want
    print(("ok  " if ok else "BAD ") + f"{what}: {shown(got)} (expected {shown(want)})", flush=True)
    if not ok and isinstance(got, set) and isinstance(want, set):
        print(f"    missing {shown(want - got)}, extra {shown(got - want)}", flush=True)
    if not ok:
        failures.append(what)
    return ok


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_hep_port():
    """A port free for both UDP and TCP (hepd binds both)."""
    return free_ports(1)[0]


def free_ports(count):
    """`count` distinct ports, each free for UDP and TCP (hepd and Kamailio listen on both), held
    together while they are chosen so that none is handed out twice, and below the ephemeral range
    (as tests/interop/ports.sh's free_udp_range), so that no client socket of another test (a
    relay's connection, say) takes one before its server binds it."""
    held, ports = [], []
    try:
        for _ in range(200 * count):
            if len(ports) == count:
                break
            port = random.randrange(20000, 32000)
            if port in ports:
                continue
            pair = [socket.socket(socket.AF_INET, kind) for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM)]
            held += pair
            try:
                for sock in pair:
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            ports.append(port)
        if len(ports) < count:
            raise RuntimeError(f"no {count} free ports")
        return ports
    finally:
        for sock in held:
            sock.close()


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


# kind -> (start line, CSeq)
_SIP_KINDS = {
    "OPTIONS": ("OPTIONS sip:ping@10.0.0.2 SIP/2.0", "1 OPTIONS"),
    "200OPTIONS": ("SIP/2.0 200 OK", "1 OPTIONS"),
    "INVITE": ("INVITE sip:bob@10.0.0.2 SIP/2.0", "1 INVITE"),
    "180": ("SIP/2.0 180 Ringing", "1 INVITE"),
    "200": ("SIP/2.0 200 OK", "1 INVITE"),
    "486": ("SIP/2.0 486 Busy Here", "1 INVITE"),
    "ACK": ("ACK sip:bob@10.0.0.2 SIP/2.0", "1 ACK"),
    "BYE": ("BYE sip:bob@10.0.0.2 SIP/2.0", "2 BYE"),
    "200BYE": ("SIP/2.0 200 OK", "2 BYE"),
}


def sip(kind, call_id, branch=""):
    """One SIP message of a call from alice to bob; `branch` tells a proxy's legs apart."""
    start, cseq = _SIP_KINDS[kind]
    to_tag = "" if kind in ("INVITE", "OPTIONS") else f";tag=tt-{call_id}"
    return (f"{start}\r\n"
            f"Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-{call_id}-{kind}{branch}\r\n"
            f"From: <sip:alice@a>;tag=ft-{call_id}\r\n"
            f"To: <sip:bob@b>{to_tag}\r\n"
            f"Call-ID: {call_id}\r\n"
            f"CSeq: {cseq}\r\nContent-Length: 0\r\n\r\n")


class Scrape:
    """One scrape of /metrics: every value read from it is from the same moment."""

    def __init__(self, text):
        self.text = text

    def get(self, name, **labels):
        """The sum of the series of `name` whose labels include `labels`."""
        total = 0.0
        for line in self.text.splitlines():
            m = re.match(r'([a-zA-Z0-9_:]+)(\{(.*)\})? ([0-9.e+-]+)$', line)
            if not m or m.group(1) != name:
                continue
            got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(m.group(4))
        return total


class Daemon:
    """hepd on free loopback ports with `config`, its state and log in `work`; every wait ends by
    `deadline` (time.monotonic())."""

    def __init__(self, hepd, work, config, deadline, env=None):
        self.hepd, self.deadline = hepd, deadline
        self.env = None if env is None else {**os.environ, **env}  # `env`: variables added
        for _ in range(3):
            self.hep_port, self.metrics_port = free_hep_port(), free_port()
            if self._start(work, config) or self.proc.returncode != EX_UNAVAILABLE:
                break
            self.log.close()  # a port taken between free_port() and hepd's bind: try others
        if not self.up:
            self.stop()  # nobody else will: the caller never gets this object
            raise RuntimeError("hepd did not start:\n" + self.text())

    def remaining(self, timeout):
        return max(0.0, min(timeout, self.deadline - time.monotonic()))

    def _start(self, work, config):
        self.log = open(os.path.join(work, "hepd.log"), "w+")
        state = os.path.join(work, "state")
        os.makedirs(state, exist_ok=True)
        self.proc = subprocess.Popen([self.hepd, "--config", config, "--hep-listen", f"127.0.0.1:{self.hep_port}",
                                      "--metrics-listen", f"127.0.0.1:{self.metrics_port}", "--state-dir", state,
                                      "--cores", "2"], stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        self.up = False
        deadline = time.monotonic() + self.remaining(20)
        while time.monotonic() < deadline and self.proc.poll() is None:
            if self.try_scrape() is not None:
                self.up = True
                return True
            time.sleep(0.1)
        return False

    def try_scrape(self):
        try:
            return Scrape(urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                                 timeout=5).read().decode())
        except OSError:  # refused, reset or slow under load: the caller polls again
            return None

    def scrape(self):
        s = self.wait(lambda s: s.text != "", timeout=10)
        if s.text == "":
            raise RuntimeError("hepd does not answer scrapes")
        return s

    def wait(self, ready, timeout=10):
        """Scrapes until ready(scrape) holds or the time is up; returns the last scrape (an
        empty one, all zeros, if none answered)."""
        deadline = time.monotonic() + self.remaining(timeout)
        last = Scrape("")
        while True:
            s = self.try_scrape()
            if s is not None:
                last = s
                if ready(s):
                    return s
            if time.monotonic() >= deadline or self.proc.poll() is not None:
                return last
            time.sleep(0.05)

    def wait_metric(self, want, name, timeout=10, **labels):
        return self.wait(lambda s: s.get(name, **labels) >= want, timeout).get(name, **labels)

    def stop(self):
        """SIGTERM, then SIGKILL if it does not exit in time; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=max(self.remaining(20), 5))
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
