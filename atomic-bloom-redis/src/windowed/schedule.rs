//! When a time window's generation ends, a primary ends it then, not at
//! the next command on the key: a timer of the server's fires at the
//! earliest end due, rotates every key whose end has come and propagates
//! it as `WBF.ADVANCE`, so that a replica (which never rotates by its own
//! clock) forgets on time too, though nothing reads the key on the
//! primary: what a replica answers keeps the window's bound, give or take
//! the replication's delay.
//!
//! The schedule holds each time window's key (database and name) with the
//! end its filter had when it was last seen: noted where a key is made,
//! rotated, follows its primary, is loaded (an RDB file, a full sync,
//! `RESTORE`, an AOF's `WBF.LOADCHUNK`) or arrives by `COPY`, `RENAME` or
//! `MOVE` (keyspace events); dropped where a key goes (`unlink2`, a flush;
//! `SWAPDB` swaps). A key met at its end is checked against its filter
//! (its end moved, it went, or it counts items: the entry follows or
//! goes). A replica keeps its keys' entries and looks again a second
//! later: promoted, it rotates them on time from then on. A primary whose
//! writes are paused (a `FAILOVER` waiting for its replica) sends nothing
//! and looks again 100 ms later.
//!
//! Everything here runs on the server's main thread (commands, callbacks,
//! events, timers): the lock is never contended.

use std::collections::{BTreeSet, HashMap};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Mutex;

use redis_module::{raw, Context, ContextFlags, RedisString};

use super::data_type::WINDOWED_TYPE;
use super::{server_ms, WindowValue, Windowed};

/// How long a replica waits before it looks again at a key whose end has
/// come (its primary's `WBF.ADVANCE` moves the end; promoted, it rotates).
const REPLICA_RETRY_MS: i64 = 1000;

/// How long a primary whose writes are paused (`FAILOVER`, `CLIENT PAUSE
/// WRITE`: its replicas are catching up) waits before it rotates.
const PAUSED_RETRY_MS: i64 = 100;

/// A key: its database and name.
type Key = (i32, Box<[u8]>);

struct Schedule {
    /// Every entry, by when it is due.
    due: BTreeSet<(i64, i32, Box<[u8]>)>,
    /// When each key is due.
    at: HashMap<Key, i64>,
    /// The timer armed, and when it fires.
    timer: Option<(raw::RedisModuleTimerID, i64)>,
}

static SCHEDULE: Mutex<Option<Schedule>> = Mutex::new(None);

fn with<T>(work: impl FnOnce(&mut Schedule) -> T) -> T {
    // A panic while it was held cannot leave it worse than an entry more
    // or less, which the timer puts right: go on with it.
    let mut schedule = SCHEDULE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    work(schedule.get_or_insert_with(|| Schedule {
        due: BTreeSet::new(),
        at: HashMap::new(),
        timer: None,
    }))
}

impl Schedule {
    fn insert(&mut self, key: Key, due_ms: i64) {
        if let Some(old) = self.at.insert(key.clone(), due_ms) {
            self.due.remove(&(old, key.0, key.1.clone()));
        }
        self.due.insert((due_ms, key.0, key.1));
    }

    fn remove(&mut self, key: &Key) {
        if let Some(old) = self.at.remove(key) {
            self.due.remove(&(old, key.0, key.1.clone()));
        }
    }
}

/// The database a context has selected.
fn selected_db(ctx: *mut raw::RedisModuleCtx) -> i32 {
    // Safety: filled in at load; the context is the caller's.
    unsafe { raw::RedisModule_GetSelectedDb.map_or(0, |selected| selected(ctx)) }
}

/// Notes that `key` of database `db` is a time window whose generation
/// ends at `due_ms` (`server_ms`), and arms the timer for it if it is the
/// earliest.
pub(crate) fn note(ctx: *mut raw::RedisModuleCtx, db: i32, key: &[u8], due_ms: i64) {
    with(|schedule| schedule.insert((db, key.into()), due_ms));
    arm(ctx);
}

/// [`note`]s `windowed` under `key` (of the context's database) if it is
/// a time window.
pub(crate) fn note_window(ctx: &Context, key: &RedisString, windowed: &Windowed) {
    if windowed.is_timed() {
        note(
            ctx.ctx,
            selected_db(ctx.ctx),
            key.as_slice(),
            windowed.next_rotation_ms,
        );
    }
}

/// [`note`]s `key` (of the context's database) if it holds a time window.
pub(crate) fn note_key(ctx: &Context, key: &RedisString) {
    let opened = ctx.open_key(key);
    if let Ok(Some(WindowValue::Ready(windowed))) = opened.get_value::<WindowValue>(&WINDOWED_TYPE)
    {
        if windowed.is_timed() {
            note(
                ctx.ctx,
                selected_db(ctx.ctx),
                key.as_slice(),
                windowed.next_rotation_ms,
            );
        }
    }
}

/// A key went: its entry goes.
pub(crate) fn forget(db: i32, key: &[u8]) {
    with(|schedule| schedule.remove(&(db, key.into())));
}

/// Database `db` was flushed (`None`: every database).
pub(crate) fn flushed(db: Option<i32>) {
    with(|schedule| {
        let gone: Vec<Key> = schedule
            .at
            .keys()
            .filter(|(at, _)| db.is_none_or(|db| *at == db))
            .cloned()
            .collect();
        for key in &gone {
            schedule.remove(key);
        }
    });
}

