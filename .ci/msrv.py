#!/usr/bin/env python3
"""Checks that each published crate's declared MSRV (`rust-version` in its
Cargo.toml: the library's 1.85, the fleet client's 1.88, the `redis`
crate's minimum) is at least the `rust-version` of every crate it depends
on with every feature, normal dependencies only (dev-dependencies are not a
user's concern). Language and std usage newer than the MSRV is checked by
clippy's `incompatible_msrv` lint in the clippy step."""
import json
import subprocess
import sys

# What users build on; a target newer than the MSRV (wasm32-wasip2, whose
# getrandom backend needs 1.87) is left out.
PLATFORMS = ["x86_64-unknown-linux-gnu", "aarch64-apple-darwin", "x86_64-pc-windows-msvc"]

CRATES = ["atomic-bloom", "atomic-bloom-fleet"]


def version(text):
    return tuple(int(part) for part in text.split(".")) + (0,) * (3 - len(text.split(".")))


too_new = set()
for platform in PLATFORMS:
    meta = json.loads(subprocess.check_output(
        ["cargo", "metadata", "--format-version", "1", "--all-features",
         "--filter-platform", platform]))
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    for name in CRATES:
        root = next(p for p in meta["packages"] if p["name"] == name)
        msrv = version(root["rust_version"])
        seen, todo = set(), [root["id"]]
        while todo:
            node = nodes[todo.pop()]
            for dep in node["deps"]:
                # Normal and build dependencies; not dev ones, and not loom,
                # which only the crates' own loom cfg pulls in.
                kinds = [k for k in dep["dep_kinds"]
                         if k["kind"] != "dev" and k["target"] != "cfg(atomic_bloom_loom)"]
                if not kinds or dep["pkg"] in seen:
                    continue
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
                package = packages[dep["pkg"]]
                if package.get("rust_version") and version(package["rust_version"]) > msrv:
                    too_new.add(f'{name}: {package["name"]} {package["version"]} needs '
                                f'{package["rust_version"]} ({platform})')
        print(f"{platform}: {name} declares rust-version {root['rust_version']}; "
              f"{len(seen)} dependencies checked")
if too_new:
    print("dependencies newer than the declared MSRV:\n  " + "\n  ".join(sorted(too_new)))
    sys.exit(1)
