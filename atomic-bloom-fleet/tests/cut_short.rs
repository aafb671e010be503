//! Calls cut short, against a real server: tokio calls cancelled while
//! they wait for the client or after their first poll, a reply lost for a
//! batch that repeats an item, a runtime shut down under a frontier that
//! holds work, and calls made where tokio cannot do their I/O. Nothing a
//! call began is lost or done twice, and misuse is one error, at once.

use test_servers as common;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use atomic_bloom_fleet::tokio::{FleetFrontier, FleetSeen};
use atomic_bloom_fleet::{Error, FleetConfig};
use common::{Kind, Server};

/// Rates small enough that nothing here is a false positive.
fn config(url: &str, prefix: &str) -> FleetConfig {
    FleetConfig::new(url)
        .prefix(prefix)
        .shards(2)
        .capacity(10_000, 1e-7)
        .local_filter(10_000, 1e-8)
        .retry_for(Duration::from_millis(300))
}

/// A runtime of one thread: what a spawned task does before the test's
/// own future goes on is decided by the test's awaits alone.
fn one_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Pauses every client of `server` for `millis` (`CLIENT PAUSE ... ALL`).
fn pause_clients(server: &Server, millis: u64) {
    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(millis)
        .arg("ALL")
        .query::<()>(&mut server.connect())
        .expect("CLIENT PAUSE");
}

/// Polls `future` once, with a waker that does nothing, and drops it.
fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    pin!(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// Pops until `url` comes (flushing first), completing what else comes;
/// panics if the queues run dry first.
async fn pop_until(frontier: &FleetFrontier, url: &str) {
    frontier.flush().await.expect("flushed");
    loop {
        let page = (frontier.pop().await)
            .expect("popped")
            .unwrap_or_else(|| panic!("{url} was never popped"));
        let found = page.url() == url;
        frontier.complete(page).await;
        if found {
            return;
        }
    }
}

/// Checks until the fleet is finished (a check that sends completions
/// answers `false` once).
async fn finish(frontier: &FleetFrontier) {
    for _ in 0..5 {
        if frontier.is_finished().await.expect("checked") {
            return;
        }
    }
    panic!("the fleet never finished");
}

/// A push cancelled while another call of its client holds the client
/// (here a check of the fleet, its reply held up by `CLIENT PAUSE`) keeps
/// its URL: the check does not answer "finished" meanwhile, and the URL is
/// popped. Before, the URL sat only in the cancelled push: the check
/// answered "finished", and the URL was never popped.
#[test]
fn a_push_cancelled_while_it_waits_for_the_client_keeps_its_url() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = config(&server.url(), "push-waits");
    one_thread().block_on(async {
        let frontier = Arc::new(FleetFrontier::connect(&config).await.expect("connects"));
        for round in 0..5 {
            // An idle client: a push needs the client, to mark it busy.
            finish(&frontier).await;
            let url = format!("https://example.com/waited-{round}");
            pause_clients(&server, 400);
            let check = tokio::spawn({
                let frontier = Arc::clone(&frontier);
                async move { frontier.is_finished().await }
            });
            // The check takes the client and waits for its reply.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let pushed =
                tokio::time::timeout(Duration::from_millis(5), frontier.push(url.clone())).await;
            assert!(pushed.is_err(), "round {round}: the push did not wait");
            let finished = check.await.expect("the check ran").expect("checked");
            assert!(
                !finished,
                "round {round}: finished while the client held a pushed URL"
            );
            pop_until(&frontier, &url).await;
        }
        finish(&frontier).await;
    });
}

/// An item repeated in one `insert_many` whose reply was lost (the server
/// paused past the client's timeout, and the call gave up) is answered new
/// once when the same items are offered again. Before, `[false, true,
/// false]`: x was new to no one.
#[test]
fn a_repeated_item_whose_reply_was_lost_is_answered_new_once() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = config(&server.url(), "repeats").timeout(Duration::from_millis(200));
    let seen = atomic_bloom_fleet::FleetSeen::connect(&config).expect("connects");
    pause_clients(&server, 1500);
    let items = ["x", "y", "x"];
    let failed = seen.insert_many(&items);
    assert!(
        matches!(failed, Err(Error::ServerUnavailable { .. })),
        "{failed:?}"
    );
    std::thread::sleep(Duration::from_millis(1600));
    assert_eq!(seen.insert_many(&items), Ok(vec![true, true, false]));
}

/// The same through the tokio client: `[x, x]` dropped after one poll (its
/// pipeline written, or not yet), then offered again, answers x new once.
#[test]
fn a_repeated_item_of_a_call_dropped_after_one_poll_is_answered_new_once() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = config(&server.url(), "repeats-dropped");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let seen = FleetSeen::connect(&config).await.expect("connects");
        let mut wrong = Vec::new();
        for n in 0..20 {
            let item = format!("item-{n}");
            let items = [item.as_str(), item.as_str()];
            {
                let mut call = pin!(seen.insert_many(&items));
                let polled = std::future::poll_fn(|context| {
                    Poll::Ready(call.as_mut().poll(context).is_ready())
                })
                .await;
                assert!(!polled, "a call to the server ends in one poll");
                // Some dropped calls' pipelines reach the server first.
                tokio::time::sleep(Duration::from_millis(n % 3)).await;
            }
            let again = seen.insert_many(&items).await.expect("answered");
            if again != [true, false] {
                wrong.push((item, again));
            }
        }
        assert!(wrong.is_empty(), "not answered new once: {wrong:?}");
    });
}