/// `SWAPDB first second`: their entries change places.
pub(crate) fn swapped(first: i32, second: i32) {
    with(|schedule| {
        let entries: Vec<(Key, i64)> = schedule.at.drain().collect();
        schedule.due.clear();
        for ((db, key), due_ms) in entries {
            let db = match db {
                db if db == first => second,
                db if db == second => first,
                db => db,
            };
            schedule.insert((db, key), due_ms);
        }
    });
}

/// Arms the timer for the earliest entry, unless it is armed for then or
/// sooner.
fn arm(ctx: *mut raw::RedisModuleCtx) {
    let now = server_ms();
    with(|schedule| {
        let Some(&(earliest, _, _)) = schedule.due.first() else {
            return;
        };
        if schedule.timer.is_some_and(|(_, fires)| fires <= earliest) {
            return;
        }
        // Safety: filled in at load (Redis 7.0 and Valkey have timers);
        // the context is the caller's; a timer that has fired or was
        // stopped is refused harmlessly.
        unsafe {
            if let Some((id, _)) = schedule.timer.take() {
                raw::RedisModule_StopTimer.unwrap()(ctx, id, std::ptr::null_mut());
            }
            let wait = earliest.saturating_sub(now).max(0);
            let id = raw::RedisModule_CreateTimer.unwrap()(
                ctx,
                wait as raw::mstime_t,
                Some(fire),
                std::ptr::null_mut(),
            );
            schedule.timer = Some((id, now.saturating_add(wait)));
        }
    });
}

/// Performs the rotations of `windowed` (under `key`) due at `now` by the
/// primary's clock and propagates them as `WBF.ADVANCE key epoch
/// left_ms`; true if any was due.
pub(crate) fn catch_up(
    ctx: &Context,
    key: &RedisString,
    windowed: &mut Windowed,
    now: i64,
) -> bool {
    if !windowed.rotate_due(now) {
        return false;
    }
    let epoch = windowed.filter.epoch().to_string();
    let left = windowed.left_ms(now).to_string();
    ctx.replicate(
        "WBF.ADVANCE",
        &[key.as_slice(), epoch.as_bytes(), left.as_bytes()][..],
    );
    true
}

/// The timer: every key whose end has come is rotated (a primary) or
/// looked at again later (a replica, a loading server), and the timer is
/// armed for the next.
extern "C" fn fire(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    let now = server_ms();
    let context = Context::new(ctx);
    let following = ContextFlags::SLAVE | ContextFlags::LOADING | ContextFlags::ASYNC_LOADING;
    let primary = !context.get_flags().intersects(following);
    // Safety: filled in at load (Redis 6 on); it takes nothing.
    let paused =
        unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|paused| paused() != 0) };
    let due: Vec<(i64, i32, Box<[u8]>)> = with(|schedule| {
        schedule.timer = None;
        let due: Vec<_> = schedule
            .due
            .iter()
            .take_while(|(at, _, _)| *at <= now)
            .cloned()
            .collect();
        for (_, db, key) in &due {
            schedule.remove(&(*db, key.clone()));
        }
        due
    });
    let selected = selected_db(ctx);
    for (_, db, key) in due {
        // Safety: filled in at load; the timer's context; a database that
        // is not there is refused.
        if unsafe { raw::RedisModule_SelectDb.unwrap()(ctx, db) } != raw::REDISMODULE_OK as c_int {
            continue;
        }
        let name = context.create_string(&*key);
        let opened = context.open_key_writable(&name);
        let Ok(Some(WindowValue::Ready(windowed))) =
            opened.get_value::<WindowValue>(&WINDOWED_TYPE)
        else {
            continue;
        };
        if !windowed.is_timed() {
            continue;
        }
        let next = if primary && !paused {
            catch_up(&context, &name, windowed, now);
            windowed.next_rotation_ms
        } else if primary {
            windowed.next_rotation_ms.max(now + PAUSED_RETRY_MS)
        } else {
            windowed.next_rotation_ms.max(now + REPLICA_RETRY_MS)
        };
        with(|schedule| schedule.insert((db, key), next));
    }
    // Safety: as above.
    unsafe { raw::RedisModule_SelectDb.unwrap()(ctx, selected) };
    arm(ctx);
}

/// Keyspace events that bring a value to a key by a command the module
/// does not run: `COPY`, `RENAME`, `MOVE`.
unsafe extern "C" fn on_keyspace(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    // Safety: the server passes its event's name, a C string.
    let event = unsafe { std::ffi::CStr::from_ptr(event) }.to_bytes();
    if matches!(event, b"copy_to" | b"rename_to" | b"move_to") {
        let context = Context::new(ctx);
        let key = RedisString::new(std::ptr::NonNull::new(ctx), key);
        note_key(&context, &key);
        // The server's string, not this module's: not freed here.
        std::mem::forget(key);
    }
    raw::REDISMODULE_OK as c_int
}

/// Subscribes to the keyspace events above.
///
/// # Errors
///
/// A line for the server's log when the server refuses.
pub(crate) fn subscribe(ctx: &Context) -> Result<(), String> {
    // Safety: filled in at load; called during load with the module's
    // context.
    let subscribed = unsafe {
        raw::RedisModule_SubscribeToKeyspaceEvents.ok_or("the server has no keyspace events")?(
            ctx.ctx,
            raw::REDISMODULE_NOTIFY_GENERIC,
            Some(on_keyspace),
        )
    };
    if subscribed != raw::REDISMODULE_OK as c_int {
        return Err("the server refused the keyspace events".to_string());
    }
    Ok(())
}
