//! Calls cut short, against a real server: tokio calls cancelled while
//! they wait for the client or after their first poll, a reply lost for a
//! batch that repeats an item, a runtime shut down under a frontier that
//! holds work, and calls made where tokio cannot do their I/O. Nothing a
//! call began is lost or done twice, and misuse is one error, at once.

use test_servers as common;

mod crawling;

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
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
            let first = {
                let mut call = pin!(seen.insert_many(&items));
                let polled =
                    std::future::poll_fn(|context| Poll::Ready(call.as_mut().poll(context)));
                // Ready only if the round's tasks were done by then.
                let first = match polled.await {
                    Poll::Ready(answered) => answered.expect("answered"),
                    Poll::Pending => Vec::new(),
                };
                // Some dropped calls' pipelines reach the server first.
                tokio::time::sleep(Duration::from_millis(n % 3)).await;
                first
            };
            let again = seen.insert_many(&items).await.expect("answered");
            let answers = [first.as_slice(), again.as_slice()];
            let new = answers.concat().iter().filter(|&&new| new).count();
            if new != 1 || answers.iter().any(|call| call.get(1) == Some(&true)) {
                wrong.push((item, first, again));
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
    // Retrying would take `retry_for`; "at once" is well under it, with
    // room for a panic's backtrace printed on a loaded machine (over 1 s
    // once, in CI's step of two test threads beside the fault schedules).
    let config = config(&server.url(), "misuse").retry_for(Duration::from_secs(30));
    let at_once = Duration::from_secs(5);
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
    assert!(started.elapsed() < at_once, "{:?}", started.elapsed());
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
    assert!(started.elapsed() < at_once, "{:?}", started.elapsed());
    // And again where it can: nothing of the failed call was lost.
    let inserted = one_thread().block_on(seen.insert_many(&["a"]));
    assert_eq!(inserted, Ok(vec![true]));
    unusable(
        poll_once(async { seen.insert_many(&["b"]).await.map(drop) }),
        "insert_many outside a runtime",
    );
}

/// Whether a call is cut short, and after how long: three calls in ten,
/// after 0 to 500 us (so after its first poll, or a little later).
fn cut(rng: &mut u64) -> Option<Duration> {
    // xorshift64*: reproducible for a task's seed.
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    let draw = rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
    (draw % 10 < 3).then(|| Duration::from_micros((draw >> 32) % 500))
}

/// `call`, cut short as `cut` draws: `None` if it was.
async fn maybe_cut<T>(rng: &mut u64, call: impl Future<Output = T>) -> Option<T> {
    match cut(rng) {
        Some(limit) => tokio::time::timeout(limit, call).await.ok(),
        None => Some(call.await),
    }
}

/// One task's crawl, three calls in ten cancelled: a cancelled pop or
/// check is made again, a cancelled push is not (the URL is the client's
/// to send), a cancelled `complete` is dropped unpolled.
async fn cancelling_worker(
    frontier: Arc<FleetFrontier>,
    fetch: crawling::fleet::Fetch,
    mut rng: u64,
    crawled: Arc<Mutex<Vec<String>>>,
) {
    let pause = || tokio::time::sleep(Duration::from_millis(2));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "the cancelled crawl did not end");
        let page = match maybe_cut(&mut rng, frontier.pop()).await {
            Some(Ok(Some(page))) => page,
            Some(Ok(None)) => {
                if let Some(Ok(true)) = maybe_cut(&mut rng, frontier.is_finished()).await {
                    return;
                }
                pause().await;
                continue;
            }
            None | Some(Err(_)) => continue,
        };
        let url = page.url().to_string();
        // A link to no page is completed, not crawled.
        if let Some(links) = crawling::fleet::links_of(&fetch, &url) {
            for link in links {
                // An error did not take the URL: pushed again.
                while let Some(Err(_)) = maybe_cut(&mut rng, frontier.push(link.clone())).await {
                    pause().await;
                }
            }
            crawled.lock().unwrap().push(url);
        }
        if cut(&mut rng).is_some() {
            tokio::select! {
                biased;
                () = std::future::ready(()) => {}
                () = frontier.complete(page) => {}
            }
        } else {
            frontier.complete(page).await;
        }
    }
}

