#!/usr/bin/env python3
"""Capacity benchmark for `hepd pcap` (issue 4): scaling over cores, a memory sweep, and peers
(sipgrep, sngrep) timed on the same corpus in the same run (sipgrep in turn with `hepd pcap
--cores 1`, its ratio the median of the pairs'). Prints a JSON document; with
--update-baseline it also writes the figures into bench/baseline.json.

  bench/capacity.py --build build [--cores 1,2,4,8] [--runs 5] [--replicates 3] [--sweep]
                    [--peers] [--update-baseline]

Method: every figure is the median of --runs timed runs after one discarded warm-up run; the
scaling series is repeated --replicates times and the LOWEST replicate (slowest median) is the
published figure. Wall time is measured around the whole process, start-up included. The
corpus lives in the page cache (the warm-up reads it), as for the peers. It is first dropped from
the cache, so that hepd's warm-up reads it cold, as a capture copied in from elsewhere is read:
hepd maps a capture with MADV_HUGEPAGE, and a cold read then fills the cache with 2 MiB folios
that every later run (of any program) finds. A capture just written by the generator sits in
small folios instead, and each of its 4 KiB pages costs a first-touch fault to every mapping.

The corpus is bench/gen/hepd_corpus with its defaults (5,000 calls, one media address pair and one
Call-ID per call); its truth (the generator's summary) is kept beside it and recorded. Every
scaling run's report is checked: its stream count and lost packets must equal the truth's and
the report must not depend on the shard count ("stream_check"; a mismatch is printed on stderr).

Scaling model ("scaling_model", with --cores including 1 and 2): from the CPU time of the 1-shard
runs and of each shard thread in the 2-shard runs (reported by `hepd pcap`), the part every shard
repeats (taking every block in input order, the frames every shard decodes) and the part that
splits, and a projection to 3, 4, 8 and 14 cores with its assumptions written down, for the Thor
run to be checked against.
Parallel ceiling ("parallel_ceiling", with --cores including 2): what an ideal split of hepd's
one-core work could reach on this machine. One `hepd pcap --cores 1` per CPU, each pinned to its
CPU, all at once (and each CPU alone): CPU i then does the work at 1/T_i jobs a second, so a
perfectly divisible job would take 1 / sum(1/T_i), and one split in N equal parts (shards by
hash) max(T_i) / N. A VM's vCPUs need not be equal nor steady (on the dev VM one of the two runs
the same work up to 40 % slower than the other, alone or not, and which one changes by the hour).
bench/plot_capacity.py draws the figures.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time

import baseline  # bench/baseline.py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(cmd, runs, env=None):
    """Median wall seconds of `runs` runs after one warm-up; also every run's stdout."""
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
    times = []
    outs = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False, env=env)
        times.append(time.perf_counter() - t0)
        outs.append(p.stdout)
    return statistics.median(times), times, outs


def paired(cmd_a, cmd_b, runs):
    """Wall seconds of `cmd_a` and `cmd_b` run in turn `runs` times (after one warm-up each): a
    drift of the shared machine's speed during the benchmark then moves both alike."""
    for cmd in (cmd_a, cmd_b):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    times = ([], [])
    for _ in range(runs):
        for cmd, out in zip((cmd_a, cmd_b), times):
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            out.append(time.perf_counter() - t0)
    return times


def corpus(build, path, args):
    """Writes the capture unless it is there with its truth (the generator's summary, kept beside
    it as PATH.truth.json: a capture left by an older generator without one is written again)."""
    truth = path + ".truth.json"
    if not (os.path.exists(path) and os.path.exists(truth)):
        subprocess.run([os.path.join(build, "bench", "gen", "hepd_corpus"), path, "--truth", truth] + args,
                       check=True, stdout=subprocess.DEVNULL)
    with open(truth) as f:
        return path, json.load(f)


