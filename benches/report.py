#!/usr/bin/env python3
"""Prints criterion's last results as a Markdown table of Mops/s.

Run after `cargo bench -p atomic-bloom-benches --bench bloom`:  python3 benches/report.py
Rows are subjects, columns are "group threads"; each cell is elements per
second from criterion's mean estimate, in millions.
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
cells = {}
columns = []
for bench in sorted(root.glob("**/new/benchmark.json")):
    meta = json.loads(bench.read_text())
    estimates = json.loads((bench.parent / "estimates.json").read_text())
    elements = meta.get("throughput", {}).get("Elements")
    if not elements:
        continue
    group, subject, threads = meta["group_id"], meta["function_id"], meta["value_str"]
    mops = elements / estimates["mean"]["point_estimate"] * 1e3
    column = f"{group} {threads}t"
    if column not in columns:
        columns.append(column)
    cells[(subject, column)] = mops

order = {"insert": 0, "contains": 1, "par_insert": 2}
columns.sort(key=lambda c: (c.split("/")[1].split()[0] != "1M", order.get(c.split("/")[0], 9), c))
subjects = sorted({s for s, _ in cells})
print("| subject | " + " | ".join(columns) + " |")
print("|---" * (len(columns) + 1) + "|")
for subject in subjects:
    row = [f"{cells[(subject, c)]:.1f}" if (subject, c) in cells else "" for c in columns]
    print(f"| {subject} | " + " | ".join(row) + " |")
