#!/usr/bin/env python3
"""Beyond one machine: two hepd instances, each fed by its own group of proxies, scraped by one
real Prometheus (Debian's `prometheus`), whose sums over the instances must equal the calls sent.

Site A's proxy mirrors 7 calls to the first hepd, site B's 12 calls to the second (distinct
Call-IDs; 2 and 3 of them busy, the rest answered and hung up). A proxy mirrors both legs of a
call (caller to proxy, proxy to callee) to the same hepd, so every dialog is whole in one instance.
A's calls ring after 0.3 s, B's after 1.5 s, so the summed PDD buckets show which instance
contributed what. Once each hepd shows all its calls ended and Prometheus has scraped both after
that, Prometheus' HTTP API must answer:
- counters: sum() of dialogs created, completed and failed, and of the 4xx INVITE responses;
- histograms: sum() of `_count`, of `_bucket{le="+Inf"}` and of `_sum`, the buckets summed by
  `le`, and histogram_quantile over them, as README.md ("Scaling out") tells operators to write.

Loopback only, free ports, temporary state, configurations and TSDB; every wait is bounded by one
deadline; hepd and Prometheus are stopped (killed if need be) on every way out. Exit 77 (skipped)
only when no prometheus binary is installed.

  prometheus_scale_test.py HEPD_BINARY
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from hepd_live import US, check, Daemon, failures, free_port, hep3, now_us, sip  # noqa: E402

HEPD = sys.argv[1]
SKIPPED = 77
DEADLINE = time.monotonic() + 50  # every wait together; ctest kills the test at 90 s
PROXY = ("10.0.0.10", 5060)


class Site:
    """A group of proxies (one here) and the hepd they mirror to."""

    def __init__(self, name, capture_id, calls, busy, pdd_s, setup_s):
        self.name, self.capture_id, self.calls, self.busy = name, capture_id, calls, busy
        self.pdd_us, self.setup_us = int(pdd_s * US), int(setup_s * US)
        self.answered = calls - busy


SITES = [Site("proxy-a", 1, calls=7, busy=2, pdd_s=0.3, setup_s=0.8),
         Site("proxy-b", 2, calls=12, busy=3, pdd_s=1.5, setup_s=2.5)]
TOTAL = sum(s.calls for s in SITES)
ANSWERED = sum(s.answered for s in SITES)
BUSY = sum(s.busy for s in SITES)
DURATION_US = 2 * US


def remaining(timeout):
    return max(0.0, min(timeout, DEADLINE - time.monotonic()))


def send_calls(site, hep_port):
    """Every call of `site` on both legs, as its proxy's siptrace mirrors them. Capture times lie
    in the past (within hep.clock_offset_limit), so every interval is the sender's own."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    to = ("127.0.0.1", hep_port)
    t0 = now_us() - 8 * US
    try:
        for i in range(site.calls):
            call_id = f"{site.name}-call-{i}"
            caller, callee = (f"10.1.{site.capture_id}.{i + 1}", 5060), (f"10.2.{site.capture_id}.{i + 1}", 5060)
            legs = [(caller, PROXY), (PROXY, callee)]  # leg 1: caller to proxy; leg 2: proxy to callee
            t = t0 + i * 10_000

            def relay(kind, at, forward=True, order=(0, 1)):
                """`kind` on both legs, 1 ms apart: requests go forward, responses come back."""
                for n, leg in enumerate(order):
                    src, dst = legs[leg] if forward else legs[leg][::-1]
                    sock.sendto(hep3(sip(kind, call_id, branch=f"-leg{leg}"), at + n * 1000, site.capture_id,
                                     src, dst), to)

            relay("INVITE", t)
            relay("180", t + site.pdd_us, forward=False, order=(1, 0))
            if i < site.busy:
                relay("486", t + site.setup_us, forward=False, order=(1, 0))
                relay("ACK", t + site.setup_us + 2000, order=(1, 0))  # each hop acknowledges its own
                continue
            relay("200", t + site.setup_us, forward=False, order=(1, 0))
            relay("ACK", t + site.setup_us + 10_000)
            relay("BYE", t + site.setup_us + DURATION_US)
            relay("200BYE", t + site.setup_us + DURATION_US + 10_000, forward=False, order=(1, 0))
    finally:
        sock.close()


