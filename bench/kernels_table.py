#!/usr/bin/env python3
"""Turns kernels_bench JSON output (with repetitions) into the markdown tables
of bench/results/kernels.md: median GB/s of weights per type, shape, columns
and threads, and the memory read rate.

  ./build/bench/kernels_bench --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true \
      --benchmark_out=kernels.json --benchmark_out_format=json
  python3 bench/kernels_table.py kernels.json
"""
import json
import re
import sys
from collections import defaultdict


def main(path):
    data = json.load(open(path))
    medians = {}
    spread = {}
    for b in data["benchmarks"]:
        name = b.get("run_name", b["name"])
        agg = b.get("aggregate_name")
        gbs = b.get("bytes_per_second", 0.0) / 1e9
        if agg == "median":
            medians[name] = gbs
        elif agg == "stddev":
            spread[name] = gbs
        elif agg is None:  # a run without repetitions
            medians.setdefault(name, gbs)
    print("| memory read | GB/s |")
    print("|---|---:|")
    for name, v in medians.items():
        if name.startswith("MemoryRead"):
            print(f"| {name.replace('/real_time', '')} | {v:.1f} |")
    print()
    table = defaultdict(dict)
    columns = set()
    for name, v in medians.items():
        m = re.match(r"MatMul/([^/]+)/([^/]+)/n:(\d+)/threads:(\d+)", name)
        if not m:
            continue
        typ, shape, n, t = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        col = (shape, n, t)
        columns.add(col)
        table[typ][col] = v
    columns = sorted(columns, key=lambda c: (c[0] != "768x2048", c[0], c[1], c[2]))
    header = " | ".join(f"{s} n={n} t={t}" for s, n, t in columns)
    print(f"| type | {header} |")
    print("|---|" + "---:|" * len(columns))
    for typ, row in table.items():
        cells = " | ".join(f"{row[c]:.1f}" if c in row else "" for c in columns)
        print(f"| {typ} | {cells} |")


if __name__ == "__main__":
    main(sys.argv[1])
