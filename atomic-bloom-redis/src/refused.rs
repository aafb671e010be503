//! The keys whose creation this server refused when its primary or its
//! AOF sent it (a `RESERVE` it had no memory for), kept in the module's
//! memory so that a bare add that follows for such a key (RedisBloom's
//! streams create keys by `BF.ADD`) never makes a filter of defaults
//! there: the primary holds a filter under that key that this server
//! could not build.
//!
//! An entry is kept per database and key, and forgotten when this server
//! creates a filter under the key (a later `RESERVE` it could build), when
//! its database is flushed, and when a whole dataset is loaded (an RDB, a
//! full sync, an AOF: they begin with no refusals); `SWAPDB` swaps the
//! entries of its two databases. A module sees no command on a key the
//! server does not hold: after a `DEL` of a refused key the entry stays (a
//! later bare add for it is refused, never applied to defaults), and after
//! a `RENAME` (`MOVE`, `COPY`) of one in a RedisBloom stream the new name
//! is not known (its bare adds create). This module's own primaries never
//! depend on the set: their adds never create (`replica.rs`). Nor does it
//! outlive the process: a replica that restarts and resyncs in part
//! starts with none.
//!
//! Memory is bounded: past [`MOST_BYTES`] (a hostile stream of millions of
//! refused keys) no more entries are kept and every bare replayed add for
//! a missing key is refused, as if its key had been refused, until a flush
//! of every database or a full load empties the set.
//!
//! The server calls commands and event callbacks on its main thread: the
//! lock is never contended.

use std::collections::BTreeSet;
use std::sync::Mutex;

use redis_module::{raw, Context};

/// Most bytes the set may take: each key's bytes and [`ENTRY_BYTES`].
pub(crate) const MOST_BYTES: usize = 16 << 20;
/// What an entry costs besides its key's bytes (the tree's node share,
/// the boxed key's pointer and length, the database).
const ENTRY_BYTES: usize = 64;

/// The refused keys.
struct Refused {
    /// `(database, key)`.
    keys: BTreeSet<(i32, Box<[u8]>)>,
    /// What they take, counted as [`MOST_BYTES`] counts it.
    bytes: usize,
    /// The cap was met: a refused key may be missing from `keys`.
    full: bool,
}

static REFUSED: Mutex<Refused> = Mutex::new(Refused {
    keys: BTreeSet::new(),
    bytes: 0,
    full: false,
});

fn with<T>(work: impl FnOnce(&mut Refused) -> T) -> T {
    // A panic while it was held cannot leave the set half-changed in a
    // way that matters (at worst an entry more or less): go on with it.
    let mut refused = REFUSED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    work(&mut refused)
}

/// The database the command runs in.
fn db(ctx: &Context) -> i32 {
    // Safety: filled in at load; the context is the command's.
    unsafe { raw::RedisModule_GetSelectedDb.map_or(0, |selected| selected(ctx.ctx)) }
}

/// What recording a refusal did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// The key is kept.
    Kept,
    /// The set is full: the key is not kept, and every bare replayed add
    /// for a missing key is refused from now on.
    Full,
    /// The set was already full.
    WasFull,
}

/// Remembers that this server refused to create `key` for its primary or
/// its AOF.
pub(crate) fn record(ctx: &Context, key: &[u8]) -> Recorded {
    record_in(db(ctx), key)
}

/// The same, for a key of database `db` (a load's, which has no command).
pub(crate) fn record_in(db: i32, key: &[u8]) -> Recorded {
    with(|refused| {
        if refused.full {
            return Recorded::WasFull;
        }
        let cost = key.len().saturating_add(ENTRY_BYTES);
        if refused.bytes.saturating_add(cost) > MOST_BYTES {
            refused.full = true;
            return Recorded::Full;
        }
        if refused.keys.insert((db, key.into())) {
            refused.bytes += cost;
        }
        Recorded::Kept
    })
}

/// Whether a bare replayed add must not create `key`: its creation was
/// refused here, or the set is full.
pub(crate) fn blocks(ctx: &Context, key: &[u8]) -> bool {
    let db = db(ctx);
    with(|refused| refused.full || refused.keys.contains(&(db, Box::from(key))))
}

/// This server created a filter under `key`: its refusal, if any, is
/// forgotten.
pub(crate) fn created(ctx: &Context, key: &[u8]) {
    let db = db(ctx);
    with(|refused| {
        if refused.keys.is_empty() {
            return;
        }
        if refused.keys.remove(&(db, Box::from(key))) {
            refused.bytes -= key.len() + ENTRY_BYTES;
        }
    });
}

/// Forgets the refusals in `db` (`None`: in every database, and the set
/// is no longer full).
pub(crate) fn clear(db: Option<i32>) {
    with(|refused| match db {
        None => {
            refused.keys.clear();
            refused.bytes = 0;
            refused.full = false;
        }
        Some(db) => {
            let (gone, kept): (BTreeSet<_>, BTreeSet<_>) = std::mem::take(&mut refused.keys)
                .into_iter()
                .partition(|(at, _)| *at == db);
            refused.bytes -= gone
                .iter()
                .map(|(_, key)| key.len() + ENTRY_BYTES)
                .sum::<usize>();
            refused.keys = kept;
        }
    });
}

/// `SWAPDB first second`: their refusals change places.
pub(crate) fn swap(first: i32, second: i32) {
    with(|refused| {
        refused.keys = std::mem::take(&mut refused.keys)
            .into_iter()
            .map(|(db, key)| match db {
                db if db == first => (second, key),
                db if db == second => (first, key),
                db => (db, key),
            })
            .collect();
    });
}
