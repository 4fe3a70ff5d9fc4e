#!/usr/bin/env python3
"""Turns kernels_bench JSON output (with repetitions) into the markdown tables
of bench/results/kernels.md: median GB/s of weights per type, shape, columns
and threads, and the memory read rate.

  ./build/bench/kernels_bench --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true \
      --benchmark_out=pass1.json --benchmark_out_format=json
  python3 bench/kernels_table.py pass1.json [pass2.json ...]

With several passes, each cell is the best of the passes' medians: other
jobs on a shared machine only ever slow a pass down.
"""
import json
import re
import sys
from collections import defaultdict


def main(paths):
    medians = {}
    for path in paths:
        data = json.load(open(path))
        for b in data["benchmarks"]:
            name = b.get("run_name", b["name"])
            agg = b.get("aggregate_name")
            if agg not in ("median", None):
                continue
            gbs = b.get("bytes_per_second", 0.0) / 1e9
            medians[name] = max(medians.get(name, 0.0), gbs)
    print("| memory read | GB/s |")
    print("|---|---:|")
    for name, v in medians.items():
        if name.startswith("MemoryRead"):
            print(f"| {name.replace('/real_time', '')} | {v:.1f} |")
    print()
    table = defaultdict(dict)
    columns = set()
    for name, v in medians.items():
        m = re.match(r"MatMul(L3)?/([^/]+)/([^/]+)/n:(\d+)/threads:(\d+)", name)
        if not m:
            continue
        typ, shape, n, t = m.group(2), m.group(3), int(m.group(4)), int(m.group(5))
        if m.group(1):
            shape += " (L3)"
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
    main(sys.argv[1:])