/// A `complete` dropped unpolled (a `select!` whose other branch was
/// ready) completes its page all the same: no page is given back and
/// popped again, and the fleet finishes. Before, the dropped future gave
/// each page back: 3 of 3 popped twice.
#[test]
fn a_cancelled_complete_completes_its_page() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = config(&server.url(), "complete-dropped");
    one_thread().block_on(async {
        let frontier = FleetFrontier::connect(&config).await.expect("connects");
        for n in 0..3 {
            let url = format!("https://example.com/page-{n}");
            assert!(frontier.push(url).await.expect("pushed"));
        }
        frontier.flush().await.expect("flushed");
        let mut popped = Vec::new();
        while let Some(page) = frontier.pop().await.expect("popped") {
            popped.push(page.url().to_string());
            assert!(popped.len() <= 3, "popped again: {popped:?}");
            tokio::select! {
                biased;
                () = std::future::ready(()) => {}
                () = frontier.complete(page) => panic!("the ready branch goes first"),
            }
        }
        assert_eq!(popped.len(), 3, "{popped:?}");
        finish(&frontier).await;
    });
}

/// A frontier whose runtime shut down (`shutdown_background`, calls in
/// flight) keeps renewing its leases while it goes on on another runtime:
/// another client does not get the page it holds for two leases. Before,
/// the heartbeat died with the first runtime: the other client crawled
/// the held page one lease later, and no call said so.
#[test]
fn a_frontier_keeps_its_leases_when_its_runtime_shuts_down() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let lease = Duration::from_secs(3);
    let config = config(&server.url(), "runtime-gone")
        .timeout(Duration::from_millis(250))
        .lease(lease);
    let first = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let url = "https://example.com/held";
    let (frontier, page) = first.block_on(async {
        let frontier = Arc::new(FleetFrontier::connect(&config).await.expect("connects"));
        frontier.push(url.to_string()).await.expect("pushed");
        frontier.flush().await.expect("flushed");
        let page = (frontier.pop().await.expect("popped")).expect("the URL");
        (frontier, page)
    });
    for _ in 0..4 {
        let frontier = Arc::clone(&frontier);
        first.spawn(async move {
            loop {
                let _ = frontier.is_finished().await;
                let _ = frontier.flush().await;
            }
        });
    }
    std::thread::sleep(Duration::from_millis(50));
    first.shutdown_background();
    let second = one_thread();
    let other = atomic_bloom_fleet::FleetFrontier::connect(&config).expect("connects");
    let until = Instant::now() + lease * 2 + Duration::from_millis(500);
    while Instant::now() < until {
        // A check puts the URLs of leases that ended back on the queue.
        assert!(!other.is_finished().expect("checked"));
        if let Some(taken) = other.pop().expect("popped") {
            panic!("another client got {}, held by a live client", taken.url());
        }
        second.block_on(frontier.flush()).expect("flushed");
        std::thread::sleep(Duration::from_millis(200));
    }
    second.block_on(async {
        frontier.complete(page).await;
        finish(&frontier).await;
    });
    assert!(other.is_finished().expect("checked"));
}

/// A call made where tokio cannot do its I/O is one error, at once, for
/// either client: outside a runtime, and on a runtime without its I/O
/// driver (connected on one that had it). Before, `FleetSeen::connect`
/// panicked outside a runtime, `FleetFrontier::connect` answered
/// `ServerUnavailable`, and `insert_many` on a runtime without I/O retried
/// for `retry_for`, a panic in every try.
#[test]
fn a_call_where_tokio_cannot_do_its_io_is_one_error_at_once() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = config(&server.url(), "misuse").retry_for(Duration::from_secs(5));
    let unusable = |outcome: Poll<Result<(), Error>>, what: &str| match outcome {
        Poll::Ready(Err(Error::RuntimeUnusable { reason })) => reason,
        other => panic!("{what}: {other:?}"),
    };
    // Outside any runtime: the first poll answers.
    let reason = unusable(
        poll_once(async { FleetSeen::connect(&config).await.map(drop) }),
        "a seen-set's connect outside a runtime",
    );
    assert!(reason.contains("runtime"), "{reason}");
    unusable(
        poll_once(async { FleetFrontier::connect(&config).await.map(drop) }),
        "a frontier's connect outside a runtime",
    );
    // A runtime without its I/O driver.
    let no_io = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let started = Instant::now();
    let connected = no_io.block_on(FleetSeen::connect(&config));
    let Err(Error::RuntimeUnusable { reason }) = connected else {
        panic!("a connect without I/O: {connected:?}");
    };
    assert!(reason.contains("IO is disabled"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(1));
    // Connected where it could, then used where it cannot.
    let seen = one_thread()
        .block_on(FleetSeen::connect(&config))
        .expect("connects");
    let started = Instant::now();
    let inserted = no_io.block_on(seen.insert_many(&["a"]));
    assert!(
        matches!(inserted, Err(Error::RuntimeUnusable { .. })),
        "{inserted:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // And again where it can: nothing of the failed call was lost.
    let inserted = one_thread().block_on(seen.insert_many(&["a"]));
    assert_eq!(inserted, Ok(vec![true]));
    unusable(
        poll_once(async { seen.insert_many(&["b"]).await.map(drop) }),
        "insert_many outside a runtime",
    );
}
