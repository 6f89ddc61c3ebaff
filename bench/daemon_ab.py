#!/usr/bin/env python3
"""Two hepd builds under the same live load, in turn: CPU per accepted packet, paired.

  bench/daemon_ab.py --build build --vs-build /path/to/other/build [--rate 20000] [--pairs 10]

On this shared VM a daemon_load.py run moves by a fifth from one hour to the next, more than a
change of a few per cent in the packet path. Here the two builds take turns (A B, B A, ...), each
measurement a fresh daemon fed --duration seconds of bench/hepd_load at --rate (the generator of
--build), measured as daemon_load.py measures (its measure_rate: CPU of every thread from
/proc/PID/task/*/schedstat over accepted packets, pinned, at nice -10). Prints each pair, the
medians of A and B (all threads, receive thread, shards) and the median of the pairs' ratios A/B.
"""
import argparse
import os
import statistics
import sys

import daemon_load  # bench/daemon_load.py


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(daemon_load.ROOT, "build"), help="A: its daemon/app/hepd")
    ap.add_argument("--vs-build", required=True, help="B: another build directory (its daemon/app/hepd)")
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--settle", type=float, default=0.5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--no-pin", dest="pin", action="store_false")
    ap.add_argument("--nice", type=int, default=-10)
    a = ap.parse_args()
    daemon_load.NICE = a.nice if os.geteuid() == 0 or a.nice >= 0 else 0
    b = argparse.Namespace(**vars(a))
    b.hepd_build = a.vs_build  # B's daemon; the generator stays --build's for both
    figures = {"A": [], "B": []}
    ratios = []
    for i in range(a.pairs):
        order = [("A", a), ("B", b)] if i % 2 == 0 else [("B", b), ("A", a)]
        got = {}
        for name, args in order:
            step = daemon_load.measure_rate(args, "hepd", a.rate)
            if not step["lossless"]:
                print(f"pair {i}: {name} lost packets", file=sys.stderr)
            got[name] = step
            figures[name].append(step)
        ratios.append(got["A"]["cpu_us_per_packet"] / got["B"]["cpu_us_per_packet"])
        print(f"pair {i}: A {got['A']['cpu_us_per_packet']:.3f} B {got['B']['cpu_us_per_packet']:.3f} µs/packet",
              file=sys.stderr)

    def median(name, key):
        return statistics.median(s[key] for s in figures[name] if s[key] is not None)

    for name, build in (("A", a.build), ("B", a.vs_build)):
        print(f"{name} ({build}): {median(name, 'cpu_us_per_packet'):.3f} µs/packet "
              f"(receive thread {median(name, 'receive_us_per_packet'):.3f}, "
              f"shards {median(name, 'shards_us_per_packet'):.3f})")
    print(f"A/B, median of {len(ratios)} pairs: {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
