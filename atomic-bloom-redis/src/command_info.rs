//! What the server knows about each `BF.*`, `WBF.*` and `CF.*` (the list in
//! `cuckoo/command_info.rs`) command beyond its handler:
//! arity, summary, complexity, key specs and arguments (`COMMAND INFO`,
//! `COMMAND DOCS`, key permissions of ACL users, cluster routing), and ACL
//! categories, as RedisBloom registers them: every `BF.*` command in
//! `@bloom`, every `CF.*` command in `@cuckoo`, each in `@read` or `@write`
//! (`@fast` where it applies).
//!
//! Command info needs `RedisModule_SetCommandInfo` (Redis 7.0, Valkey);
//! module ACL categories need `RedisModule_AddACLCategory` and
//! `RedisModule_SetCommandACLCategories` (Valkey, Redis 7.2): on a server
//! without them the module loads without categories and says so in the
//! log.

use std::ffi::{c_int, CString};
use std::ptr;

use redis_module::{raw, Context};

/// The kind of an argument, as `COMMAND DOCS` shows it.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Text,
    Integer,
    Double,
    Key,
    Token,
    Block,
    OneOf,
}

impl Kind {
    fn raw(self) -> raw::RedisModuleCommandArgType {
        match self {
            Kind::Text => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            Kind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            Kind::Double => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
            Kind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
            Kind::Token => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            Kind::Block => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
            Kind::OneOf => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
        }
    }
}

/// One argument of a command.
pub(crate) struct Arg {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) token: Option<&'static str>,
    pub(crate) optional: bool,
    pub(crate) multiple: bool,
    pub(crate) sub: &'static [Arg],
}

pub(crate) const fn arg(name: &'static str, kind: Kind) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        optional: false,
        multiple: false,
        sub: &[],
    }
}

pub(crate) const KEY: Arg = arg("key", Kind::Key);
pub(crate) const ITEM: Arg = arg("item", Kind::Text);
pub(crate) const ITEMS: Arg = Arg {
    multiple: true,
    ..arg("item", Kind::Text)
};

/// `[TOKEN value]`.
pub(crate) const fn option(name: &'static str, token: &'static str, value: &'static [Arg]) -> Arg {
    Arg {
        token: Some(token),
        optional: true,
        sub: value,
        ..arg(name, Kind::Block)
    }
}

/// `[TOKEN]`.
pub(crate) const fn flag(name: &'static str, token: &'static str) -> Arg {
    Arg {
        token: Some(token),
        optional: true,
        ..arg(name, Kind::Token)
    }
}

/// What one command is.
pub(crate) struct Command {
    pub(crate) name: &'static str,
    pub(crate) summary: &'static str,
    pub(crate) complexity: &'static str,
    pub(crate) since: &'static str,
    pub(crate) signature: Signature,
}

/// How a command is called: its arity, its one key's spec flags, its ACL
/// categories beside `bloom` and its arguments.
pub(crate) struct Signature {
    arity: c_int,
    key_flags: u32,
    categories: &'static str,
    args: &'static [Arg],
}

pub(crate) const fn signature(
    arity: c_int,
    key_flags: u32,
    categories: &'static str,
    args: &'static [Arg],
) -> Signature {
    Signature {
        arity,
        key_flags,
        categories,
        args,
    }
}

pub(crate) const READ: u32 = raw::REDISMODULE_CMD_KEY_RO;
pub(crate) const READ_ACCESS: u32 = raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS;
pub(crate) const WRITE_INSERT: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT;
pub(crate) const WRITE_UPDATE: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE;

// The item commands, alike in `BF.*` and `WBF.*`.
/// `ADD key item`: the filter made if need be.
const ADD: Signature = signature(3, WRITE_INSERT, "write", &[KEY, ITEM]);
/// `MADD key item [item ...]`: the filter made if need be.
const MADD: Signature = signature(-3, WRITE_INSERT, "write", &[KEY, ITEMS]);
/// `EXISTS key item`.
const EXISTS: Signature = signature(3, READ_ACCESS, "read", &[KEY, ITEM]);
/// `MEXISTS key item [item ...]`.
const MEXISTS: Signature = signature(-3, READ_ACCESS, "read", &[KEY, ITEMS]);

