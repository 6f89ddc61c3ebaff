#!/usr/bin/env python3
"""Draws the capacity figures as a picture for the README: throughput by shard count against
sipgrep's on the same corpus, and anonymous memory per concurrent call against the 1 KiB goal.
  bench/plot_capacity.py [--baseline bench/baseline.json] [--out bench/capacity.svg]
Reads the "capacity" entry that bench/capacity.py --update-baseline stored (its memory sweep, if
that run had none, from the entry's notes). Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def memory_sweep(entry):
    sweep = entry["result"].get("memory_sweep")
    if sweep:
        return sweep["points"], entry["measured_at"]
    earlier = entry.get("notes", {}).get("earlier_run_same_day", {})
    if "memory_sweep" in earlier:
        return earlier["memory_sweep"]["points"], earlier.get("measured_at", "?")
    return None, None


def draw(entry, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_capacity.py: matplotlib is missing (Debian: apt install python3-matplotlib)")
    result = entry["result"]
    packets = result["corpus"]["packets"]
    host = result["host"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))

    scaling = sorted((int(c), s["packets_per_second"] / 1e6) for c, s in result["scaling"].items())
    cores = [c for c, _ in scaling]
    rate = [r for _, r in scaling]
    left.plot(cores, rate, "o-", label="hepd pcap (dialogs, streams, MOS)")
    model = result.get("scaling_model")
    if model:
        proj = sorted((p["cores"], p["packets_per_second"] / 1e6) for p in model["projection"].values())
        left.plot([c for c, _ in proj], [r for _, r in proj], "s--", color="tab:orange", alpha=0.8,
                  label="model: shards share the decoding")
    left.plot(cores, [rate[0] * c for c in cores], ":", color="grey", label="linear from one shard")
    if model:
        cores = sorted(set(cores) | {n for n, _ in proj})
    for name, style in (("sipgrep", "--"), ("sngrep", "-.")):
        peer = result.get("peers", {}).get(name)
        if peer:
            peer_rate = packets / peer["median_wall_seconds"] / 1e6
            colour = "tab:red" if name == "sipgrep" else "tab:purple"
            left.axhline(peer_rate, linestyle=style, color=colour, label=f"{name} (one process)")
            if name == "sipgrep":  # issue 11's goal for one core
                left.plot([cores[0]], [10 * peer_rate], "*", color=colour, markersize=10,
                          label="goal for one shard: 10x sipgrep")
    left.set_xlabel("cores (measured: --cores shards on this VM)")
    left.set_ylabel("M packets/s")
    left.set_xticks(cores)
    left.set_ylim(bottom=0)
    left.set_title(f"{packets:,}-packet corpus, median wall time")
    left.legend(fontsize=8)

    points, when = memory_sweep(entry)
    if points:
        calls = sorted(int(k) for k, v in points.items() if v.get("anon_bytes_per_call"))
        per_call = [points[str(n)]["anon_bytes_per_call"] / 1024 for n in calls]
        right.plot(calls, per_call, "o-", label="hepd, anonymous RSS per concurrent call")
        right.axhline(1.0, linestyle="--", color="tab:green", label="goal: 1 KiB")
        right.set_xscale("log")
        right.set_xlabel("concurrent calls (each a dialog, two streams, a binding)")
        right.set_ylabel("KiB per call")
        right.set_ylim(bottom=0)
        right.set_title(f"memory sweep ({when[:10]})")
        right.legend(fontsize=8)
    else:
        right.set_axis_off()
    fig.suptitle(f"hepd capacity, {entry['measured_at'][:10]}: {host['cpu']}, {host['cores']} cores "
                 f"({host['machine']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default=os.path.join(ROOT, "bench", "baseline.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "capacity.svg"))
    a = ap.parse_args()
    with open(a.baseline) as f:
        draw(json.load(f)["capacity"], a.out)


if __name__ == "__main__":
    main()