class Prometheus:
    """Debian's prometheus on a free loopback port, scraping `targets` every second into a
    temporary TSDB."""

    def __init__(self, binary, work, targets):
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: hepd\n    static_configs:\n"
                    f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
        self.proc = None
        for _ in range(3):  # a port taken between free_port() and prometheus' bind: try another
            self.port = free_port()
            self.log = open(os.path.join(work, "prometheus.log"), "w+")
            self.proc = subprocess.Popen([binary, f"--config.file={config}",
                                          f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
                                          f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                                         stdout=self.log, stderr=subprocess.STDOUT)
            if self._ready():
                return
            self.stop()
        raise RuntimeError("prometheus did not start:\n" + self.text())

    def _ready(self):
        deadline = time.monotonic() + remaining(20)
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2).status == 200:
                    return True
            except OSError:  # not listening yet, or 503 while it starts
                pass
            time.sleep(0.1)
        return False

    def query(self, promql):
        """The instant vector of `promql` now, as {instance or "": value}."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        answer = json.load(urllib.request.urlopen(url, timeout=5))
        if answer.get("status") != "success":
            raise RuntimeError(f"{promql}: {answer}")
        return {r["metric"].get("instance", r["metric"].get("le", "")): float(r["value"][1])
                for r in answer["data"]["result"]}

    def value(self, promql):
        """The one value of `promql`, or None when the result is empty."""
        result = self.query(promql)
        if len(result) > 1:
            raise RuntimeError(f"{promql}: more than one series: {result}")
        return next(iter(result.values()), None)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()


def all_ended(site):
    def ready(s):
        return (s.get("hepd_dialogs_finished_total") >= site.calls and
                s.get("hepd_dialog_pdd_seconds_count") >= site.calls)
    return ready


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # killed from outside: clean up all the same
    prometheus_binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not os.access(prometheus_binary, os.X_OK):
        print("skipped: prometheus is not installed (Debian package prometheus)")
        sys.exit(SKIPPED)

    work = tempfile.mkdtemp(prefix="hepd-prometheus-scale.")
    daemons, prometheus = [], None
    try:
        for site in SITES:
            site_dir = os.path.join(work, site.name)
            os.makedirs(site_dir)
            config = os.path.join(site_dir, "hepd.yaml")
            with open(config, "w") as f:
                f.write("hep:\n  clock_offset_limit: 60s\n"
                        f"agents:\n  - {{name: {site.name}, capture_id: {site.capture_id}}}\n")
            daemons.append(Daemon(HEPD, site_dir, config, DEADLINE))
        targets = [f"127.0.0.1:{d.metrics_port}" for d in daemons]
        prometheus = Prometheus(prometheus_binary, work, targets)

        for site, d in zip(SITES, daemons):
            send_calls(site, d.hep_port)
        for site, d in zip(SITES, daemons):
            s = d.wait(all_ended(site))
            check(f"{site.name}: its hepd saw its calls end", s.get("hepd_dialogs_finished_total"), site.calls)
        ended = time.time()

        # Both targets up, and scraped after the last call ended (timestamp(up) is the scrape's).
        def scraped_after():
            got = prometheus.query('timestamp(up{job="hepd"} == 1)')
            return len(got) == len(targets) and all(t > ended for t in got.values())
        while time.monotonic() < DEADLINE and not scraped_after():
            time.sleep(0.2)
        check("both targets up and scraped after the calls", scraped_after(), True)

        by_instance = prometheus.query('sum by (instance)(hepd_dialogs_created_total)')
        check("each instance has its own calls", by_instance, {t: float(s.calls) for t, s in zip(targets, SITES)})
        check("sum: dialogs created", prometheus.value("sum(hepd_dialogs_created_total)"), TOTAL)
        check("sum without(instance): completed",
              prometheus.value('sum without(instance)(hepd_dialogs_finished_total{outcome="completed"})'), ANSWERED)
        check("sum: failed", prometheus.value('sum(hepd_dialogs_finished_total{outcome="failed"})'), BUSY)
        check("sum: no other outcome", prometheus.value("sum(hepd_dialogs_finished_total)"), TOTAL)
        check("sum: 486 responses, one per leg",
              prometheus.value('sum(hepd_sip_responses_total{method="INVITE",status_class="4xx"})'), 2 * BUSY)

        for name, want in (("pdd", TOTAL), ("setup", ANSWERED), ("duration", ANSWERED)):
            metric = f"hepd_dialog_{name}_seconds"
            check(f"sum: {metric}_count", prometheus.value(f"sum({metric}_count)"), want)
            check(f'sum: {metric}_bucket{{le="+Inf"}}', prometheus.value(f'sum({metric}_bucket{{le="+Inf"}})'), want)
        pdd_sum = prometheus.value("sum(hepd_dialog_pdd_seconds_sum)")
        want_sum = sum(s.calls * s.pdd_us for s in SITES) / US
        check(f"sum: hepd_dialog_pdd_seconds_sum {pdd_sum} is {want_sum}", abs(pdd_sum - want_sum) < 1e-6, True)
        a, b = SITES
        buckets = prometheus.query("sum by (le)(hepd_dialog_pdd_seconds_bucket)")
        check("PDD buckets summed by le: A's 0.3 s, then B's 1.5 s",
              (buckets.get("0.25"), buckets.get("0.5"), buckets.get("1"), buckets.get("2")),
              (0.0, float(a.calls), float(a.calls), float(TOTAL)))
        # The median call is one of B's: it lies in B's bucket (1, 2], not in A's.
        median = prometheus.value("histogram_quantile(0.5, sum by (le)(hepd_dialog_pdd_seconds_bucket))")
        check(f"median PDD across instances {median} in (1, 2]", median is not None and 1 < median <= 2, True)

        for site, d in zip(SITES, daemons):
            check(f"{site.name}: hepd exit status after SIGTERM", d.stop(), 0)
    finally:
        if prometheus is not None:
            prometheus.stop()
        for d in daemons:
            d.stop()
        if failures:
            for site, d in zip(SITES, daemons):
                print(f"--- hepd {site.name} log\n" + d.text()[-3000:])
            if prometheus is not None:
                print("--- prometheus log\n" + prometheus.text()[-3000:])
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
