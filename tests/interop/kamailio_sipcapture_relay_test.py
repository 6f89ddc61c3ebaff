#!/usr/bin/env python3
"""The HEP relay against a real downstream collector: sipp places calls through a Kamailio proxy
whose siptrace mirrors them to hepd (HEPv3 over UDP, as in kamailio_sipp_test.sh), and hepd
relays every HEP message it accepts to a second Kamailio running `sipcapture`
(sipcapture.cfg.in), which counts the SIP messages it receives.

1. The collector is down: hepd accepts and reconstructs the calls as always (its own figures are
   unaffected) and counts every accepted message as not relayed (TCP: not_connected; UDP: sent to
   a closed port or refused, send_error).
2. The collector starts: hepd (re)connects by itself (TCP: back-off, at most 10 s) and from then
   on sipcapture counts exactly as many SIP messages as hepd accepted, none dropped.

  kamailio_sipcapture_relay_test.py HEPD_BINARY [udp|tcp [udp|tcp]]
The first transport is the relay's (hepd to sipcapture), the second the proxy's siptrace (to
hepd): both default to udp. Over TCP the messages reach the relay through hepd's TCP listener.

Loopback only, free ports, temporary files; every wait is bounded by one deadline; every process
is stopped on every way out. Exit 77 (skipped) when kamailio, kamcmd or sipp is not installed.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from hepd_live import check, Daemon, failures, free_ports  # noqa: E402

HEPD = sys.argv[1]
TRANSPORT = sys.argv[2] if len(sys.argv) > 2 else "udp"
HEP_TRANSPORT = sys.argv[3] if len(sys.argv) > 3 else "udp"
SKIPPED = 77
DEADLINE = time.monotonic() + 150  # every wait together; ctest kills the test at 180 s
CALLS_WHILE_DOWN = 3
CALLS = 6
BUSY = 3


def remaining(timeout):
    return max(0.0, min(timeout, DEADLINE - time.monotonic()))


class Process:
    """A child in a process group of its own (Kamailio forks its workers): stopped as a group."""

    def __init__(self, args, log_path):
        self.log = open(log_path, "w+")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)

    def tail(self, lines=30):
        self.log.flush()
        self.log.seek(0)
        return "".join(self.log.readlines()[-lines:])


def sipcapture_count(ctl):
    """SIP messages sipcapture counted (its script statistic), or None when it does not answer."""
    try:
        r = subprocess.run(["kamcmd", "-s", f"unix:{ctl}", "stats.get_statistics", "script:"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        return None
    m = re.search(r"script:hep_sip = (\d+)", r.stdout)
    return int(m.group(1)) if m else None


def wait_for(ready, timeout):
    deadline = time.monotonic() + remaining(timeout)
    while True:
        value = ready()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(0.1)


def relay_figures(s):
    f = {k: s.get(f"hepd_relay_{k}", destination="sipcapture")
         for k in ("messages_total", "connected", "reconnects_total", "connect_failures_total", "queued_bytes")}
    for reason in ("queue_full", "send_error", "not_connected"):
        f[reason] = s.get("hepd_relay_dropped_messages_total", destination="sipcapture", reason=reason)
    f["accepted"] = s.get("hepd_hep_packets_total")
    f["accepted_sip"] = s.get("hepd_hep_packets_total", payload_type="sip")
    f["completed"] = s.get("hepd_dialogs_finished_total", outcome="completed")
    f["failed"] = s.get("hepd_dialogs_finished_total", outcome="failed")
    return f


def settled(hepd, last_seen):
    """The figures once hepd's accepted count has not moved for a second and the relay's queues
    are empty (every accepted message is relayed or counted)."""
    def ready():
        f = relay_figures(hepd.scrape())
        stable = f["accepted"] == last_seen.get("accepted") and f["queued_bytes"] == 0
        last_seen.clear()
        last_seen.update(f)
        return f if stable else None
    return wait_for(lambda: ready() or (time.sleep(0.9) and None), 20) or last_seen


def sipp_calls(args, log, csv):
    subprocess.run(["timeout", "60", "sipp", *args, "-nostdin", "-trace_stat", "-stf", csv], stdout=log,
                   stderr=subprocess.STDOUT, timeout=remaining(70))
    rows = [line.rstrip("\n").split(";") for line in open(csv)]
    head, last = rows[0], rows[-1]
    return int(last[head.index("SuccessfulCall(C)")])


def main():
    for tool in ("kamailio", "kamcmd", "sipp"):
        if shutil.which(tool) is None:
            print(f"{tool} missing: skipped")
            return SKIPPED
    work = tempfile.mkdtemp(prefix="hepd-relay-interop.")
    processes = []
    hepd = None
    try:
        # Kamailio listens on UDP and TCP: a port free for UDP alone was once taken for TCP.
        kam_port, uas_port, busy_port, uac_port, capture_port = free_ports(5)
        ctl = os.path.join(work, "sipcapture.ctl")
        os.makedirs(os.path.join(work, "db"))
        config = os.path.join(work, "hepd.yaml")
        with open(config, "w") as f:
            f.write("relay:\n  - name: sipcapture\n"
                    f"    address: \"127.0.0.1:{capture_port}\"\n    transport: {TRANSPORT}\n")
        hepd = Daemon(HEPD, work, config, DEADLINE)

        with open(os.path.join(HERE, "kamailio.cfg.in")) as f:
            proxy_cfg = f.read()
        for key, value in (("KAMAILIO_PORT", kam_port), ("HEP_PORT", hepd.hep_port), ("UAS_PORT", uas_port),
                           ("BUSY_PORT", busy_port)):
            proxy_cfg = proxy_cfg.replace(f"@{key}@", str(value))
        with open(os.path.join(work, "proxy.cfg"), "w") as f:
            f.write(proxy_cfg)
        with open(os.path.join(HERE, "sipcapture.cfg.in")) as f:
            capture_cfg = f.read()
        for key, value in (("CAPTURE_PORT", capture_port), ("CTL_SOCKET", ctl), ("DB_DIR", os.path.join(work, "db"))):
            capture_cfg = capture_cfg.replace(f"@{key}@", str(value))
        with open(os.path.join(work, "sipcapture.cfg"), "w") as f:
            f.write(capture_cfg)

        proxy = Process(["kamailio", "-f", os.path.join(work, "proxy.cfg"), "-A", "WITH_SIPTRACE",
                         *(["-A", "WITH_HEP_TCP"] if HEP_TRANSPORT == "tcp" else []), "-DD", "-E"],
                        os.path.join(work, "proxy.log"))
        processes.append(proxy)
        for args, name in ((["-sn", "uas", "-p", str(uas_port)], "uas"),
                           (["-sf", os.path.join(HERE, "uas_busy.xml"), "-p", str(busy_port)], "busy")):
            processes.append(Process(["timeout", "120", "sipp", *args, "-i", "127.0.0.1", "-nostdin"],
                                     os.path.join(work, f"{name}.log")))
        time.sleep(1)  # Kamailio and the UASs bind

        sipp_log = open(os.path.join(work, "uac.log"), "w")
        uac = ["-i", "127.0.0.1", "-p", str(uac_port), "-r", "10"]

        # 1. The collector is down.
        done = sipp_calls(["-sn", "uac", f"127.0.0.1:{kam_port}", "-s", "1000", "-m", str(CALLS_WHILE_DOWN),
                           "-d", "200", *uac], sipp_log, os.path.join(work, "uac-down.csv"))
        check("calls answered while the collector is down (sipp)", done, CALLS_WHILE_DOWN)
        seen = {}
        down = settled(hepd, seen)
        print(f"collector down: {down}", flush=True)
        check("hepd accepted SIP while the collector is down (> 0)", down["accepted_sip"] > 0, True)
        check("hepd's own figures are unaffected: calls completed", down["completed"], CALLS_WHILE_DOWN)
        check("nothing relayed or queued while the collector is down: all counted as drops",
              down["messages_total"] + down["send_error"] + down["not_connected"], down["accepted"])
        if TRANSPORT == "tcp":
            check("TCP: every accepted message dropped as not_connected", down["not_connected"], down["accepted"])
            check("TCP: connection attempts failed (> 0)", down["connect_failures_total"] > 0, True)
            check("TCP: not connected", down["connected"], 0)
        else:
            check("UDP: sends to the closed port refused (> 0, ICMP port unreachable)", down["send_error"] > 0, True)
        check("no queue_full drops", down["queue_full"], 0)

        # 2. The collector starts; the relay gets to it by itself.
        capture = Process(["kamailio", "-f", os.path.join(work, "sipcapture.cfg"),
                           *(["-A", "WITH_TCP"] if TRANSPORT == "tcp" else []), "-DD", "-E"],
                          os.path.join(work, "sipcapture.log"))
        processes.append(capture)
        check("sipcapture answers kamcmd", wait_for(lambda: sipcapture_count(ctl) is not None, 15), True)
        connected = hepd.wait(lambda s: s.get("hepd_relay_connected", destination="sipcapture") == 1, timeout=20)
        check("hepd's relay connected", connected.get("hepd_relay_connected", destination="sipcapture"), 1)
        before = relay_figures(hepd.scrape())

        done = sipp_calls(["-sn", "uac", f"127.0.0.1:{kam_port}", "-s", "1000", "-m", str(CALLS), "-d", "200", *uac],
                          sipp_log, os.path.join(work, "uac.csv"))
        check("calls answered with the collector up (sipp)", done, CALLS)
        busy = sipp_calls(["-sf", os.path.join(HERE, "uac_busy.xml"), f"127.0.0.1:{kam_port}", "-s", "busy", "-m",
                           str(BUSY), *uac], sipp_log, os.path.join(work, "busy.csv"))
        check("busy calls refused (sipp)", busy, BUSY)
        after = settled(hepd, seen)
        accepted = after["accepted"] - before["accepted"]
        relayed = after["messages_total"] - before["messages_total"]
        counted = wait_for(lambda: (lambda n: n if n == relayed else None)(sipcapture_count(ctl)), 10)
        counted = sipcapture_count(ctl) if counted is None else counted
        print(f"collector up: hepd accepted {accepted:g}, relayed {relayed:g}; sipcapture counted {counted}",
              flush=True)
        check("hepd accepted SIP with the collector up (> 0)", accepted > 0, True)
        check("every accepted message is SIP", after["accepted_sip"] - before["accepted_sip"], accepted)
        check("hepd relayed every message it accepted", relayed, accepted)
        check("sipcapture counted as many SIP messages as hepd accepted", counted, accepted)
        for reason in ("queue_full", "send_error", "not_connected"):
            check(f"no {reason} drops with the collector up", after[reason] - before[reason], 0)
        check("hepd's calls completed (both phases)", after["completed"], CALLS_WHILE_DOWN + CALLS)
        check("hepd's calls failed (busy)", after["failed"], BUSY)
        final = hepd.scrape()
        check("hepd's HEP decode errors", final.get("hepd_hep_decode_errors_total"), 0)
        check(f"HEP received over {HEP_TRANSPORT} (all of it)",
              final.get("hepd_hep_received_packets_total", transport=HEP_TRANSPORT),
              final.get("hepd_hep_received_packets_total"))

        rc = hepd.stop()
        check("hepd exit status after SIGTERM", rc, 0)
        if failures:
            print("--- hepd log\n" + hepd.text()[-3000:])
            print("--- sipcapture log\n" + capture.tail())
            print("--- proxy log\n" + proxy.tail())
        return 1 if failures else 0
    finally:
        if hepd is not None:
            hepd.stop()
        for p in reversed(processes):
            p.stop()
        if os.environ.get("KEEP_WORK"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
