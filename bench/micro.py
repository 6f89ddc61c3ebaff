#!/usr/bin/env python3
"""Runs every Google Benchmark executable in BUILD/bench (median of --repetitions) and records
the medians, with the command and host, under "micro" in bench/baseline.json.

  bench/micro.py --build build [--repetitions 5] [--update-baseline]
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--update-baseline", action="store_true")
    a = ap.parse_args()
    results = {}
    for exe in sorted(glob.glob(os.path.join(a.build, "bench", "*_bench"))):
        # The JSON goes to a file: some benchmarks log to stdout while they set up.
        out_path = os.path.join("/tmp", os.path.basename(exe) + ".json")
        cmd = [exe, f"--benchmark_repetitions={a.repetitions}", "--benchmark_report_aggregates_only=true",
               f"--benchmark_out={out_path}", "--benchmark_out_format=json"]
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        doc = json.load(open(out_path))
        for b in doc["benchmarks"]:
            if b.get("aggregate_name") != "median":
                continue
            name = b["run_name"]
            entry = {"cpu_ns": round(b["cpu_time"], 2), "real_ns": round(b["real_time"], 2)}
            for k in ("items_per_second", "bytes_per_second"):
                if k in b:
                    entry[k] = b[k]
            for k, v in b.items():  # user counters (e.g. bytes per stream)
                if k not in entry and isinstance(v, (int, float)) and k not in (
                        "cpu_time", "real_time", "iterations", "repetitions", "repetition_index", "threads",
                        "family_index", "per_family_instance_index"):
                    entry[k] = v
            results.setdefault(os.path.basename(exe), {})[name] = entry
    report = {"command": "bench/micro.py --repetitions %d" % a.repetitions,
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "host": {"machine": platform.machine(), "cores": os.cpu_count(),
                       "load_average_at_start": os.getloadavg()[0]},
              "note": "median of repetitions; cpu_ns is per iteration as each benchmark defines it",
              "results": results}
    print(json.dumps(report, indent=2))
    if a.update_baseline:
        path = os.path.join(HERE, "baseline.json")
        baseline = json.load(open(path)) if os.path.exists(path) else {}
        baseline["micro"] = report
        with open(path, "w") as f:
            json.dump(baseline, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
