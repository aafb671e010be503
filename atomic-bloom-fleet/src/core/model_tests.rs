//! The core against a small model of the fleet's server (what each script
//! does to the filters, queues and leases), for what scripted replies
//! alone cannot check: where an answer ends up when a call is dropped at
//! one of its requests (a tokio future cancelled), and which writes reach
//! a node of a cluster while another node is cut off.

use redis::Value;
use std::collections::HashMap;
use std::time::Duration;

use super::call::{Call, Io, Pipeline, Received, Step};
use super::client::Client;
use super::frontier::{FrontierCore, Push};
use super::keys;
use super::model::{
    bulk, drive, drive_dropping, drive_faulty, frontier, seen_client, Faults, Model,
};
use super::tests::{commands, config, Fake};
use super::wire::Wire;
use crate::sync::Arc;

/// A seen-set call dropped at any of its requests (before or after its
/// pipelines ran) keeps the answers for the caller who offers the same
/// items again: each item is answered new once, by one of the two calls.
/// Before, a call of more batches than a pipeline carries acknowledgements
/// for sent the excess in rounds of its own after the answers were in; a
/// call dropped there left its answered batches to be sent again behind
/// their own acknowledgements (`UNLINK` of the stored answer), so they ran
/// afresh, found their items in the filter, and every item was answered
/// seen, none new (512 of 600 here).
#[test]
fn a_seen_set_call_dropped_at_any_request_keeps_its_answers() {
    // A batch per item: 600 acknowledgements, more than a pipeline carries.
    let config = config().batch_size(1);
    let items: Vec<String> = (0..600).map(|n| format!("item-{n}")).collect();
    let mut ended = 0;
    for drop_at in 0..6 {
        for ran in [false, true] {
            let mut fake = Fake::new();
            let mut model = Model::default();
            let (seen, mut wire) = seen_client(&config, &mut fake, &mut model);
            let call = super::seen::insert_many(&seen, &mut wire, &items);
            let first = drive_dropping(&mut fake, &mut model, call, drop_at, ran);
            let again = drive(
                &mut fake,
                &mut model,
                super::seen::insert_many(&seen, &mut wire, &items),
            )
            .expect("answered");
            let mut new = vec![0; items.len()];
            if let Some(first) = first {
                ended += 1;
                for (at, answer) in first.expect("answered").into_iter().enumerate() {
                    new[at] += usize::from(answer);
                }
            }
            for (at, answer) in again.into_iter().enumerate() {
                new[at] += usize::from(answer);
            }
            let wrong = new.iter().filter(|&&count| count != 1).count();
            assert_eq!(
                wrong,
                0,
                "dropped at request {drop_at} (ran: {ran}): {wrong} of {} items not answered new \
                 exactly once",
                items.len()
            );
        }
    }
    assert!(ended > 0, "some call ended before its drop");
}

/// An item offered twice in one call whose reply was lost (the call
/// dropped before its pipeline ran or after, or every reply lost until it
/// gave up) is answered new once when the caller offers the same items
/// again. Before, the book kept one answer per item: the repeat's `false`
/// overwrote the first occurrence's `true`, and the item was answered new
/// to no caller.
#[test]
fn a_repeated_item_whose_reply_was_lost_is_answered_new_once() {
    let config = config();
    let items = ["x", "y", "x"];
    let every_reply_lost = Faults {
        drop_before: 0,
        drop_after: 0,
        lose_after: 1000,
        cut: 0,
    };
    for lost in ["dropped before it ran", "dropped after it ran", "failed"] {
        let mut fake = Fake::new();
        let mut model = Model::default();
        let (seen, mut wire) = seen_client(&config, &mut fake, &mut model);
        let call = super::seen::insert_many(&seen, &mut wire, &items);
        let first = match lost {
            "failed" => {
                let mut rng = super::Rng::new(1);
                let failed = drive_faulty(&mut fake, &mut model, &mut rng, every_reply_lost, call);
                assert!(matches!(failed, Some(Err(_))), "{failed:?}");
                None
            }
            _ => drive_dropping(&mut fake, &mut model, call, 0, lost.contains("after")),
        };
        assert!(first.is_none(), "{lost}: {first:?}");
        let again = drive(
            &mut fake,
            &mut model,
            super::seen::insert_many(&seen, &mut wire, &items),
        );
        assert_eq!(again, Ok(vec![true, true, false]), "{lost}");
    }
}

