//! One client shared by many threads (blocking) or tasks (tokio), against
//! a real server: their calls share rounds on the client's wire (at most
//! half as many round trips as calls; before, each call made its own), and
//! each caller gets its own answers.

use test_servers as common;

use std::collections::HashMap;
use std::sync::Arc;

use atomic_bloom_fleet::{FleetConfig, FleetSeen};
use common::{Kind, Server};

/// Callers, calls each, items a call.
const CALLERS: usize = 16;
const CALLS: usize = 40;
const ITEMS: usize = 25;

fn config(url: &str, prefix: &str) -> FleetConfig {
    FleetConfig::new(url)
        .prefix(prefix)
        .shards(4)
        .capacity(100_000, 1e-7)
        .local_filter(100_000, 1e-8)
}

/// The items of `caller`'s call `call`: half its own, half shared with
/// another caller (callers 0 and 1 share theirs, 2 and 3 ...).
fn items(caller: usize, call: usize) -> Vec<String> {
    (0..ITEMS)
        .map(|at| match at % 2 {
            0 => format!("own-{caller}-{call}-{at}"),
            _ => format!("shared-{}-{call}-{at}", caller / 2),
        })
        .collect()
}

/// Checks what `callers` were answered: each item new exactly once over
/// all of them, and an item only one caller offered new to it.
fn check(answers: &[Vec<(Vec<String>, Vec<bool>)>]) {
    let mut new: HashMap<&str, usize> = HashMap::new();
    for (caller, calls) in answers.iter().enumerate() {
        for (items, flags) in calls {
            assert_eq!(items.len(), flags.len(), "caller {caller}");
            for (item, &flag) in items.iter().zip(flags) {
                *new.entry(item.as_str()).or_default() += usize::from(flag);
                if item.starts_with("own-") {
                    assert!(flag, "caller {caller}: its own {item} answered seen");
                }
            }
        }
    }
    let wrong: Vec<_> = new.iter().filter(|(_, &count)| count != 1).collect();
    assert!(wrong.is_empty(), "answered new other than once: {wrong:?}");
}

#[test]
fn threads_of_one_seen_set_share_rounds_and_get_their_own_answers() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let seen = FleetSeen::connect(&config(&server.url(), "threads")).expect("connects");
    let answers: Vec<Vec<(Vec<String>, Vec<bool>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CALLERS)
            .map(|caller| {
                let seen = &seen;
                scope.spawn(move || {
                    (0..CALLS)
                        .map(|call| {
                            let items = items(caller, call);
                            let flags = seen.insert_many(&items).expect("answered");
                            (items, flags)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    check(&answers);
    let stats = seen.stats();
    eprintln!(
        "{} calls in {} round trips",
        CALLERS * CALLS,
        stats.round_trips
    );
    assert!(
        stats.round_trips as usize * 2 <= CALLERS * CALLS,
        "calls did not share rounds: {stats:?}"
    );
}

#[test]
fn tasks_of_one_seen_set_share_rounds_and_get_their_own_answers() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let config = config(&server.url(), "tasks");
    let (answers, stats) = runtime.block_on(async {
        let seen = Arc::new(
            atomic_bloom_fleet::tokio::FleetSeen::connect(&config)
                .await
                .expect("connects"),
        );
        let mut tasks = tokio::task::JoinSet::new();
        for caller in 0..CALLERS * 4 {
            let seen = Arc::clone(&seen);
            tasks.spawn(async move {
                let mut answered = Vec::new();
                for call in 0..CALLS / 4 {
                    let items = items(caller, call);
                    let flags = seen.insert_many(&items).await.expect("answered");
                    answered.push((items, flags));
                }
                (caller, answered)
            });
        }
        let mut answers = vec![Vec::new(); CALLERS * 4];
        while let Some(done) = tasks.join_next().await {
            let (caller, answered) = done.expect("no task panicked");
            answers[caller] = answered;
        }
        (answers, seen.stats())
    });
    check(&answers);
    eprintln!(
        "{} calls in {} round trips",
        CALLERS * CALLS,
        stats.round_trips
    );
    assert!(
        stats.round_trips as usize * 2 <= CALLERS * CALLS,
        "calls did not share rounds: {stats:?}"
    );
}
