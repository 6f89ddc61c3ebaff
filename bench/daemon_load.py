#!/usr/bin/env python3
"""Always-on benchmark: hepd as a daemon on loopback, fed by bench/hepd_load, against Kamailio's
sipcapture module fed the same way in the same run.

  bench/daemon_load.py [--build build] [--repetitions 3] [--duration 3] [--peers hepd,sipcapture,floor]
                       [--no-pin] [--nice -10] [--update-baseline]

For each peer (a fresh process for every measurement; hepd --cores 1 with its one UDP receive
thread, Kamailio with one UDP worker):
1. Idle: no traffic for --idle-seconds; CPU % of one core and wake-ups per second (context
   switches of every thread of every process of the peer).
2. Fixed rates (20,000 and 100,000 HEP packets/s, --rates), --duration seconds each: CPU per
   accepted packet, CPU %, context switches per second, kernel drops (the socket's drops column
   in /proc/net/udp, and hepd's own hepd_udp_kernel_drops_total), hepd's queue drops, packets
   accepted against sent.
3. Highest lossless rate: unpaced first (the generator's top speed) when both fixed rates were
   lossless, then a geometric bisection (--bisect-steps probes) between the highest lossless
   rate and the lowest lossy one (or, lower, a lossy step's accepted packets per second: the
   peer's saturated throughput); lossless = every packet sent accepted, no kernel or queue drop.
   The figures at that rate are reported like the fixed rates.
Repetitions alternate the peers; tables show medians. Then, for hepd only (as in issue 5):
--hep-rate-limit R offered at 2 R (exact excess dropped) and the scrape latency idle and under
that load.

CPU is the time on a CPU of every thread of the peer's processes (/proc/PID/task/*/schedstat,
nanoseconds) over the measured window; context switches are voluntary + nonvoluntary from
/proc/PID/task/*/status. hepd's CPU is also split by thread role, from the names its threads
carry: the receive thread (hepd-udp-0) and the shards (hepd-shard-N) a packet, and the receive
thread's share in the kernel (user/system ticks of /proc/PID/task/*/stat). The peer runs on
CPU 0 and the generator on CPU 1 (taskset; --no-pin), each in a session of its own whose
scheduling group is at nice --nice, ahead of the compilers sharing the machine. Kamailio's configuration is bench/kamailio-sipcapture.cfg.
The third peer, "floor", is bench/udp_sink: it receives as hepd's receive thread does (recvmmsg of
64, 8 MiB SO_RCVBUF) and discards, so its CPU a packet is what the kernel's receive costs any
collector on this machine; "above_floor" is hepd's figure less the floor's, at each rate.
"""
import argparse
import glob
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import baseline  # bench/baseline.py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER_CPU, LOAD_CPU = "0", "1"


def free_port():
    # UDP and TCP both free: hepd listens on both at --hep-listen.
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            u.close()
            s.close()


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


def udp_socket_stats(port):
    """Receive queue and drops of every UDP socket bound to `port` (any process, IPv4 and IPv6)."""
    rx_queue = drops = 0
    found = False
    for path in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            lines = open(path).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) < 13 or int(f[1].rsplit(":", 1)[1], 16) != port:
                continue
            found = True
            rx_queue += int(f[4].split(":")[1], 16)
            drops += int(f[-1])
    return {"rx_queue_bytes": rx_queue, "drops": drops} if found else {"rx_queue_bytes": 0, "drops": None}