def evict(path):
    """Drops the file's pages from the page cache (written back first), so the next read is cold."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def report_key(report):
    """The report without what may differ between runs and shard counts (timings, RSS, shards)."""
    return json.dumps({k: v for k, v in report.items() if k not in ("run", "shards")}, sort_keys=True)


def scaling_model(scaling, packets, project=(3, 4, 8, 14)):
    """Projects throughput to more cores from the CPU time of the 1-shard run (C1, all the work on
    one thread) and of each shard thread of the 2-shard runs (C2). The shards share the decoding
    (pcap::SplitReader: each frame decoded by one shard) and each takes every block in input
    order, keeping what it owns, so a shard's time is R + W / N: R, what every shard repeats, and
    W, the work that splits. From the two runs, W = 2 (C1 - C2) and R = 2 C2 - C1; N shards on N
    cores take R + W / N of wall time."""
    one_run = scaling.get("1")
    two = scaling.get("2")
    if not two or not one_run:
        return None
    # The one-shard run's work is all on its main thread (start-up included, about 12 ms here).
    c1 = statistics.median(x["reader_cpu_seconds"] for x in one_run["replicates"])
    c2 = statistics.median(statistics.mean(x["shard_cpu_seconds"]) for x in two["replicates"])
    w = max(2 * (c1 - c2), 0.0)
    r = max(2 * c2 - c1, 0.0)
    one = one_run.get("published_wall_seconds")
    out = {"one_shard_cpu_seconds": c1, "shard_cpu_seconds_at_2": c2,
           "repeated_per_shard_seconds": r, "split_seconds": w,
           "ceiling_packets_per_second": packets / r if r > 0 else None,
           "assumptions": [
               "each frame is decoded and routed by one shard (pcap::SplitReader), every shard takes every "
               "block's list for itself in input order, keeps the order of SIP and media across shards and "
               "decodes the frames off the plain UDP path (fragments, TCP) itself (R, repeated), and does "
               "the rest of the work only for the calls and media it owns (W, split): R + W = the "
               "one-shard CPU time, with what sharing costs (block lists, ordering) counted in R",
               "W does not grow with the number of shards beyond what 2 shards measure (the share of SDP "
               "bindings crossing shards grows from 1/2 to (N-1)/N; bindings are 1 per call, RTP is 93 % "
               "of packets) and hashing spreads the calls evenly",
               "N shards run on N cores of this machine's speed, no SMT, no memory-bandwidth limit (each "
               "byte of the capture is read by the shard that decodes it, the record lengths of a pcap "
               "file are walked once, handed from shard to shard), no waiting between shards; on the "
               "Thor, scale by the ratio of its one-core time to this one's",
               "start-up (about 15 ms here) is in the measured wall times, not in the projection",
               "the 2-shard CPU times are taken on this machine's CPUs as they are: where they are unequal "
               "(parallel_ceiling) the slower one inflates C2, and so R; the Thor's cores are alike",
           ],
           "projection": {}}
    for cores in project:
        wall = r + w / cores
        out["projection"][str(cores)] = {"shards": cores, "cores": cores, "wall_seconds": wall,
                                     "packets_per_second": packets / wall,
                                     "speedup_vs_1_core": (one / wall) if one else None}
    return out


def parallel_ceiling(cmd, runs):
    """Times `cmd` (a one-core run) pinned to each CPU alone, then on every CPU at once."""
    cpus = sorted(os.sched_getaffinity(0))
    alone = {c: [] for c in cpus}
    together = {c: [] for c in cpus}

    def run_on(cpu, out):
        t0 = time.perf_counter()
        subprocess.run(["taskset", "-c", str(cpu)] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        out.append(time.perf_counter() - t0)

    for _ in range(runs):
        for c in cpus:
            run_on(c, alone[c])
        threads = [threading.Thread(target=run_on, args=(c, together[c])) for c in cpus]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    # The reference is what an unpinned one-core run takes: on whichever CPU the scheduler picks.
    one = statistics.median(t for v in alone.values() for t in v)
    med_together = {str(c): statistics.median(v) for c, v in together.items()}
    ideal = 1.0 / sum(1.0 / v for v in med_together.values())
    even = max(med_together.values()) / len(cpus)
    return {"command": "taskset -c CPU " + " ".join(os.path.basename(x) if i == 0 else x for i, x in enumerate(cmd)),
            "cpus": len(cpus), "alone_median_seconds": {str(c): statistics.median(v) for c, v in alone.items()},
            "one_core_median_seconds": one, "together_median_seconds": med_together,
            "balanced_split_wall_seconds": ideal, "even_split_wall_seconds": even,
            "ceiling_speedup_balanced": one / ideal, "ceiling_speedup_even_split": one / even,
            "note": "one one-core run per CPU at once, against the median one-core run alone on any CPU: work "
                    "split in proportion to each CPU's speed would take 1/sum(1/T_i) (balanced), work split in "
                    "equal parts (shards by hash) max(T_i)/N (even split); no split of the work can beat these "
                    "on this machine"}


def host():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"machine": platform.machine(), "cpu": model, "cores": os.cpu_count(),
            "kernel": platform.release(), "load_average_at_start": os.getloadavg()[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cores", default="1,2,4,8")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--replicates", type=int, default=3)
    ap.add_argument("--sweep", action="store_true", help="memory sweep 500..100,000 concurrent calls")
    ap.add_argument("--peers", action="store_true", help="time sipgrep and sngrep on the same corpus")
    ap.add_argument("--workdir", default="/tmp/hepd-bench")
    ap.add_argument("--update-baseline", action="store_true")
    a = ap.parse_args()

    hepd = os.path.join(a.build, "daemon", "app", "hepd")
    os.makedirs(a.workdir, exist_ok=True)
    main_corpus, truth = corpus(a.build, os.path.join(a.workdir, "corpus-535k.pcap"), [])
    packets = truth["packets"]
    evict(main_corpus)  # the first warm-up (hepd, the first --cores) reads it cold
    result = {"host": host(), "corpus": {"path": main_corpus, "generator": "bench/gen/hepd_corpus (defaults)",
                                         "packets": packets, "sip": truth["sip_packets"], "rtp": truth["rtp_packets"],
                                         "calls": truth["calls"], "streams": truth["streams"],
                                         "rtp_lost": truth["rtp_lost"]}}

    # Scaling: median of runs, `replicates` times; publish the lowest replicate. Each run's report
    # is checked against the truth (streams, lost packets) and against the other shard counts.
    scaling = {}
    reports = {}
    check = {"truth_streams": truth["streams"], "truth_rtp_lost": truth["rtp_lost"], "by_cores": {}}
    for cores in [int(c) for c in a.cores.split(",")]:
        reps = []
        for _ in range(a.replicates):
            med, times, outs = timed([hepd, "pcap", main_corpus, "--cores", str(cores), "--json", "-"], a.runs)
            out = outs[-1]
            report = json.loads(out)
            run = report["run"]
            reps.append({"median_wall_seconds": med, "runs": times, "peak_rss_bytes": run["peak_rss_bytes"],
                         "rss_anon_bytes": run["rss_anon_bytes"],
                         # of the last run: the main thread (with one shard: all the work;
                         # with several it only waits), and each shard thread's
                         "reader_cpu_seconds": run["reader_cpu_seconds"],
                         "shard_cpu_seconds": run["shard_cpu_seconds"]})
            reports.setdefault(cores, set()).add(report_key(report))
            check["by_cores"][str(cores)] = {"streams": report["streams"]["started"],
                                             "lost_packets": report["streams"]["lost_packets"],
                                             "dialogs": report["dialogs"]["created"]}
        worst = max(reps, key=lambda r: r["median_wall_seconds"])
        scaling[str(cores)] = {"published_wall_seconds": worst["median_wall_seconds"],
                               "packets_per_second": packets / worst["median_wall_seconds"],
                               "replicates": reps}
    base = scaling[min(scaling, key=int)]["published_wall_seconds"]
    for c, s in scaling.items():
        s["speedup_vs_1"] = base / s["published_wall_seconds"]
    result["scaling"] = scaling
    model = scaling_model(scaling, packets)
    if model:
        result["scaling_model"] = model
    if "2" in scaling and len(os.sched_getaffinity(0)) >= 2 and shutil.which("taskset"):
        result["parallel_ceiling"] = parallel_ceiling([hepd, "pcap", main_corpus, "--cores", "1"], a.runs)
    keys = set().union(*reports.values())
    check["reports_identical_across_cores"] = len(keys) == 1
    check["streams_match_truth"] = all(c["streams"] == truth["streams"] and c["lost_packets"] == truth["rtp_lost"]
                                       for c in check["by_cores"].values())
    result["stream_check"] = check
    if not (check["reports_identical_across_cores"] and check["streams_match_truth"]):
        print("capacity.py: the reports disagree with the truth or with each other: " + json.dumps(check),
              file=sys.stderr)

    if a.peers:
        peers = {}
        one = scaling.get("1", {}).get("published_wall_seconds")
        if shutil.which("sipgrep"):
            # In turn with hepd on one core: the ratio is the median of the pairs' ratios (timed
            # one after the other, a change of the machine's speed between them moved it by half).
            hepd_times, times = paired([hepd, "pcap", main_corpus, "--cores", "1"], ["sipgrep", "-I", main_corpus, "-C"],
                                       a.runs)
            med = statistics.median(times)
            peers["sipgrep"] = {"median_wall_seconds": med, "runs": times, "hepd_runs_in_turn": hepd_times,
                                "hepd_1_core_speed_ratio": statistics.median(s / h for s, h in zip(times, hepd_times)),
                                "ratio_to_published_1_core": med / one if one else None,
                                "does": "greps SIP messages and groups them by Call-ID; no dialog state, no RTP"}
        if shutil.which("sngrep"):
            med, times, _ = timed(["sngrep", "-N", "-q", "-I", main_corpus], max(1, a.runs // 2))
            peers["sngrep"] = {"median_wall_seconds": med, "runs": times,
                               "hepd_1_core_speed_ratio": med / one if one else None,
                               "does": "SIP dialog list (call flow), RTP stream detection with -r; no MOS/jitter export"}
        result["peers"] = peers

    if a.sweep:
        sweep = {}
        for calls in [500, 5000, 20000, 50000, 100000]:
            path, _ = corpus(a.build, os.path.join(a.workdir, f"sweep-{calls}.pcap"),
                             ["--calls", str(calls), "--media-seconds", "0.2", "--interval-us", "5"])
            med, times, outs = timed([hepd, "pcap", path, "--cores", "1", "--json", "-"], 3)
            runs = [json.loads(o)["run"] for o in outs]
            run = runs[-1]
            # Transparent huge pages make the figure vary by up to one (2 MiB) a table between
            # runs: the median of the three.
            anon = [r["rss_anon_bytes"] for r in runs]
            sweep[str(calls)] = {"median_wall_seconds": med, "rss_anon_bytes": statistics.median(anon),
                                 "rss_anon_bytes_runs": anon,
                                 "peak_rss_bytes": run["peak_rss_bytes"],
                                 # where a call's memory goes: each table's bytes at the end of the input
                                 "table_bytes_per_call": {t: b / calls for t, b in run["table_bytes"].items()}}
        small = sweep["500"]["rss_anon_bytes"]
        for k, v in sweep.items():
            n = int(k)
            v["anon_bytes_per_call"] = (v["rss_anon_bytes"] - small) / (n - 500) if n > 500 else None
        result["memory_sweep"] = {"note": "all calls concurrent (5 us apart, >0.5 s each); anonymous RSS "
                                          "(tables and heap, not the mapped capture) at the end of the run, "
                                          "median of three runs",
                                  "points": sweep}

    print(json.dumps(result, indent=2))
    if a.update_baseline:
        baseline.store("capacity", {"command": "bench/capacity.py " + " ".join(sys.argv[1:]),
                                    "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                    "result": result})


if __name__ == "__main__":
    main()
