//! The `CF.*` commands' info (registered by `command_info.rs`, in ACL
//! category `cuckoo` beside `@read` / `@write`): RedisBloom's summaries,
//! complexities, arities and arguments, with key specs that say what each
//! command does to its key (RedisBloom marks `CF.SCANDUMP` read-write,
//! which would keep a user with read-only key permissions from dumping).

use crate::command_info::{
    arg, flag, option, signature, Arg, Command, Kind, ITEM, ITEMS, KEY, READ, READ_ACCESS,
    WRITE_INSERT, WRITE_UPDATE,
};

/// `key item`, one item.
const ONE: &[Arg] = &[KEY, ITEM];

/// The options of `CF.INSERT` / `CF.INSERTNX`.
const INSERT_ARGS: &[Arg] = &[
    KEY,
    option("capacity", "CAPACITY", &[arg("capacity", Kind::Integer)]),
    flag("nocreate", "NOCREATE"),
    Arg {
        token: Some("ITEMS"),
        ..arg("items", Kind::Token)
    },
    ITEMS,
];

const ADD_COMPLEXITY: &str =
    "O(k + i), where k is the number of sub-filters and i is maxIterations";
const INSERT_COMPLEXITY: &str =
    "O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is \
     maxIterations";

pub(crate) const COMMANDS: [Command; 14] = [
    Command {
        name: "cf.reserve",
        summary: "Creates a new Cuckoo Filter",
        complexity: "O(1)",
        since: "1.0.0",
        signature: signature(
            -3,
            WRITE_INSERT,
            "write fast",
            &[
                KEY,
                arg("capacity", Kind::Integer),
                option(
                    "bucketsize",
                    "BUCKETSIZE",
                    &[arg("bucketsize", Kind::Integer)],
                ),
                option(
                    "maxiterations",
                    "MAXITERATIONS",
                    &[arg("maxiterations", Kind::Integer)],
                ),
                option("expansion", "EXPANSION", &[arg("expansion", Kind::Integer)]),
            ],
        ),
    },
    Command {
        name: "cf.add",
        summary: "Adds an item to a Cuckoo Filter",
        complexity: ADD_COMPLEXITY,
        since: "1.0.0",
        signature: signature(3, WRITE_INSERT, "write", ONE),
    },
    Command {
        name: "cf.addnx",
        summary: "Adds an item to a Cuckoo Filter if the item did not exist previously.",
        complexity: ADD_COMPLEXITY,
        since: "1.0.0",
        signature: signature(3, WRITE_INSERT, "write", ONE),
    },
    Command {
        name: "cf.insert",
        summary: "Adds one or more items to a Cuckoo Filter. A filter will be created if it does \
                  not exist",
        complexity: INSERT_COMPLEXITY,
        since: "1.0.0",
        signature: signature(-4, WRITE_INSERT, "write", INSERT_ARGS),
    },
    Command {
        name: "cf.insertnx",
        summary: "Adds one or more items to a Cuckoo Filter if the items did not exist \
                  previously. A filter will be created if it does not exist",
        complexity: INSERT_COMPLEXITY,
        since: "1.0.0",
        signature: signature(-4, WRITE_INSERT, "write", INSERT_ARGS),
    },
    Command {
        name: "cf.exists",
        summary: "Checks whether one or more items exist in a Cuckoo Filter",
        complexity: "O(k), where k is the number of sub-filters",
        since: "1.0.0",
        signature: signature(3, READ_ACCESS, "read", ONE),
    },
    Command {
        name: "cf.mexists",
        summary: "Checks whether one or more items exist in a Cuckoo Filter",
        complexity: "O(k * n), where k is the number of sub-filters and n is the number of items",
        since: "1.0.0",
        signature: signature(-3, READ_ACCESS, "read", &[KEY, ITEMS]),
    },
    Command {
        name: "cf.count",
        summary: "Return the number of times an item might be in a Cuckoo Filter",
        complexity: "O(k), where k is the number of sub-filters",
        since: "1.0.0",
        signature: signature(3, READ_ACCESS, "read", ONE),
    },
    Command {
        name: "cf.del",
        summary: "Deletes an item from a Cuckoo Filter",
        complexity: "O(k), where k is the number of sub-filters",
        since: "1.0.0",
        signature: signature(3, WRITE_UPDATE, "write", ONE),
    },
    Command {
        name: "cf.compact",
        summary: "Moves items of newer sub-filters into older ones and frees the sub-filters \
                  emptied",
        complexity: "O(n), where n is the number of slots",
        since: "1.0.0",
        signature: signature(2, WRITE_UPDATE, "write", &[KEY]),
    },
    Command {
        name: "cf.scandump",
        summary: "Begins an incremental save of the bloom filter",
        complexity: "O(n), where n is the capacity",
        since: "1.0.0",
        signature: signature(
            3,
            READ_ACCESS,
            "read",
            &[KEY, arg("iterator", Kind::Integer)],
        ),
    },
    Command {
        name: "cf.loadchunk",
        summary: "Restores a filter previously saved using SCANDUMP",
        complexity: "O(n), where n is the capacity",
        since: "1.0.0",
        signature: signature(
            4,
            WRITE_UPDATE,
            "write",
            &[KEY, arg("iterator", Kind::Integer), arg("data", Kind::Text)],
        ),
    },
    Command {
        name: "cf.info",
        summary: "Returns information about a Cuckoo Filter",
        complexity: "O(1)",
        since: "1.0.0",
        signature: signature(2, READ, "read fast", &[KEY]),
    },
    Command {
        name: "cf.debug",
        summary: "Returns internal debug information about a Cuckoo Filter",
        complexity: "O(1)",
        since: "1.0.0",
        signature: signature(2, READ, "read", &[KEY]),
    },
];
