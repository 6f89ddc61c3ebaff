#!/usr/bin/env python3
"""Live-intake benchmark (issue 5): hepd as a daemon on loopback, fed by bench/hep_load.

  bench/daemon_load.py --build build [--duration 5] [--update-baseline]

1. Zero-loss rate on one receive thread: offers increasing rates (UDP, 1 receive thread, no rate
   limit) and reports the highest rate at which hepd accepted every packet it was sent
   (hepd_hep_received_packets_total == sent, no kernel or queue drops).
2. Rate limiting: --hep-rate-limit R, offered at 2 R; reports the exact excess dropped
   (hepd_hep_dropped_packets_total{reason="rate_limit"}) against offered - allowed, and the scrape
   latency while under that load (median of 10 scrapes) against an idle scrape.
Also reports hepd's CPU time per accepted packet (from /proc). The generator shares the machine:
on 2 cores it competes with hepd, so these are lower bounds.
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def metric(text, name, **labels):
    total = 0.0
    for line in text.splitlines():
        m = re.match(r'([a-zA-Z0-9_:]+)(\{(.*)\})? ([0-9.e+-]+)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(4))
    return total


class Hepd:
    def __init__(self, build, extra):
        self.state = tempfile.mkdtemp(prefix="hepd-load.")
        self.hep, self.metrics = free_port(), free_port()
        self.proc = subprocess.Popen([os.path.join(build, "daemon/app/hepd"), "--hep-listen", f"127.0.0.1:{self.hep}",
                                      "--metrics-listen", f"127.0.0.1:{self.metrics}", "--state-dir", self.state,
                                      "--log-level", "warn", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                self.scrape()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("hepd did not start")

    def scrape(self):
        t0 = time.perf_counter()
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics}/metrics", timeout=5).read().decode()
        self.last_scrape_seconds = time.perf_counter() - t0
        return text

    def cpu_seconds(self):
        fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


def load(build, port, rate, duration):
    out = subprocess.run([os.path.join(build, "bench/hepd_load"), "--to", f"127.0.0.1:{port}", "--rate", str(rate),
                          "--duration", str(duration)], stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--update-baseline", action="store_true")
    a = ap.parse_args()
    result = {"host": {"cores": os.cpu_count(), "load_average_at_start": os.getloadavg()[0]}}

    steps = []
    best = 0
    for rate in [25000, 50000, 100000, 150000, 200000, 300000]:
        h = Hepd(a.build, ["--cores", "1"])
        cpu0 = h.cpu_seconds()
        sent = load(a.build, h.hep, rate, a.duration)
        time.sleep(0.5)
        text = h.scrape()
        received = metric(text, "hepd_hep_received_packets_total")
        dropped = metric(text, "hepd_hep_dropped_packets_total") + metric(text, "hepd_udp_kernel_drops_total")
        cpu = h.cpu_seconds() - cpu0
        h.stop()
        lossless = received == sent["sent_packets"] and dropped == 0
        steps.append({"offered_rate": rate, "sent": sent["sent_packets"], "achieved_rate": sent.get("achieved_rate"),
                      "received": received, "dropped": dropped,
                      "cpu_ns_per_packet": 1e9 * cpu / received if received else None, "lossless": lossless})
        if lossless:
            best = max(best, sent.get("achieved_rate", 0))
        else:
            break
    result["zero_loss"] = {"one_receive_thread": True, "best_lossless_rate": best, "steps": steps}

    limit = 20000
    h = Hepd(a.build, ["--cores", "1", "--hep-rate-limit", str(limit)])
    idle = statistics.median([(h.scrape(), h.last_scrape_seconds)[1] for _ in range(10)])
    proc = subprocess.Popen([os.path.join(a.build, "bench/hepd_load"), "--to", f"127.0.0.1:{h.hep}", "--rate",
                             str(2 * limit), "--duration", str(a.duration)], stdout=subprocess.PIPE)
    time.sleep(a.duration / 2)
    busy = statistics.median([(h.scrape(), h.last_scrape_seconds)[1] for _ in range(10)])
    sent = json.loads(proc.communicate()[0])
    time.sleep(0.5)
    text = h.scrape()
    h.stop()
    received = metric(text, "hepd_hep_received_packets_total")
    limited = metric(text, "hepd_hep_dropped_packets_total", reason="rate_limit")
    accepted = received - metric(text, "hepd_hep_dropped_packets_total")
    result["rate_limit"] = {"limit": limit, "burst": limit, "offered_rate": 2 * limit, "sent": sent["sent_packets"],
                            "received": received, "accepted": accepted, "dropped_rate_limit": limited,
                            "accepted_per_second": accepted / a.duration,
                            "expected_accepted_upper_bound": limit * a.duration + limit,
                            "scrape_seconds_idle_median": idle, "scrape_seconds_under_load_median": busy}
    print(json.dumps(result, indent=2))
    if a.update_baseline:
        path = os.path.join(HERE, "baseline.json")
        baseline = json.load(open(path))
        baseline["daemon_load"] = {"command": "bench/daemon_load.py " + " ".join(sys.argv[1:]),
                                   "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "result": result}
        with open(path, "w") as f:
            json.dump(baseline, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