const COMMANDS: [Command; 18] = [
    Command {
        name: "bf.reserve",
        summary: "Creates a new Bloom Filter",
        complexity: "O(1)",
        since: "1.0.0",
        signature: signature(-4, WRITE_INSERT, "write fast", &[
            KEY,
            arg("error_rate", Kind::Double),
            arg("capacity", Kind::Integer),
            option("expansion", "EXPANSION", &[arg("expansion", Kind::Integer)]),
            flag("nonscaling", "NONSCALING"),
        ]),
    },
    Command {
        name: "bf.add",
        summary: "Adds an item to a Bloom Filter",
        complexity: "O(k), where k is the number of hash functions used by the last sub-filter",
        since: "1.0.0",
        signature: ADD,
    },
    Command {
        name: "bf.madd",
        summary: "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist",
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        since: "1.0.0",
        signature: MADD,
    },
    Command {
        name: "bf.insert",
        summary: "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist",
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        since: "1.0.0",
        signature: signature(-4, WRITE_INSERT, "write", &[
            KEY,
            option("capacity", "CAPACITY", &[arg("capacity", Kind::Integer)]),
            option("error", "ERROR", &[arg("error", Kind::Double)]),
            option("expansion", "EXPANSION", &[arg("expansion", Kind::Integer)]),
            flag("nocreate", "NOCREATE"),
            flag("nonscaling", "NONSCALING"),
            Arg {
                token: Some("ITEMS"),
                ..arg("items", Kind::Token)
            },
            ITEMS,
        ]),
    },
    Command {
        name: "bf.exists",
        summary: "Checks whether an item exists in a Bloom Filter",
        complexity: "O(k), where k is the number of hash functions used by the last sub-filter",
        since: "1.0.0",
        signature: EXISTS,
    },
    Command {
        name: "bf.mexists",
        summary: "Checks whether one or more items exist in a Bloom Filter",
        complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
        since: "1.0.0",
        signature: MEXISTS,
    },
    Command {
        name: "bf.info",
        summary: "Returns information about a Bloom Filter",
        complexity: "O(1)",
        since: "1.0.0",
        signature: signature(-2, READ, "read fast", &[
            KEY,
            Arg {
                optional: true,
                sub: &[
                    flag("capacity", "CAPACITY"),
                    flag("size", "SIZE"),
                    flag("filters", "FILTERS"),
                    flag("items", "ITEMS"),
                    flag("expansion", "EXPANSION"),
                ],
                ..arg("single_value", Kind::OneOf)
            },
        ]),
    },
    Command {
        name: "bf.card",
        summary: "Returns the cardinality of a Bloom filter",
        complexity: "O(1)",
        since: "2.4.4",
        signature: signature(2, READ, "read fast", &[KEY]),
    },
    Command {
        name: "bf.scandump",
        summary: "Begins an incremental save of the bloom filter",
        complexity: "O(n), where n is the capacity",
        since: "1.0.0",
        signature: signature(3, READ_ACCESS, "read", &[KEY, arg("iterator", Kind::Integer)]),
    },
    Command {
        name: "bf.loadchunk",
        summary: "Restores a filter previously saved using SCANDUMP",
        complexity: "O(n), where n is the capacity",
        since: "1.0.0",
        signature: signature(4, WRITE_UPDATE, "write", &[KEY, arg("iterator", Kind::Integer), arg("data", Kind::Text)]),
    },
    Command {
        name: "wbf.reserve",
        summary: "Creates a windowed Bloom filter, which remembers the last window items \
                  (or every item added in the last TIME seconds) and forgets older ones",
        complexity: "O(1)",
        since: "1.0.0",
        signature: signature(-4, WRITE_INSERT, "write fast", &[
            KEY,
            arg("error_rate", Kind::Double),
            arg("window", Kind::Integer),
            option("time", "TIME", &[arg("seconds", Kind::Integer)]),
            option(
                "generations",
                "GENERATIONS",
                &[arg("generations", Kind::Integer)],
            ),
            option("seed", "SEED", &[arg("seed", Kind::Integer)]),
        ]),
    },
    Command {
        name: "wbf.add",
        summary: "Adds an item to a windowed Bloom filter, creating it if it does not exist",
        complexity: "O(k), where k is the number of hash functions",
        since: "1.0.0",
        signature: ADD,
    },
    Command {
        name: "wbf.madd",
        summary: "Adds one or more items to a windowed Bloom filter, creating it if it does \
                  not exist",
        complexity: "O(k * n), where k is the number of hash functions and n the number of items",
        since: "1.0.0",
        signature: MADD,
    },
    Command {
        name: "wbf.exists",
        summary: "Checks whether an item was added to a windowed Bloom filter within its window",
        complexity: "O(k), where k is the number of hash functions",
        since: "1.0.0",
        signature: EXISTS,
    },
    Command {
        name: "wbf.mexists",
        summary: "Checks whether one or more items were added to a windowed Bloom filter \
                  within its window",
        complexity: "O(k * n), where k is the number of hash functions and n the number of items",
        since: "1.0.0",
        signature: MEXISTS,
    },
    Command {
        name: "wbf.info",
        summary: "Returns information about a windowed Bloom filter",
        complexity: "O(1)",
        since: "1.0.0",
        signature: signature(2, READ, "read", &[KEY]),
    },
    Command {
        name: "wbf.advance",
        summary: "Applies a primary's rotations of a time window (sent by a primary to its \
                  replicas and the AOF only)",
        complexity: "O(m), where m is the size of the generations cleared",
        since: "1.0.0",
        signature: signature(4, WRITE_UPDATE, "write", &[
            KEY,
            arg("epoch", Kind::Integer),
            arg("left_ms", Kind::Integer),
        ]),
    },
    Command {
        name: "wbf.loadchunk",
        summary: "Restores a windowed Bloom filter a chunk at a time (an AOF rewrite's)",
        complexity: "O(c), where c is the size of the chunk",
        since: "1.0.0",
        signature: signature(4, WRITE_UPDATE, "write", &[KEY, arg("offset", Kind::Integer), arg("data", Kind::Text)]),
    },
];

