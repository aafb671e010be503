#!/usr/bin/env python3
"""Checks that the library's declared MSRV (`rust-version` in Cargo.toml)
is at least the `rust-version` of every crate it depends on with every
feature but `redis` (which needs Rust 1.88, as its docs say), normal dependencies only (dev-dependencies are not a
user's concern). Language and std usage newer than the MSRV is checked by
clippy's `incompatible_msrv` lint in the clippy step."""
import json
import subprocess
import sys

# What users build on; a target newer than the MSRV (wasm32-wasip2, whose
# getrandom backend needs 1.87) is left out.
PLATFORMS = ["x86_64-unknown-linux-gnu", "aarch64-apple-darwin", "x86_64-pc-windows-msvc"]

# Every feature but `redis`, whose own dependency (the `redis` crate) needs
# Rust 1.88: Cargo.toml says so beside the feature. Its edge is skipped below
# too, since the workspace's resolve enables it for the module's tests.
FEATURES = "rayon,serde"


def version(text):
    return tuple(int(part) for part in text.split(".")) + (0,) * (3 - len(text.split(".")))


too_new = set()
for platform in PLATFORMS:
    meta = json.loads(subprocess.check_output(
        ["cargo", "metadata", "--format-version", "1", "--features", FEATURES,
         "--filter-platform", platform]))
    packages = {p["id"]: p for p in meta["packages"]}
    root = next(p for p in meta["packages"] if p["name"] == "atomic-bloom")
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    msrv = version(root["rust_version"])
    seen, todo = set(), [root["id"]]
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            # Normal and build dependencies; not dev ones, and not loom,
            # which only the crate's own loom cfg pulls in.
            kinds = [k for k in dep["dep_kinds"]
                     if k["kind"] != "dev" and "atomic_bloom_loom" not in (k["target"] or "")]
            if not kinds or dep["pkg"] in seen:
                continue
            # The `redis` feature's dependency (see FEATURES): the module's
            # tests turn the feature on, and the workspace's resolve shows it.
            if node["id"] == root["id"] and dep["name"] == "redis":
                continue
            seen.add(dep["pkg"])
            todo.append(dep["pkg"])
            package = packages[dep["pkg"]]
            if package.get("rust_version") and version(package["rust_version"]) > msrv:
                too_new.add(f'{package["name"]} {package["version"]} needs '
                            f'{package["rust_version"]} ({platform})')
    print(f"{platform}: atomic-bloom declares rust-version {root['rust_version']}; "
          f"{len(seen)} dependencies checked")
if too_new:
    print("dependencies newer than the declared MSRV:\n  " + "\n  ".join(sorted(too_new)))
    sys.exit(1)