/// A seen-set keeps the answers a failed call recovered (batches of an
/// earlier failed call, sent again) until a call returns them: one that
/// fails on other items, or is dropped, leaves them for the next. Before,
/// a call took them out of the book before sending its own batches and
/// dropped them with its error (or with itself): the item, already in the
/// local filter, was then answered seen to every caller, and new to none.
#[test]
fn a_failed_seen_set_call_keeps_the_answers_it_recovered() {
    // The second call fails (`None`), or is dropped at its request `n`.
    for second in [None, Some(0), Some(1), Some(2)] {
        let config = config();
        let mut fake = Fake::new();
        let mut model = Model::default();
        let (seen, mut wire) = seen_client(&config, &mut fake, &mut model);
        let on = |shard: usize, nth: usize| {
            (0..)
                .map(|n| format!("item-{n}"))
                .filter(|item| seen.client.shard_of(item) == shard)
                .nth(nth)
                .expect("an item")
        };
        let (a, b, c) = (on(0, 0), on(1, 0), on(1, 1));
        let refused = Some(seen.client.keys[1].seen.clone());
        let mut new: HashMap<String, usize> = HashMap::new();
        for (turn, items) in [vec![&a, &b], vec![&a, &c], vec![&a, &b, &c]]
            .into_iter()
            .enumerate()
        {
            let refuse = turn == 0 || (turn == 1 && second.is_none());
            model.refuse_filter = if refuse { refused.clone() } else { None };
            let call = super::seen::insert_many(&seen, &mut wire, &items);
            let drop_at = if turn == 1 { second } else { None };
            let answered = drive_dropping(
                &mut fake,
                &mut model,
                call,
                drop_at.unwrap_or(usize::MAX),
                true,
            );
            if let Some(Ok(answers)) = answered {
                for (item, answer) in items.iter().zip(answers) {
                    *new.entry(item.to_string()).or_default() += usize::from(answer);
                }
            }
        }
        for item in [&a, &b, &c] {
            assert_eq!(
                new.get(item),
                Some(&1),
                "second call {second:?}: {item}: {new:?}"
            );
        }
    }
}

/// Two nodes of a cluster: `127.0.0.1:8` owns the slot of the fleet's own
/// keys (settings, epoch, busy marks), `127.0.0.1:7` every other slot;
/// the fleet's node can be cut off (its pipelines lost unread).
struct Cluster {
    model: Model,
    fleet_slot: i64,
    fleet_cut: bool,
    /// Commands that ran on the shards' node.
    on_shards: Vec<Vec<String>>,
}

impl Cluster {
    fn new() -> Cluster {
        Cluster {
            model: Model::default(),
            fleet_slot: i64::from(keys::slot(&keys::fleet_keys("t").tag)),
            fleet_cut: false,
            on_shards: Vec::new(),
        }
    }

    fn answer(&mut self, pipeline: &Pipeline) -> Received {
        let fleet_node = pipeline.port == 8;
        if fleet_node && self.fleet_cut {
            return Received::failed("cut off");
        }
        let words = commands(&pipeline.bytes);
        let replies = (words.iter())
            .map(|command| match command[0].as_str() {
                "INFO" => bulk("# Cluster\r\ncluster_enabled:1\r\n"),
                "CLUSTER" => {
                    let node = |port| Value::Array(vec![bulk("127.0.0.1"), Value::Int(port)]);
                    let range = |low, high, port| {
                        Value::Array(vec![Value::Int(low), Value::Int(high), node(port)])
                    };
                    let slot = self.fleet_slot;
                    Value::Array(vec![
                        range(0, slot - 1, 7),
                        range(slot, slot, 8),
                        range(slot + 1, 16383, 7),
                    ])
                }
                _ => {
                    if !fleet_node {
                        self.on_shards.push(command.clone());
                    }
                    self.model.run(command)
                }
            })
            .collect();
        Received {
            replies,
            lost: None,
        }
    }