def process_tree(root_pid):
    """root_pid and all its descendants (Kamailio forks its workers at start-up)."""
    children = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            f = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(f[1]), []).append(int(stat.split("/")[2]))
    out, todo = [], [root_pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return sorted(out)


def usage(pids):
    """(CPU seconds, context switches) summed over the processes and all their threads. CPU is
    each thread's time on a CPU in nanoseconds (/proc/PID/task/TID/schedstat): the 10 ms ticks of
    /proc/PID/stat would be 0.17 us per packet of rounding on 60,000 packets."""
    cpu = 0.0
    switches = 0
    for pid in pids:
        for task in glob.glob(f"/proc/{pid}/task/*"):
            try:
                cpu += int(open(f"{task}/schedstat").read().split()[0]) / 1e9
                for line in open(f"{task}/status"):
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        switches += int(line.split()[1])
            except (OSError, ValueError, IndexError):
                pass
    return cpu, switches


def thread_roles(pids):
    """hepd's CPU seconds by thread role, from the threads' names (hepd-udp-N: receive,
    hepd-shard-N: shards): {role: [time on a CPU, user, system]} (user and system in the 10 ms
    ticks of /proc/PID/task/TID/stat, a split of the same time)."""
    roles = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        for task in glob.glob(f"/proc/{pid}/task/*"):
            try:
                name = open(f"{task}/comm").read().strip()
                on_cpu = int(open(f"{task}/schedstat").read().split()[0]) / 1e9
                fields = open(f"{task}/stat").read().rsplit(")", 1)[1].split()
                user, system = int(fields[11]) / tick, int(fields[12]) / tick
            except (OSError, ValueError, IndexError):
                continue
            role = "receive" if name.startswith("hepd-udp-") else "shards" if name.startswith("hepd-shard-") else "other"
            r = roles.setdefault(role, [0.0, 0.0, 0.0])
            r[0] += on_cpu
            r[1] += user
            r[2] += system
    return roles


def role_figures(roles0, roles1, accepted):
    """Per accepted packet: the receive threads' and the shards' CPU µs, and the share of the
    receive threads' time spent in the kernel (recvmmsg: copies, socket accounting)."""
    def delta(role, i):
        return roles1.get(role, [0.0] * 3)[i] - roles0.get(role, [0.0] * 3)[i]
    if not accepted or "receive" not in roles1:
        return {"receive_us_per_packet": None, "shards_us_per_packet": None, "receive_kernel_share": None}
    ticks = delta("receive", 1) + delta("receive", 2)
    return {"receive_us_per_packet": 1e6 * delta("receive", 0) / accepted,
            "shards_us_per_packet": 1e6 * delta("shards", 0) / accepted,
            "receive_kernel_share": delta("receive", 2) / ticks if ticks > 0 else None}


def receive_buffer_bytes(port):
    """SO_RCVBUF as the kernel accounts it (ss's skmem rb) for the socket on `port`."""
    try:
        out = subprocess.run(["ss", "-uamnH", "sport", "=", f":{port}"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"rb(\d+)", out)
    return int(m.group(1)) if m else None


NICE = 0


def spawn(argv, cpu, pin, **kw):
    """Starts argv on `cpu` (if pin) at the benchmark's niceness, ahead of the builds sharing the
    machine. With the kernel's autogroups (one scheduling group per session) a process' nice only
    counts inside its session, so the process gets a session of its own and the session's group
    gets the niceness (/proc/PID/autogroup); `nice` covers kernels without autogroups."""
    argv = ["taskset", "-c", cpu, *argv] if pin else list(argv)
    if NICE:
        argv = ["nice", "-n", str(NICE), *argv]
    proc = subprocess.Popen(argv, start_new_session=True, **kw)
    if NICE:
        try:
            with open(f"/proc/{proc.pid}/autogroup", "w") as f:
                f.write(str(NICE))
        except OSError:
            pass
    return proc


def terminate(proc):
    """SIGTERM, and SIGKILL after 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Hepd:
    name = "hepd"

    def __init__(self, build, extra=(), pin=False):
        self.state = tempfile.mkdtemp(prefix="hepd-load.")
        self.port, self.metrics = free_port(), free_port()
        self.proc = spawn([os.path.join(build, "daemon/app/hepd"), "--hep-listen", f"127.0.0.1:{self.port}",
                           "--metrics-listen", f"127.0.0.1:{self.metrics}", "--state-dir", self.state,
                           "--log-level", "warn", "--cores", "1", *extra], PEER_CPU, pin,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                self.scrape()
                break
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("hepd did not start")
        if self.proc.poll() is not None:
            raise RuntimeError(f"hepd exited with status {self.proc.returncode}")
        self.pids = [self.proc.pid]

    def scrape(self):
        t0 = time.perf_counter()
        # Generous: on a shared machine a starved scrape is a slow sample, not a reason to lose
        # a long run (the soak); its time is recorded in last_scrape_seconds.
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics}/metrics", timeout=30).read().decode()
        self.last_scrape_seconds = time.perf_counter() - t0
        return text

    def counters(self):
        text = self.scrape()
        received = metric(text, "hepd_hep_received_packets_total")
        dropped = metric(text, "hepd_hep_dropped_packets_total")
        return {"accepted": received - dropped, "received": received, "dropped_after_receive": dropped,
                "own_kernel_drops": metric(text, "hepd_udp_kernel_drops_total"),
                "queue_drops": metric(text, "hepd_shard_queue_dropped_datagrams_total")
                + metric(text, "hepd_hep_dropped_packets_total", reason="queue_full"),
                # A sender whose clock the daemon had to step: the load's times, not the daemon's work.
                "clock_steps": metric(text, "hepd_hep_clock_steps_total")}

    def stop(self):
        terminate(self.proc)
        shutil.rmtree(self.state, ignore_errors=True)


class Sipcapture:
    name = "sipcapture"
    config = os.path.join(HERE, "kamailio-sipcapture.cfg")

    def __init__(self, pin=False):
        self.work = tempfile.mkdtemp(prefix="sipcapture-load.")
        self.port = free_port()
        self.ctl = f"unix:{self.work}/kamailio.ctl"
        self.store = os.path.join(self.work, "store")
        os.mkdir(self.store)
        self.log = open(os.path.join(self.work, "kamailio.log"), "w")
        self.proc = spawn(["kamailio", "-f", self.config, "-DD", "-E", "-P", os.path.join(self.work, "pid"),
                           "-A", f"HEP_LISTEN=udp:127.0.0.1:{self.port}", "-A", f'CTL_SOCKET="{self.ctl}"',
                           "-A", f'DB_URL="flatstore:{self.store}"'], PEER_CPU, pin,
                          stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            if self.proc.poll() is not None:
                break
            try:
                self.counters()
                break
            except RuntimeError:
                time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("kamailio did not start")
        if self.proc.poll() is not None:
            raise RuntimeError(f"kamailio exited with status {self.proc.returncode}: "
                               + open(os.path.join(self.work, "kamailio.log")).read()[-2000:])
        time.sleep(0.3)  # the timer and ctl processes fork after the ctl socket opens
        self.pids = process_tree(self.proc.pid)

    def counters(self):
        r = subprocess.run(["kamcmd", "-s", self.ctl, "stats.get_statistics", "script:"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=10)
        m = re.search(r"script:hep_sip = (\d+)", r.stdout)
        if r.returncode != 0 or not m:
            raise RuntimeError(r.stderr.strip() or r.stdout.strip())
        # sipcapture appends one db_flatstore line per RTCP report (see the configuration).
        rtcp = 0
        for path in glob.glob(os.path.join(self.store, "rtcp_capture_*.log")):
            with open(path, "rb") as f:
                rtcp += f.read().count(b"\n")
        return {"accepted": float(m.group(1)) + rtcp, "sip": float(m.group(1)), "rtcp": float(rtcp),
                "own_kernel_drops": None, "queue_drops": None, "clock_steps": None}

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)


class UdpSink:
    """The floor: bench/udp_sink receives as hepd's receive thread does (recvmmsg of 64, 8 MiB
    SO_RCVBUF) and discards. Its CPU a packet is the kernel's receive and copy on this machine,
    which every collector pays; a peer's figure above it is the peer's own work."""
    name = "floor"

    def __init__(self, build, pin=False):
        self.port = free_port()
        self.proc = spawn([os.path.join(build, "bench/udp_sink"), "--listen", f"127.0.0.1:{self.port}"], PEER_CPU,
                          pin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.pids = [self.proc.pid]
        for _ in range(200):
            if udp_socket_stats(self.port)["drops"] is not None:
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"udp_sink exited with status {self.proc.returncode}")
            time.sleep(0.02)
        else:
            self.stop()
            raise RuntimeError("udp_sink did not bind")

    def counters(self):
        # taskset and nice exec udp_sink: the pid is the sink's.
        self.proc.send_signal(signal.SIGUSR1)
        got = json.loads(self.proc.stdout.readline())
        return {"accepted": float(got["packets"]), "own_kernel_drops": None, "queue_drops": None,
                "clock_steps": None}

    def stop(self):
        terminate(self.proc)


def kamailio_version():
    try:
        return subprocess.run(["kamailio", "-v"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return None


def start_load(a, port, rate, duration):
    return spawn([os.path.join(a.build, "bench/hepd_load"), "--to", f"127.0.0.1:{port}", "--rate", str(rate),
                  "--duration", str(duration), "--calls", str(a.calls)], LOAD_CPU, a.pin, stdout=subprocess.PIPE)


def load_result(proc):
    out = proc.communicate()[0]
    if proc.returncode != 0:
        raise RuntimeError(f"hepd_load exited with status {proc.returncode}")
    return json.loads(out)


def run_load(a, port, rate, duration):
    return load_result(start_load(a, port, rate, duration))


def drained(peer, timeout=5.0):
    """Waits until the socket's receive queue is empty, then a little for the peer's own queues."""
    t_end = time.monotonic() + timeout
    while udp_socket_stats(peer.port)["rx_queue_bytes"] > 0 and time.monotonic() < t_end:
        time.sleep(0.05)
    time.sleep(0.3)


def start_peer(a, kind):
    if kind == "hepd":
        # daemon_ab.py runs another build's hepd (hepd_build) under this build's generator.
        return Hepd(getattr(a, "hepd_build", a.build), pin=a.pin)
    if kind == "floor":
        return UdpSink(a.build, pin=a.pin)
    return Sipcapture(pin=a.pin)


def measure_idle(a, kind):
    peer = start_peer(a, kind)
    try:
        time.sleep(a.settle)
        cpu0, sw0 = usage(peer.pids)
        t0 = time.monotonic()
        time.sleep(a.idle_seconds)
        cpu1, sw1 = usage(peer.pids)
        wall = time.monotonic() - t0
        return {"seconds": wall, "processes": len(peer.pids), "cpu_pct": 100 * (cpu1 - cpu0) / wall,
                "wakeups_per_s": (sw1 - sw0) / wall}
    finally:
        peer.stop()


def measure_rate(a, kind, rate):
    """One fresh peer, one load step of --duration seconds at `rate` (0: the generator's top speed)."""
    peer = start_peer(a, kind)
    try:
        time.sleep(a.settle)
        before = peer.counters()
        udp0 = udp_socket_stats(peer.port)
        cpu0, sw0 = usage(peer.pids)
        roles0 = thread_roles(peer.pids)
        sent = run_load(a, peer.port, rate, a.duration)
        drained(peer)
        cpu1, sw1 = usage(peer.pids)
        roles1 = thread_roles(peer.pids)
        udp1 = udp_socket_stats(peer.port)
        after = peer.counters()
        # A few packets may still be on their way through the peer's own queues.
        for _ in range(10):
            if after["accepted"] - before["accepted"] >= sent["sent_packets"]:
                break
            time.sleep(0.2)
            after = peer.counters()
        rcvbuf = receive_buffer_bytes(peer.port)
    finally:
        peer.stop()

    def delta(key):
        return None if after[key] is None else after[key] - before[key]

    accepted = delta("accepted")
    kernel = None if udp0["drops"] is None or udp1["drops"] is None else udp1["drops"] - udp0["drops"]
    seconds = sent["duration_s"]
    cpu = cpu1 - cpu0
    lossless = (accepted == sent["sent_packets"] and not kernel and not delta("own_kernel_drops")
                and not delta("queue_drops") and sent["errors"] == 0)
    return {"offered_rate": rate, "achieved_rate": sent["achieved_rate"], "sent": sent["sent_packets"],
            "accepted": accepted, "kernel_drops": kernel, "own_kernel_drops": delta("own_kernel_drops"),
            "queue_drops": delta("queue_drops"), "clock_steps": delta("clock_steps"),
            "send_errors": sent["errors"], "lossless": lossless,
            "cpu_us_per_packet": 1e6 * cpu / accepted if accepted else None, "cpu_pct": 100 * cpu / seconds,
            "ctx_switches_per_s": (sw1 - sw0) / seconds, "seconds": seconds, "receive_buffer_bytes": rcvbuf,
            **role_figures(roles0, roles1, accepted)}


def saturated_rate(step):
    """What a lossy step says about the peer's ceiling: the packets it accepted per second of load
    (its throughput while saturated, plus the receive buffer it drained afterwards), a little
    above which no rate can be lossless for a step of this length."""
    return 1.05 * step["accepted"] / step["seconds"] if step["accepted"] else None


def lossless_search(a, kind, known):
    """Highest lossless offered rate: unpaced first (unless a fixed rate was already lossy), then
    geometric bisection between the highest lossless rate and the lowest of the lossy rates and
    the lossy steps' saturated throughput (`known`: this repetition's fixed-rate steps)."""
    steps = []
    good = [s for s in known if s["lossless"]]
    best = max(good, key=lambda s: s["offered_rate"], default=None)
    lo = max(best["offered_rate"] if best else 0.0, a.min_rate)
    lossy = [s for s in known if not s["lossless"]]
    if not lossy:
        top = measure_rate(a, kind, 0)
        steps.append(top)
        if top["lossless"]:
            return {"rate": top["achieved_rate"], "generator_bound": True, "at": top, "steps": steps}
        lossy = [dict(top, offered_rate=top["achieved_rate"])]
    hi = min(min(s["offered_rate"] for s in lossy), min(saturated_rate(s) or float("inf") for s in lossy))
    for _ in range(a.bisect_steps):
        if hi <= lo * 1.02:
            break
        rate = round((lo * hi) ** 0.5, -2)
        s = measure_rate(a, kind, rate)
        steps.append(s)
        if s["lossless"]:
            lo, best = rate, s
        else:
            hi = min(rate, saturated_rate(s) or rate)
    return {"rate": best["achieved_rate"] if best else 0.0, "generator_bound": False, "lossy_above": hi,
            "at": best, "steps": steps}


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(runs, keys):
    return {k: median_of([r[k] for r in runs]) for k in keys}


POINT_KEYS = ["achieved_rate", "cpu_us_per_packet", "cpu_pct", "ctx_switches_per_s", "sent", "accepted",
              "kernel_drops", "own_kernel_drops", "queue_drops", "clock_steps", "receive_us_per_packet", "shards_us_per_packet",
              "receive_kernel_share"]


def measure_peer_rep(a, kind):
    rep = {"idle": measure_idle(a, kind)}
    fixed = [measure_rate(a, kind, r) for r in a.rates]
    rep["rates"] = {str(r): s for r, s in zip(a.rates, fixed)}
    rep["lossless"] = lossless_search(a, kind, fixed)
    return rep


def probe_list(rep):
    return " ".join(f"{s['achieved_rate'] / 1000:.1f}k{'' if s['lossless'] else '(lossy)'}"
                    for s in [*rep["rates"].values(), *rep["lossless"]["steps"]])


def compact_rep(rep):
    """One repetition in a few lines: what baseline.json keeps of it."""
    def point(s):
        return {"achieved_rate": round(s["achieved_rate"]), "lossless": s["lossless"],
                "cpu_us_per_packet": None if s["cpu_us_per_packet"] is None else round(s["cpu_us_per_packet"], 2),
                "cpu_pct": round(s["cpu_pct"], 1), "ctx_switches_per_s": round(s["ctx_switches_per_s"])}
    return {"idle": {"cpu_pct": round(rep["idle"]["cpu_pct"], 2), "wakeups_per_s": round(rep["idle"]["wakeups_per_s"])},
            "rates": {r: point(s) for r, s in rep["rates"].items()},
            "lossless_rate": round(rep["lossless"]["rate"]), "probes": probe_list(rep)}


def peer_summary(reps):
    out = {"idle": summarize([r["idle"] for r in reps], ["cpu_pct", "wakeups_per_s"])}
    out["idle"]["processes"] = reps[0]["idle"]["processes"]
    for rate in reps[0]["rates"]:
        runs = [r["rates"][rate] for r in reps]
        out[rate] = summarize(runs, POINT_KEYS)
        out[rate]["lossless_runs"] = sum(1 for s in runs if s["lossless"])
        out[rate]["receive_buffer_bytes"] = runs[0]["receive_buffer_bytes"]
    found = [r["lossless"] for r in reps]
    out["lossless_rate"] = median_of([f["rate"] for f in found])
    out["lossless_rate_runs"] = [f["rate"] for f in found]
    out["lossless_generator_bound"] = any(f["generator_bound"] for f in found)
    # The figures at the lossless rate: from the repetition whose rate is the median.
    mid = sorted(found, key=lambda f: f["rate"])[len(found) // 2]
    out["at_lossless"] = {k: mid["at"][k] for k in POINT_KEYS} if mid["at"] else None
    return out


def offline_part(a):
    """The same packets offline: hepd_load --pcap-out writes what a paced run at each rate sends
    (the same cycles), `hepd pcap --cores 1` (pinned like the daemon) processes them; CPU per
    packet from the child's rusage. The live figure over this one is what the live path adds:
    the kernel's receive, the hand-over between threads, the wake-ups."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="hepd-offline.") as tmp:
        for rate in a.rates:
            path = os.path.join(tmp, f"load-{rate}.pcap")
            # At least 300,000 packets, so that hepd's start-up and report stay out of the figure.
            duration = max(a.duration, 300_000 / rate)
            gen = subprocess.run([os.path.join(a.build, "bench/hepd_load"), "--to", "127.0.0.1:9060", "--rate", str(rate),
                                  "--duration", str(duration), "--calls", str(a.calls), "--pcap-out", path],
                                 stdout=subprocess.PIPE, check=True)
            packets = json.loads(gen.stdout)["packets"]
            runs = []
            for _ in range(a.repetitions):
                proc = spawn([os.path.join(a.build, "daemon/app/hepd"), "pcap", "--cores", "1", "--log-level", "warn", path],
                             PEER_CPU, a.pin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, status, ru = os.wait4(proc.pid, 0)
                if status != 0:
                    raise RuntimeError(f"hepd pcap exited with status {status}")
                runs.append(1e6 * (ru.ru_utime + ru.ru_stime) / packets)
            out[str(rate)] = {"packets": packets, "cpu_us_per_packet": statistics.median(runs),
                              "runs": [round(r, 3) for r in runs]}
            print(f"offline {rate}/s corpus: {packets} packets, {statistics.median(runs):.2f} µs/packet "
                  f"(runs {', '.join(f'{r:.2f}' for r in runs)})", file=sys.stderr)
    return out


def steady_part(a):
    """hepd once its tables stopped growing: the fixed-rate steps above measure a fresh process,
    whose dialogs all still linger (32 s) and whose tables take their first pages. Here one hepd
    per rate takes the load for --steady-seconds (past the linger, so dialogs leave as fast as
    they come), then CPU per accepted packet is measured over the next --steady-window seconds
    (60: one snapshot of the tables falls in it, as one does every minute by default)."""
    out = {}
    for rate in a.rates:
        runs = []
        for _ in range(a.repetitions):
            peer = start_peer(a, "hepd")
            try:
                time.sleep(a.settle)
                load = start_load(a, peer.port, rate, a.steady_seconds + a.steady_window + 1)
                time.sleep(a.steady_seconds)
                snapshot0 = metric(peer.scrape(), "hepd_snapshot_last_success_timestamp_seconds")
                before, (cpu0, _) = peer.counters(), usage(peer.pids)
                time.sleep(a.steady_window)
                after, (cpu1, _) = peer.counters(), usage(peer.pids)
                text = peer.scrape()
                snapshot1 = metric(text, "hepd_snapshot_last_success_timestamp_seconds")
                sent = load_result(load)
                drained(peer)
                end = peer.counters()
            finally:
                peer.stop()
            accepted = after["accepted"] - before["accepted"]
            runs.append({"cpu_us_per_packet": 1e6 * (cpu1 - cpu0) / accepted if accepted else None,
                         "dialogs_in_table": metric(text, "hepd_dialogs_active"),
                         "evictions": metric(text, "hepd_table_evictions_total"),
                         # hepd's default snapshot interval is 1 min: a 60 s window holds one.
                         "snapshot_in_window": snapshot1 != snapshot0,
                         "lossless": end["accepted"] == sent["sent_packets"] and not end["own_kernel_drops"]
                         and not end["queue_drops"]})
        out[str(rate)] = {"cpu_us_per_packet": median_of([r["cpu_us_per_packet"] for r in runs]),
                          "runs": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
                                   for r in runs]}
        print(f"steady {rate}/s after {a.steady_seconds:.0f} s: {out[str(rate)]['cpu_us_per_packet']:.2f} µs/packet "
              f"(runs {', '.join(str(r['cpu_us_per_packet']) for r in out[str(rate)]['runs'])})", file=sys.stderr)
    return out


def rate_limit_part(a):
    limit = 20000
    h = Hepd(a.build, ["--hep-rate-limit", str(limit)], pin=a.pin)
    try:
        idle = statistics.median([(h.scrape(), h.last_scrape_seconds)[1] for _ in range(10)])
        proc = start_load(a, h.port, 2 * limit, a.duration)
        time.sleep(a.duration / 2)
        busy = statistics.median([(h.scrape(), h.last_scrape_seconds)[1] for _ in range(10)])
        sent = load_result(proc)
        drained(h)
        text = h.scrape()
    finally:
        h.stop()
    received = metric(text, "hepd_hep_received_packets_total")
    limited = metric(text, "hepd_hep_dropped_packets_total", reason="rate_limit")
    accepted = received - metric(text, "hepd_hep_dropped_packets_total")
    return {"limit": limit, "burst": limit, "offered_rate": 2 * limit, "sent": sent["sent_packets"],
            "received": received, "accepted": accepted, "dropped_rate_limit": limited,
            "accepted_per_second": accepted / a.duration, "expected_accepted_upper_bound": limit * a.duration + limit,
            "scrape_seconds_idle_median": idle, "scrape_seconds_under_load_median": busy}


def host_info():
    model = None
    try:
        model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), None)
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "machine": platform.machine(), "kernel": platform.release(),
            "load_average_at_start": os.getloadavg()[0]}


def git_commit():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], stdout=subprocess.PIPE, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               stdout=subprocess.PIPE, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(result, out=sys.stderr):
    peers = result["peers"]
    names = list(peers)
    rows = [("idle: CPU % of one core", lambda p: fmt(p["idle"]["cpu_pct"], ".2f")),
            ("idle: wake-ups/s (context switches)", lambda p: fmt(p["idle"]["wakeups_per_s"], ".0f")),
            ("idle: processes", lambda p: str(p["idle"]["processes"]))]
    for rate in result["method"]["rates"]:
        r = str(rate)
        rows += [(f"{rate}/s: achieved rate", lambda p, r=r: fmt(p[r]["achieved_rate"], ".0f")),
                 (f"{rate}/s: CPU µs per accepted packet", lambda p, r=r: fmt(p[r]["cpu_us_per_packet"], ".2f")),
                 (f"{rate}/s:   of which receive thread / shards",
                  lambda p, r=r: f"{fmt(p[r].get('receive_us_per_packet'), '.2f')} / {fmt(p[r].get('shards_us_per_packet'), '.2f')}"),
                 (f"{rate}/s:   receive thread's time in the kernel",
                  lambda p, r=r: fmt(None if p[r].get("receive_kernel_share") is None else 100 * p[r]["receive_kernel_share"], ".0f") + " %"),
                 (f"{rate}/s: CPU % of one core", lambda p, r=r: fmt(p[r]["cpu_pct"], ".1f")),
                 (f"{rate}/s: context switches/s", lambda p, r=r: fmt(p[r]["ctx_switches_per_s"], ".0f")),
                 (f"{rate}/s: accepted / sent", lambda p, r=r: f"{fmt(p[r]['accepted'], '.0f')} / {fmt(p[r]['sent'], '.0f')}"),
                 (f"{rate}/s: kernel drops (/proc/net/udp; own)",
                  lambda p, r=r: f"{fmt(p[r]['kernel_drops'], '.0f')}; {fmt(p[r]['own_kernel_drops'], '.0f')}"),
                 (f"{rate}/s: queue drops", lambda p, r=r: fmt(p[r]["queue_drops"], ".0f")),
                 (f"{rate}/s: sender clock steps", lambda p, r=r: fmt(p[r].get("clock_steps"), ".0f")),
                 (f"{rate}/s: lossless repetitions", lambda p, r=r: f"{p[r]['lossless_runs']}/{result['method']['repetitions']}")]
    rows += [("highest lossless rate, packets/s", lambda p: fmt(p["lossless_rate"], ".0f")
              + (" (generator-bound)" if p["lossless_generator_bound"] else "")),
             ("  per repetition", lambda p: ", ".join(fmt(v, ".0f") for v in p["lossless_rate_runs"])),
             ("  there: CPU µs per packet", lambda p: fmt((p["at_lossless"] or {}).get("cpu_us_per_packet"), ".2f")),
             ("  there: of which receive thread / shards",
              lambda p: f"{fmt((p['at_lossless'] or {}).get('receive_us_per_packet'), '.2f')} / "
                        f"{fmt((p['at_lossless'] or {}).get('shards_us_per_packet'), '.2f')}"),
             ("  there: CPU % of one core", lambda p: fmt((p["at_lossless"] or {}).get("cpu_pct"), ".1f")),
             ("  there: context switches/s", lambda p: fmt((p["at_lossless"] or {}).get("ctx_switches_per_s"), ".0f"))]
    offline = result.get("offline")
    if offline:
        for rate in result["method"]["rates"]:
            r = str(rate)
            rows += [(f"{rate}/s: offline, same packets: CPU µs/packet",
                      lambda p, r=r: fmt(offline[r]["cpu_us_per_packet"], ".2f") if p is peers.get("hepd") else "-"),
                     (f"{rate}/s: live / offline",
                      lambda p, r=r: fmt(p[r]["cpu_us_per_packet"] / offline[r]["cpu_us_per_packet"], ".1f")
                      if p is peers.get("hepd") and p[r]["cpu_us_per_packet"] else "-")]
    w0 = max(len(r[0]) for r in rows)
    cells = [[f(peers[n]) for n in names] for _, f in rows]
    w = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
    print(f"{'':<{w0}}  " + "  ".join(f"{n:>{w[i]}}" for i, n in enumerate(names)), file=out)
    for (label, _), c in zip(rows, cells):
        print(f"{label:<{w0}}  " + "  ".join(f"{v:>{w[i]}}" for i, v in enumerate(c)), file=out)
    rl = result.get("rate_limit")
    if rl:
        print(f"hepd --hep-rate-limit {rl['limit']} offered {rl['offered_rate']}/s: {rl['sent']} sent, "
              f"{rl['accepted']:.0f} accepted (at most {rl['expected_accepted_upper_bound']}), "
              f"{rl['dropped_rate_limit']:.0f} rate_limit drops; scrape {1000 * rl['scrape_seconds_idle_median']:.2f} ms "
              f"idle, {1000 * rl['scrape_seconds_under_load_median']:.2f} ms under load (medians of 10)", file=out)
    for rate, v in result.get("above_floor", {}).items():
        print(f"{rate}/s: hepd {v['hepd_us_per_packet']:.2f} µs a packet, the floor (receive and discard) "
              f"{v['floor_us_per_packet']:.2f}: hepd's own work {v['hepd_above_floor_us_per_packet']:.2f}", file=out)
    for k, v in result.get("acceptance", {}).items():
        print(f"{'met' if v else 'NOT met'}: {k}", file=out)
    print(result["method"]["note"], file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--duration", type=float, default=3, help="seconds of load per step")
    ap.add_argument("--idle-seconds", type=float, default=4)
    ap.add_argument("--settle", type=float, default=0.5, help="seconds between a peer's start and a measurement")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--rates", default="20000,100000")
    ap.add_argument("--bisect-steps", type=int, default=4)
    ap.add_argument("--min-rate", type=float, default=1000, help="lowest rate the bisection probes")
    ap.add_argument("--peers", default="hepd,sipcapture,floor")
    ap.add_argument("--calls", type=int, default=200,
                    help="hepd_load --calls: calls in the corpus it replays (fewer start faster; same mix)")
    ap.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin peer and generator with taskset")
    ap.add_argument("--nice", type=int, default=-10,
                    help="niceness of peer and generator (negative needs root; 0: unchanged)")
    ap.add_argument("--no-rate-limit", dest="rate_limit", action="store_false")
    ap.add_argument("--steady-seconds", type=float, default=0,
                    help="also measure hepd after this much load (0: not; past the 32 s linger: 40)")
    ap.add_argument("--steady-window", type=float, default=10,
                    help="seconds measured after --steady-seconds (60: with the snapshot hepd takes every minute)")
    ap.add_argument("--update-baseline", action="store_true")
    a = ap.parse_args()
    a.rates = [int(r) for r in a.rates.split(",") if r]
    global NICE
    NICE = a.nice if os.geteuid() == 0 or a.nice >= 0 else 0
    kinds = [k for k in a.peers.split(",") if k]
    if "sipcapture" in kinds and not shutil.which("kamailio"):
        sys.exit("kamailio is not installed (apt-get install kamailio), or leave it out: --peers hepd")
    if a.pin and (os.cpu_count() or 1) < 2:
        a.pin = False

    result = {"host": host_info(), "git_commit": git_commit(), "command": "bench/daemon_load.py " + " ".join(sys.argv[1:]),
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    result["method"] = {
        "repetitions": a.repetitions, "duration_s": a.duration, "idle_s": a.idle_seconds, "rates": a.rates,
        "bisect_steps": a.bisect_steps, "load": f"bench/hepd_load --calls {a.calls}: HEPv3 SIP and RTCP-JSON "
        "(7 SIP messages per call, 4 RTCP reports per call: 36 % RTCP), paced, sendmmsg on one UDP socket",
        "pinning": f"peer on CPU {PEER_CPU}, generator on CPU {LOAD_CPU} (taskset)" if a.pin else "none",
        "nice": NICE,
        "note": ("medians of the repetitions, peers alternating; a fresh peer process per measurement; CPU: "
                 "time on a CPU (ns, /proc/PID/task/*/schedstat) of every thread of the peer's processes; context switches voluntary+nonvoluntary "
                 "of every thread; the machine is shared, so figures are noisy"
                 + (f"; peer pinned to CPU {PEER_CPU}, generator to CPU {LOAD_CPU}" if a.pin else "")
                 + (f"; peer and generator each in a session of its own at nice {NICE} (autogroup)" if NICE else "")),
        "hepd": "--cores 1 (one shard), one UDP receive thread (default), no rate limit",
        "sipcapture": f"{kamailio_version()}, bench/kamailio-sipcapture.cfg: children=1, hep_capture_on, "
                      "SIP parsed in the script (the fields sip_capture() stores) and dropped; RTCP "
                      "appended to a db_flatstore file (sipcapture 5.6 stores RTCP without running a route)",
        "floor": "bench/udp_sink: one thread, blocking recvmmsg of 64 (MSG_WAITFORONE), 8 MiB SO_RCVBUF, "
                 "datagrams discarded"}

    reps = {k: [] for k in kinds}
    t0 = time.monotonic()
    for i in range(a.repetitions):
        for k in kinds:
            rep = measure_peer_rep(a, k)
            reps[k].append(rep)
            probes = probe_list(rep)
            print(f"repetition {i + 1}/{a.repetitions} {k}: idle {rep['idle']['cpu_pct']:.2f} % "
                  f"{rep['idle']['wakeups_per_s']:.0f} wake-ups/s; lossless {rep['lossless']['rate']:.0f}/s "
                  f"[{probes}] ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    result["peers"] = {k: peer_summary(v) for k, v in reps.items()}
    result["repetitions"] = {k: [compact_rep(r) for r in v] for k, v in reps.items()}

    acc = {}
    h = result["peers"].get("hepd")
    if h:
        acc["hepd idle CPU < 1 % of one core"] = h["idle"]["cpu_pct"] < 1
        acc["hepd idle wake-ups < 100/s"] = h["idle"]["wakeups_per_s"] < 100
        if "100000" in h and h["100000"]["cpu_us_per_packet"] is not None:
            acc["hepd <= 1 µs/packet at 100k/s"] = h["100000"]["cpu_us_per_packet"] <= 1
        if "20000" in h and h["20000"]["cpu_us_per_packet"] is not None:
            acc["hepd <= 2 µs/packet at 20k/s"] = h["20000"]["cpu_us_per_packet"] <= 2
    s = result["peers"].get("sipcapture")
    if h and s and s["lossless_rate"]:
        ratio = h["lossless_rate"] / s["lossless_rate"]
        result["lossless_ratio_hepd_to_sipcapture"] = ratio
        acc[f"hepd lossless rate >= 10x sipcapture's (ratio {ratio:.1f}"
            + (", hepd generator-bound" if h["lossless_generator_bound"] else "") + ")"] = ratio >= 10
    f = result["peers"].get("floor")
    if h and f:
        result["above_floor"] = {
            r: {"hepd_us_per_packet": h[r]["cpu_us_per_packet"], "floor_us_per_packet": f[r]["cpu_us_per_packet"],
                "hepd_above_floor_us_per_packet": h[r]["cpu_us_per_packet"] - f[r]["cpu_us_per_packet"]}
            for r in map(str, a.rates)
            if h[r]["cpu_us_per_packet"] is not None and f[r]["cpu_us_per_packet"] is not None}
    result["acceptance"] = acc

    if a.rate_limit and "hepd" in kinds:
        result["rate_limit"] = rate_limit_part(a)
    if "hepd" in kinds:
        result["offline"] = offline_part(a)
    if "hepd" in kinds and a.steady_seconds > 0:
        result["steady"] = steady_part(a)
        for rate, goal in (("20000", 2), ("100000", 1)):
            if rate in result["steady"] and result["steady"][rate]["cpu_us_per_packet"] is not None:
                acc[f"hepd <= {goal} µs/packet at {int(rate) // 1000}k/s, steady tables"] = \
                    result["steady"][rate]["cpu_us_per_packet"] <= goal

    print_table(result)
    print(json.dumps(result, indent=2))
    if a.update_baseline:
        baseline.store("daemon_load", result)


if __name__ == "__main__":
    main()
