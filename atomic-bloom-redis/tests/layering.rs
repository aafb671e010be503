//! The module's files use one another in one direction only: the order
//! `src/lib.rs` gives ("each file using only those after it"), so no two
//! files need each other. A file that names an earlier one (`crate::x`)
//! fails here with the two names.

use std::path::Path;

/// The module's top-level files and folders, in the order `lib.rs` states.
const ORDER: [&str; 22] = [
    "fuzzing",
    "wbf_commands",
    "cf_entry",
    "cf_dump",
    "cf_commands",
    "commands",
    "bf_reads",
    "events",
    "args",
    "cuckoo",
    "command_info",
    "config",
    "replica",
    "windowed",
    "redisbloom",
    "data_type",
    "value",
    "dump",
    "record",
    "filter",
    "alloc",
    "refused",
];

/// The `crate::name` paths a file's code (not its comments) uses.
fn uses(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let name: String = rest[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            found.push(name);
            rest = &rest[at + 7..];
        }
        // `use crate::{a, b::c}` names several.
        if let Some(at) = code.find("crate::{") {
            let inside = &code[at + 8..];
            for part in inside.split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                found.push(name);
            }
        }
    }
    found
}

fn sources(entry: &str) -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let file = src.join(format!("{entry}.rs"));
    if file.exists() {
        return vec![(entry.to_string(), std::fs::read_to_string(file).unwrap())];
    }
    std::fs::read_dir(src.join(entry))
        .unwrap()
        .map(|file| {
            let path = file.unwrap().path();
            (
                format!("{entry}/{}", path.file_name().unwrap().to_string_lossy()),
                std::fs::read_to_string(path).unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_file_uses_only_the_files_after_it() {
    for (position, entry) in ORDER.iter().enumerate() {
        for (file, source) in sources(entry) {
            for used in uses(&source) {
                let Some(at) = ORDER.iter().position(|name| *name == used) else {
                    continue;
                };
                assert!(
                    at > position || used == *entry,
                    "{file} uses crate::{used}, which comes before it in lib.rs's order: \
                     a circle waiting to happen"
                );
            }
        }
    }
}

#[test]
fn the_order_names_every_file_of_the_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if name == "lib" {
            continue;
        }
        assert!(
            ORDER.contains(&name.as_str()),
            "src/{name} is not in the layering order: add it to lib.rs's list and here"
        );
    }
}