    fn drive<T>(&mut self, fake: &mut Fake, mut call: Call<'_, T>) -> T {
        loop {
            match call.step(fake.now) {
                Step::Done(value) => return value,
                Step::Io(Io::Sleep(until)) => {
                    fake.now = fake.now.max(until);
                    call.answer(Vec::new());
                }
                Step::Io(Io::Round(pipelines)) => {
                    let received = pipelines.iter().map(|p| self.answer(p)).collect();
                    call.answer(received);
                }
            }
        }
    }
}

/// Issue 37 item 3's rule, for a lease's end: a client ends a lease only
/// while its busy mark surely lives, so that a check of the fleet by
/// another process, which reads the shards at different instants, sees it
/// busy around the change (or its epoch move). Before, the pipeline that
/// marks the client busy again carried what waits to ride on a pipeline
/// in front of the mark, lease ends among them: with the node of the
/// fleet's keys cut off, the lease ended on the shard's node and the mark
/// never came, so a link that a batch retried past the mark's life had
/// queued on a shard read before it, and the lease's end on a shard read
/// after, summed to nothing, and the check answered "finished".
#[test]
fn a_lease_ends_only_under_a_busy_mark_that_lives() {
    let config = config();
    let mut fake = Fake::new();
    let mut cluster = Cluster::new();
    let (client, mut wire) = Client::new(&config, 7).expect("a valid config");
    let core = Arc::new(FrontierCore::new(client));
    cluster
        .drive(&mut fake, core.connect(&mut wire))
        .expect("connects");
    // A URL of a shard on the node that stays reachable.
    let fleet_slot = cluster.fleet_slot;
    let url = (0..)
        .map(|n| format!("https://example.com/{n}"))
        .find(|url| {
            let shard = core.client.shard_of(url);
            i64::from(keys::slot(&core.client.keys[shard].tag)) != fleet_slot
        })
        .expect("some URL lands on the shards' node");
    let Push::Slow(left) = core.push(url.clone(), fake.now) else {
        panic!("the first push marks the client busy");
    };
    assert_eq!(
        cluster.drive(&mut fake, core.push_slow(&mut wire, left)),
        Ok(true)
    );
    cluster
        .drive(&mut fake, core.flush(&mut wire))
        .expect("flushed");
    let page = (cluster.drive(&mut fake, core.pop(&mut wire)))
        .expect("popped")
        .expect("the URL");
    core.complete(page);
    // No heartbeat for longer than a lease, and the fleet's node cut off.
    fake.now += config.lease + Duration::from_secs(1);
    cluster.fleet_cut = true;
    let before = cluster.on_shards.len();
    let popped = cluster.drive(&mut fake, core.pop(&mut wire));
    assert!(popped.is_err(), "{popped:?}");
    let ended: Vec<&Vec<String>> = (cluster.on_shards[before..].iter())
        .filter(|command| command[0] == "HDEL" || command[0] == "ZREM")
        .collect();
    assert!(
        ended.is_empty(),
        "a lease ended with the client's busy mark lapsed: {ended:?}"
    );
    // The node back: the client marks itself busy, then ends the lease.
    cluster.fleet_cut = false;
    cluster
        .drive(&mut fake, core.flush(&mut wire))
        .expect("flushed");
    assert!(
        cluster.model.leases.is_empty(),
        "{:?}",
        cluster.model.leases
    );
}