/// C strings and argument arrays that must outlive one
/// `RedisModule_SetCommandInfo` call (the server copies what it keeps).
#[derive(Default)]
struct Arena {
    strings: Vec<CString>,
    arrays: Vec<Vec<raw::RedisModuleCommandArg>>,
}

impl Arena {
    fn text(&mut self, text: &str) -> *const std::ffi::c_char {
        let string = CString::new(text).expect("command info has no NUL");
        let pointer = string.as_ptr();
        self.strings.push(string);
        pointer
    }

    /// A zero-terminated array of `args`.
    fn args(&mut self, args: &[Arg]) -> *mut raw::RedisModuleCommandArg {
        let mut array: Vec<raw::RedisModuleCommandArg> = args
            .iter()
            .map(|arg| {
                let mut flags = 0;
                if arg.optional {
                    flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
                }
                if arg.multiple {
                    flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
                }
                raw::RedisModuleCommandArg {
                    name: self.text(arg.name),
                    type_: arg.kind.raw(),
                    key_spec_index: if matches!(arg.kind, Kind::Key) { 0 } else { -1 },
                    token: arg.token.map_or(ptr::null(), |token| self.text(token)),
                    summary: ptr::null(),
                    since: ptr::null(),
                    flags: flags as c_int,
                    deprecated_since: ptr::null(),
                    subargs: if arg.sub.is_empty() {
                        ptr::null_mut()
                    } else {
                        self.args(arg.sub)
                    },
                    display_text: ptr::null(),
                }
            })
            .collect();
        // Safety: an all-zero argument (null pointers, zero numbers) is the
        // terminator the server looks for.
        array.push(unsafe { std::mem::zeroed() });
        let pointer = array.as_mut_ptr();
        self.arrays.push(array);
        pointer
    }
}

