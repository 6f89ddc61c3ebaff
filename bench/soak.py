#!/usr/bin/env python3
"""Soak: hepd as a daemon under steady mixed load for a long run; does anything grow or go missing?
  bench/soak.py [--build build] [--minutes 10] [--interval 5] [--udp-rate 20000] [--tcp-rate 2000]
                [--garbage-rate 50] [--update-baseline]
Load, all on loopback for the whole run: bench/hepd_load over UDP (--udp-rate HEP packets/s: SIP
calls and rtpengine-style RTCP-JSON, fresh Call-IDs every cycle) and over one TCP connection
(--tcp-rate), plus garbage from this script (--garbage-rate datagrams/s of random bytes and of
HEP3 headers with lying lengths, and every 10 s a TCP connection that sends junk).
Every --interval seconds it records the daemon's RSS, open descriptors, threads, CPU and its
counters. At the end, after the load stops and the queues drain, it checks:
- memory: RSS after warm-up (the first fifth of the run, at least 60 s) stays within +-5 % of
  its median; open descriptors do not grow (after the load, as many as before it);
- accounting, exactly: UDP datagrams sent (load + garbage) = received by hepd + dropped by the
  kernel (the socket's drops in /proc/net/udp); HEPv3 frames sent over TCP = received over TCP;
  received = accepted + dropped (by reason); accepted = processed by the shards + queue drops.
Prints a table on stderr and the JSON on stdout; --update-baseline stores it in
bench/baseline.json under "soak". Exit status 1 when a check fails.
"""
import argparse
import json
import os
import random
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

import baseline  # bench/baseline.py
import daemon_load as dl  # the daemon, /proc and metric helpers of the load benchmark


def process_sample(pid):
    rss = threads = 0
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return {"rss_kib": rss, "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": threads}


def counters(hepd):
    text = hepd.scrape()
    m = lambda name, **labels: dl.metric(text, name, **labels)  # noqa: E731
    return {
        "received_udp": m("hepd_hep_received_packets_total", transport="udp"),
        "received_tcp_v3": m("hepd_hep_received_packets_total", transport="tcp", version="3"),
        "received": m("hepd_hep_received_packets_total"),
        "dropped": m("hepd_hep_dropped_packets_total"),
        "accepted": m("hepd_hep_packets_total"),
        "shard_datagrams": m("hepd_shard_datagrams_total"),
        "queue_drops": m("hepd_shard_queue_dropped_datagrams_total"),
        "kernel_drops_own": m("hepd_udp_kernel_drops_total"),
        "decode_errors": m("hepd_hep_decode_errors_total"),
        "tcp_frame_errors": m("hepd_tcp_frame_errors_total"),
        "dialogs_active": m("hepd_dialogs_active"),
    }


class Garbage(threading.Thread):
    """Random datagrams and HEP3 headers whose lengths lie, at `rate` per second; every 10 s a TCP
    connection that sends junk (hepd cuts it)."""

    def __init__(self, port, rate):
        super().__init__(daemon=True)
        self.port, self.rate = port, rate
        self.udp_sent = self.tcp_connections = 0
        self.stop_flag = threading.Event()

    def datagram(self, rng):
        if rng.random() < 0.5:
            return rng.randbytes(rng.randint(1, 600))
        # "HEP3", a total length past the datagram's end, then a truncated chunk.
        return b"HEP3" + struct.pack("!H", rng.randint(100, 65535)) + rng.randbytes(rng.randint(0, 40))

    def run(self):
        rng = random.Random(7)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        next_tcp = time.monotonic()
        t0 = time.monotonic()
        while not self.stop_flag.is_set():
            due = int((time.monotonic() - t0) * self.rate)
            while self.udp_sent < due:
                udp.sendto(self.datagram(rng), ("127.0.0.1", self.port))
                self.udp_sent += 1
            if time.monotonic() >= next_tcp:
                next_tcp += 10
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=2) as c:
                        c.sendall(b"GET / HTTP/1.0\r\n\r\n" + rng.randbytes(64))
                        self.tcp_connections += 1
                except OSError:
                    pass
            self.stop_flag.wait(0.02)
        udp.close()