/// A push dropped while it marks the client busy, or while it sends a
/// full shard's batches to make room, leaves its URL to the frontier: a
/// later call sends it, as every call leaves what it began. Before, the URL
/// was in neither the buffer nor the caller's hands: a crawler that timed
/// the push out and went on lost the link for good.
#[test]
fn a_push_dropped_at_any_request_loses_nothing() {
    // One item a shard: a batch that cannot go fills its shard.
    let config = config().batch_size(1).max_buffered(1);
    for full in [false, true] {
        for drop_at in 0..3 {
            for ran in [false, true] {
                let mut fake = Fake::new();
                let mut model = Model::default();
                let (core, mut wire) = frontier(&config, &mut fake, &mut model);
                let mut urls = (0..).map(|n| format!("https://example.com/{n}"));
                // The URL whose push is dropped, and the one the server
                // refused before it (when the shard is full).
                let (url, refused) = if full {
                    // The client marked busy, and a batch the server
                    // refuses for now holding the shard's room.
                    let first = urls.next().expect("a URL");
                    let shard = core.client.shard_of(&first);
                    let Push::Slow(left) = core.push(first.clone(), fake.now) else {
                        panic!("the first push marks the client busy");
                    };
                    model.refuse_offers = true;
                    let pushed = drive(&mut fake, &mut model, core.push_slow(&mut wire, left));
                    assert!(pushed.is_err(), "{pushed:?}");
                    model.refuse_offers = false;
                    let url = (urls.by_ref())
                        .find(|url| core.client.shard_of(url) == shard)
                        .expect("another URL of the shard");
                    (url, Some(first))
                } else {
                    (urls.next().expect("a URL"), None)
                };
                check_dropped_push(&core, &mut wire, (&mut fake, &mut model), url, drop_at, ran);
                if let Some(first) = refused {
                    assert!(model.queued(&first), "the refused batch went later");
                }
            }
        }
    }
}

/// A push dropped before it reaches the wire (a tokio future cancelled
/// while another call of the client holds the wire) keeps its URL: a later
/// call sends it, and a check of the fleet that runs meanwhile (the call
/// holding the wire) does not answer "finished" while the client holds it.
/// Before, the URL sat only in the dropped push: lost, and the check
/// answered "finished".
#[test]
fn a_push_dropped_before_it_reaches_the_wire_keeps_its_url() {
    let config = config();
    // The push dropped before the check, or during one of the check's
    // three rounds (two census and the count of the queues).
    for drop_at in [None, Some(0), Some(1), Some(2)] {
        let mut fake = Fake::new();
        let mut model = Model::default();
        let (core, mut wire) = frontier(&config, &mut fake, &mut model);
        let url = "https://example.com/waited".to_string();
        // Not marked busy yet: the push needs the wire.
        let Push::Slow(left) = core.push(url.clone(), fake.now) else {
            panic!("a push that waits for its mark goes through the wire");
        };
        let mut left = Some(left);
        if drop_at.is_none() {
            drop(left.take());
        }
        let mut check = core.is_finished(&mut wire);
        let mut round = 0;
        let finished = loop {
            let io = match check.step(fake.now) {
                Step::Done(finished) => break finished,
                Step::Io(io) => io,
            };
            let received = match io {
                Io::Sleep(until) => {
                    fake.now = fake.now.max(until);
                    Vec::new()
                }
                Io::Round(pipelines) => {
                    // The push's future dropped while the check waits for
                    // this round's replies.
                    if drop_at == Some(round) {
                        drop(left.take());
                    }
                    round += 1;
                    pipelines.iter().map(|p| model.answer(p)).collect()
                }
            };
            check.answer(received);
        };
        drop(check);
        drop(left);
        assert_eq!(finished, Ok(false), "dropped at {drop_at:?}");
        drive(&mut fake, &mut model, core.flush(&mut wire)).expect("flushed");
        assert!(
            model.queued(&url),
            "dropped at {drop_at:?}: the URL never reached a queue"
        );
    }
}

/// Pushes `url` through the wire, drops the push at request `drop_at` (if
/// it has not ended by then), flushes, and checks the URL was queued.
fn check_dropped_push(
    core: &Arc<FrontierCore>,
    wire: &mut Wire,
    (fake, model): (&mut Fake, &mut Model),
    url: String,
    drop_at: usize,
    ran: bool,
) {
    let Push::Slow(left) = core.push(url.clone(), fake.now) else {
        panic!("a push that waits for its mark or for room goes through the wire");
    };
    let pushed = drive_dropping(fake, model, core.push_slow(wire, left), drop_at, ran);
    if let Some(pushed) = pushed {
        assert_eq!(pushed, Ok(true), "{url}");
    }
    drive(fake, model, core.flush(wire)).expect("flushed");
    assert!(
        model.queued(&url),
        "dropped at request {drop_at} (ran: {ran}): {url} never reached a queue"
    );
}