/// The version of the info structs this module fills in.
static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

/// Gives every command (already created) its info and ACL categories.
///
/// # Errors
///
/// A line for the log when the server refuses a command's info.
pub(crate) fn register(ctx: &Context, cuckoo_commands: &[Command]) -> Result<(), String> {
    // Safety (each read of a function pointer): filled in at load and
    // never changed.
    let (get_command, set_info) =
        unsafe { (raw::RedisModule_GetCommand, raw::RedisModule_SetCommandInfo) };
    let (add_category, set_categories) = unsafe {
        (
            raw::RedisModule_AddACLCategory,
            raw::RedisModule_SetCommandACLCategories,
        )
    };
    let add = |category: &str| {
        let category = CString::new(category).expect("no NUL");
        // Safety: during load, with the module's context.
        add_category.is_some_and(|add| {
            let status = unsafe { add(ctx.ctx, category.as_ptr()) };
            status == raw::REDISMODULE_OK as c_int
        })
    };
    // RedisBloom's categories: `bloom` for BF.* (and WBF.* here), `cuckoo`
    // for CF.*.
    let with_bloom = add("bloom");
    let with_cuckoo = add("cuckoo");
    if set_categories.is_none() {
        ctx.log_notice(
            "atomic-bloom: this server has no module ACL categories (Redis 7.2 or Valkey have \
             them): BF.* and CF.* commands are in no category, so grant them by name",
        );
    }
    let Some(get_command) = get_command else {
        return Err("the server cannot look up commands".into());
    };
    let lists = [
        (&COMMANDS[..], with_bloom.then_some("bloom")),
        (cuckoo_commands, with_cuckoo.then_some("cuckoo")),
    ];
    for (command, module_category) in lists
        .iter()
        .flat_map(|(list, category)| list.iter().map(move |command| (command, *category)))
    {
        let name = CString::new(command.name).expect("no NUL");
        // Safety: during load; the command was created by this module.
        let handle = unsafe { get_command(ctx.ctx, name.as_ptr()) };
        if handle.is_null() {
            return Err(format!("{} was not created", command.name));
        }
        if let Some(set_categories) = set_categories {
            let categories = match module_category {
                Some(category) => format!("{} {category}", command.signature.categories),
                None => command.signature.categories.to_string(),
            };
            let categories = CString::new(categories).expect("no NUL");
            // Safety: a command handle of this module, during load.
            if unsafe { set_categories(handle, categories.as_ptr()) }
                != raw::REDISMODULE_OK as c_int
            {
                return Err(format!(
                    "the server refused ACL categories for {}",
                    command.name
                ));
            }
        }
        if let Some(set_info) = set_info {
            let mut arena = Arena::default();
            // Safety: the all-zero spec is the terminator the server looks
            // for; the first is filled in field by field.
            let mut key_specs: [raw::RedisModuleCommandKeySpec; 2] = unsafe { std::mem::zeroed() };
            key_specs[0].flags = u64::from(command.signature.key_flags);
            key_specs[0].begin_search_type =
                raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
            key_specs[0].bs.index.pos = 1;
            key_specs[0].find_keys_type =
                raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            key_specs[0].fk.range.lastkey = 0;
            key_specs[0].fk.range.keystep = 1;
            key_specs[0].fk.range.limit = 0;
            let info = raw::RedisModuleCommandInfo {
                version: &INFO_VERSION,
                summary: arena.text(command.summary),
                complexity: arena.text(command.complexity),
                since: arena.text(command.since),
                history: ptr::null_mut(),
                tips: ptr::null(),
                arity: command.signature.arity,
                key_specs: key_specs.as_mut_ptr(),
                args: arena.args(command.signature.args),
            };
            // Safety: every pointer in `info` lives in `arena` or on this
            // stack frame until the call returns; the server copies them.
            if unsafe { set_info(handle, &info) } != raw::REDISMODULE_OK as c_int {
                return Err(format!(
                    "the server refused the command info of {}",
                    command.name
                ));
            }
        }
    }
    Ok(())
}