def run(a):
    hepd = dl.Hepd(a.build, extra=["--log-level", "error"])
    pid = hepd.proc.pid
    loads = []
    garbage = Garbage(hepd.port, a.garbage_rate)
    samples = []
    try:
        udp0 = dl.udp_socket_stats(hepd.port)
        seconds = a.minutes * 60
        load = os.path.join(a.build, "bench/hepd_load")
        common = ["--to", f"127.0.0.1:{hepd.port}", "--duration", str(seconds), "--calls", "200"]
        loads.append(subprocess.Popen([load, *common, "--rate", str(a.udp_rate)], stdout=subprocess.PIPE))
        loads.append(subprocess.Popen([load, *common, "--rate", str(a.tcp_rate), "--tcp", "--seed", "2"],
                                      stdout=subprocess.PIPE))
        garbage.start()
        t0 = time.monotonic()
        cpu0 = dl.usage([pid])[0]
        while any(p.poll() is None for p in loads):
            c = counters(hepd)
            s = {"t": round(time.monotonic() - t0, 1), **process_sample(pid),
                 "cpu_pct": round(100 * (dl.usage([pid])[0] - cpu0) / max(time.monotonic() - t0, 1e-9), 1),
                 **{k: c[k] for k in ("received", "accepted", "dropped", "dialogs_active")},
                 "scrape_seconds": round(hepd.last_scrape_seconds, 3)}
            samples.append(s)
            print(f"t={s['t']:7.1f}s rss={s['rss_kib'] / 1024:7.1f} MiB fds={s['fds']} threads={s['threads']} "
                  f"cpu={s['cpu_pct']:5.1f}% received={int(s['received'])} accepted={int(s['accepted'])} "
                  f"dialogs={int(s['dialogs_active'])} scrape={s['scrape_seconds']:.3f}s", file=sys.stderr)
            time.sleep(a.interval)
        garbage.stop_flag.set()
        garbage.join()
        sent = [json.loads(p.communicate()[0]) for p in loads]
        dl.drained(hepd)
        end = counters(hepd)
        udp1 = dl.udp_socket_stats(hepd.port)
        final = process_sample(pid)
    finally:
        for p in loads:
            if p.poll() is None:
                p.kill()
        garbage.stop_flag.set()
        hepd.stop()

    udp_sent = sent[0]["sent_packets"] + garbage.udp_sent
    kernel = (udp1["drops"] or 0) - (udp0["drops"] or 0)
    warm = [s for s in samples if s["t"] >= max(60.0, 0.2 * a.minutes * 60)]
    rss = [s["rss_kib"] for s in warm] or [final["rss_kib"]]
    rss_median = statistics.median(rss)
    rss_spread = max(abs(max(rss) - rss_median), abs(rss_median - min(rss))) / rss_median
    fds = [s["fds"] for s in warm] or [final["fds"]]
    checks = {
        "RSS within +-5 % of its median after warm-up": rss_spread <= 0.05,
        # Above the load's own connection, the junk TCP connection every 10 s may be open at a
        # sample; once the load has stopped, hepd must hold exactly what it held before it.
        "open descriptors do not grow (after the run = before it)":
            final["fds"] <= samples[0]["fds"] and max(fds) <= min(fds) + 1,
        "UDP: sent = received + kernel drops": udp_sent == end["received_udp"] + kernel,
        "TCP: HEPv3 frames sent = received": sent[1]["sent_packets"] == end["received_tcp_v3"],
        "received = accepted + dropped": end["received"] == end["accepted"] + end["dropped"],
        "accepted = processed by the shards + queue drops":
            end["accepted"] == end["shard_datagrams"] + end["queue_drops"],
    }
    return {
        "command": "bench/soak.py " + " ".join(sys.argv[1:]),
        "host": dl.host_info(),
        "git_commit": dl.git_commit(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load": {"minutes": a.minutes, "udp_rate": a.udp_rate, "tcp_rate": a.tcp_rate,
                 "garbage_rate": a.garbage_rate, "udp_sent": sent[0]["sent_packets"],
                 "tcp_sent": sent[1]["sent_packets"], "garbage_udp_sent": garbage.udp_sent,
                 "garbage_tcp_connections": garbage.tcp_connections},
        "totals": {**end, "udp_socket_drops": kernel},
        "memory": {"rss_mib_median_after_warmup": round(rss_median / 1024, 1),
                   "rss_mib_min": round(min(rss) / 1024, 1), "rss_mib_max": round(max(rss) / 1024, 1),
                   "rss_spread": round(rss_spread, 4), "fds_after_warmup": [min(fds), max(fds)],
                   "final": final},
        "samples": samples,
        "checks": checks,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(dl.ROOT, "build"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--interval", type=float, default=5)
    ap.add_argument("--udp-rate", type=float, default=20000)
    ap.add_argument("--tcp-rate", type=float, default=2000)
    ap.add_argument("--garbage-rate", type=float, default=50)
    ap.add_argument("--update-baseline", action="store_true")
    a = ap.parse_args()
    result = run(a)
    for name, ok in result["checks"].items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}", file=sys.stderr)
    m = result["memory"]
    print(f"RSS after warm-up {m['rss_mib_min']}-{m['rss_mib_max']} MiB (median {m['rss_mib_median_after_warmup']}, "
          f"spread {100 * m['rss_spread']:.1f} %), descriptors {m['fds_after_warmup']}", file=sys.stderr)
    print(json.dumps(result, indent=2))
    if a.update_baseline:
        baseline.store("soak", result)
    sys.exit(0 if all(result["checks"].values()) else 1)


if __name__ == "__main__":
    main()