/// Two async clients of sixteen tasks each crawl the small web, three
/// times, with three of every ten calls cancelled (pops, checks and pushes
/// cut short after 0 to 500 us, completions dropped unpolled; cancelled
/// pushes not made again): every page crawled exactly once each time.
/// Before, cancelled completions crawled a third of the pages twice, and
/// with completions left alone, cancelled pushes lost pages in half of the
/// crawls (1 or 2 of 3,540), which finished without them.
#[test]
fn a_crawl_whose_calls_are_cancelled_loses_and_repeats_nothing() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let web = crawling::small_web();
    let expected = crawling::reachable(&web);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    for round in 0..3u64 {
        // Small buffers: pushes often wait for room, and so for the client.
        let config = crawling::exact_config(&server.url(), &format!("cancelled-{round}"), 8)
            .batch_size(4)
            .max_buffered(32);
        let crawled = Arc::new(Mutex::new(Vec::new()));
        runtime.block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            for client in 0..2u64 {
                let frontier = Arc::new(FleetFrontier::connect(&config).await.expect("connects"));
                if client == 0 {
                    for url in web.start_urls() {
                        assert!(frontier.push(url).await.expect("pushed"));
                    }
                    frontier.flush().await.expect("flushed");
                }
                for task in 0..16u64 {
                    let seed = (round << 32 | client << 16 | task) + 1;
                    tasks.spawn(cancelling_worker(
                        Arc::clone(&frontier),
                        crawling::fetch(&web),
                        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                        Arc::clone(&crawled),
                    ));
                }
            }
            while let Some(done) = tasks.join_next().await {
                done.expect("no task panicked");
            }
        });
        let mut count: HashMap<String, usize> = HashMap::new();
        for page in crawled.lock().unwrap().drain(..) {
            *count.entry(page).or_default() += 1;
        }
        let twice: Vec<&String> = (count.iter())
            .filter(|(_, &times)| times > 1)
            .map(|(page, _)| page)
            .collect();
        let missing = expected.iter().filter(|page| !count.contains_key(*page));
        let missing: Vec<&String> = missing.collect();
        assert!(
            twice.is_empty() && missing.is_empty(),
            "round {round}: {} pages crawled twice ({:?}), {} never ({:?}) of {}",
            twice.len(),
            &twice[..twice.len().min(3)],
            missing.len(),
            &missing[..missing.len().min(3)],
            expected.len()
        );
    }
}

/// Thirty-two tasks of one async seen-set offer items, half of them shared
/// across tasks (and repeated within calls), three calls in ten cut short
/// after 0 to 500 us, a cut or failed call offered again until answered
/// (as a caller would): every item is answered new exactly once over all
/// the tasks, whatever round, shared or not, carried it or was dropped
/// with the task serving it.
#[test]
fn tasks_of_one_seen_set_cut_short_answer_each_item_new_once() {
    const TASKS: u64 = 32;
    const CALLS: u64 = 30;
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = config(&server.url(), "cut-seen").batch_size(4);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let answered = runtime.block_on(async {
        let seen = Arc::new(FleetSeen::connect(&config).await.expect("connects"));
        let mut tasks = tokio::task::JoinSet::new();
        for task in 0..TASKS {
            let seen = Arc::clone(&seen);
            tasks.spawn(async move {
                let mut rng = (task + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut answered = Vec::new();
                for call in 0..CALLS {
                    // Own items, items shared with the next task and the
                    // one before, and a repeat within the call.
                    let items: Vec<String> = vec![
                        format!("own-{task}-{call}"),
                        format!("shared-{}-{call}", task / 2),
                        format!("shared-{}-{call}", task.div_ceil(2) + 100),
                        format!("shared-{}-{call}", task / 2),
                    ];
                    let flags = loop {
                        if let Some(Ok(flags)) = maybe_cut(&mut rng, seen.insert_many(&items)).await
                        {
                            break flags;
                        }
                    };
                    answered.push((items, flags));
                }
                answered
            });
        }
        // A second or two here; a task never woken fails it.
        let all = async {
            let mut answered = Vec::new();
            while let Some(done) = tasks.join_next().await {
                answered.extend(done.expect("no task panicked"));
            }
            answered
        };
        (tokio::time::timeout(Duration::from_secs(120), all).await)
            .expect("every task was answered within two minutes")
    });
    let mut new: HashMap<String, usize> = HashMap::new();
    for (items, flags) in &answered {
        assert_eq!(items.len(), flags.len());
        assert!(
            !flags[3],
            "a repeat within a call answered new: {items:?} {flags:?}"
        );
        for (item, &flag) in items.iter().zip(flags) {
            *new.entry(item.clone()).or_default() += usize::from(flag);
        }
    }
    let wrong: Vec<_> = new.iter().filter(|(_, &count)| count != 1).collect();
    assert!(
        wrong.is_empty(),
        "{} of {} items answered new other than once: {:?}",
        wrong.len(),
        new.len(),
        &wrong[..wrong.len().min(5)]
    );
}
