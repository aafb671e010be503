//! Faults on purpose, against real servers: crawl processes SIGKILLed
//! mid-crawl (with and without a replacement), replies delayed past the
//! client's timeout, a client that leaves holding work, a full filter
//! that cannot grow, and a process started with other settings. Every
//! page is crawled, and twice only if a killed process held it.

use test_servers as common;

mod crawling;
use test_servers::faults;

use std::collections::{HashMap, HashSet};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use atomic_bloom_fleet::Error;
use atomic_bloom_fleet::{FleetConfig, FleetFrontier, FleetSeen};
use common::{config_set, used_memory, Kind, Server};
use crawling::{fleet, reachable, small_web, Driver, Frontier};
use faults::Rng;

/// URLs each take leases (and so the most a killed process can hold
/// beyond the page in hand).
const POP_BATCH: usize = 16;

/// Short leases and timeouts, so that a dead process's work comes back
/// within seconds; rates small enough that the crawl is exact.
fn config(url: &str, prefix: &str) -> FleetConfig {
    crawling::exact_config(url, prefix, 4)
        .pop_batch(POP_BATCH)
        .timeout(Duration::from_millis(250))
        .retry_for(Duration::from_millis(400))
        .lease(Duration::from_millis(2500))
}

/// Not a test of its own: the crawl process the kill tests start (this
/// test binary again, with `FLEET_CHILD_URL` set). Crawls the small web,
/// a millisecond a page, on the driver `FLEET_CHILD_DRIVER` names,
/// appending each completed page to `FLEET_CHILD_OUT`.
#[test]
fn fleet_child() {
    let (Ok(url), Ok(out), Ok(prefix), Ok(driver)) = (
        std::env::var("FLEET_CHILD_URL"),
        std::env::var("FLEET_CHILD_OUT"),
        std::env::var("FLEET_CHILD_PREFIX"),
        std::env::var("FLEET_CHILD_DRIVER"),
    ) else {
        return;
    };
    let driver = if driver == "tokio" {
        Driver::Tokio
    } else {
        Driver::Blocking
    };
    let web = small_web();
    let frontier = Frontier::connect_retrying(&config(&url, &prefix), driver);
    let file = Mutex::new(
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(&out)
            .unwrap(),
    );
    let fetch = crawling::fetch_slowly(&web, Duration::from_millis(1));
    let on_complete: fleet::OnComplete = Arc::new(move |page: &str| {
        (file.lock().unwrap())
            .write_all(format!("{page}\n").as_bytes())
            .map_err(|error| error.to_string())
    });
    let tally = (frontier.crawl(&web, &fetch, &on_complete)).expect("the crawl ends on its own");
    eprintln!("child crawled {} pages: {:?}", tally.pages, tally.stats);
}

/// A crawl process on `driver` writing its pages to `out`.
fn start_child(url: &str, prefix: &str, out: &Path, driver: Driver) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "fleet_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("FLEET_CHILD_URL", url)
        .env("FLEET_CHILD_OUT", out)
        .env("FLEET_CHILD_PREFIX", prefix)
        .env("FLEET_CHILD_DRIVER", driver.name())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the test binary starts again")
}

/// The whole lines of `path` (a killed writer may leave half of one).
fn lines(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole.lines().map(String::from).collect()
}

/// Waits for `child` to exit on its own, for up to `within`.
fn exits(mut child: Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("a surviving crawl process did not finish within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One crawl process to kill: once it has completed `after` pages, and
/// whether a new process is started in its place.
#[derive(Clone, Copy, Debug)]
struct Kill {
    after: usize,
    replace: bool,
}

/// Three crawl processes on `driver`, connected to `url` (the server, or a
/// fault proxy in front of it); process `i` is SIGKILLed as `kills[i]` says
/// (at most two, so one always survives). Checks that the survivors finish on their
/// own, that every page was crawled, that the surviving processes crawled
/// no page twice between them, and that a page crawled more than once was
/// finished by a killed process for every extra time.
fn kill_some(url: &str, trial: &str, kills: &[Kill], driver: Driver) {
    assert!(!kills.is_empty() && kills.len() < 3);
    let web = small_web();
    let expected = reachable(&web);
    let directory = tempfile::tempdir().unwrap();
    let prefix = format!("kill-{trial}");
    let out = |index: usize| -> PathBuf { directory.path().join(format!("pages{index}.txt")) };
    let mut children: Vec<Option<Child>> = (0..3)
        .map(|i| Some(start_child(url, &prefix, &out(i), driver)))
        .collect();
    let mut replacements = Vec::new();
    let mut killed_at = vec![None; kills.len()];
    let deadline = Instant::now() + Duration::from_secs(60);
    while killed_at.iter().any(Option::is_none) {
        assert!(
            Instant::now() < deadline,
            "trial {trial}: a victim never reached its kill point"
        );
        for (index, kill) in kills.iter().enumerate() {
            if killed_at[index].is_some() || lines(&out(index)).len() < kill.after {
                let finished = children[index]
                    .as_mut()
                    .is_some_and(|child| child.try_wait().unwrap().is_some());
                assert!(
                    killed_at[index].is_some() || !finished,
                    "trial {trial}: victim {index} finished before page {}",
                    kill.after
                );
                continue;
            }
            let mut victim = children[index].take().unwrap();
            victim.kill().expect("SIGKILL");
            victim.wait().unwrap();
            killed_at[index] = Some(lines(&out(index)).len());
            if kill.replace {
                let slot = 3 + replacements.len();
                replacements.push(start_child(url, &prefix, &out(slot), driver));
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let files = 3 + replacements.len();
    for child in children.into_iter().flatten().chain(replacements) {
        let status = exits(child, Duration::from_secs(90));
        assert!(
            status.success(),
            "trial {trial}: a survivor exited {status}"
        );
    }
    let mut count: HashMap<String, usize> = HashMap::new();
    let mut by_victims: HashMap<String, usize> = HashMap::new();
    for index in 0..files {
        for page in lines(&out(index)) {
            if index < kills.len() {
                *by_victims.entry(page.clone()).or_default() += 1;
            }
            *count.entry(page).or_default() += 1;
        }
    }
    let missing: Vec<&String> = expected
        .iter()
        .filter(|page| !count.contains_key(*page))
        .collect();
    assert!(
        missing.is_empty(),
        "trial {trial}: {} pages lost: {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    let again: Vec<(&String, &usize)> = count.iter().filter(|(_, &n)| n > 1).collect();
    for (page, &times) in &again {
        let by_killed = by_victims.get(*page).copied().unwrap_or(0);
        assert!(
            by_killed >= times - 1,
            "trial {trial}: {page} crawled {times} times, {by_killed} of them by killed processes"
        );
    }
    assert!(
        again.len() <= kills.len() * (2 * POP_BATCH + 1),
        "trial {trial}: {} pages crawled more than once",
        again.len()
    );
    eprintln!(
        "trial {trial}: {kills:?} killed after {killed_at:?} pages; {} pages, {} crawled again",
        count.len(),
        again.len()
    );
}

#[test]
fn a_crawl_process_killed_mid_crawl_loses_no_page() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    // Early (its first take in hand), mid-crawl and late; with and without
    // a process started in its place.
    for (trial, (after, replace)) in [(1, false), (300, true), (700, false), (150, true)]
        .into_iter()
        .enumerate()
    {
        kill_some(
            &server.url(),
            &trial.to_string(),
            &[Kill { after, replace }],
            Driver::Blocking,
        );
    }
}

/// Seeded kill schedules: per seed, one or two of the three processes
/// SIGKILLed at pages the seed draws, each replaced or not, while a fault
/// proxy between every process and the server drops replies after the
/// server ran the command, cuts them mid-way and delays them past the
/// timeout (0 to 10 per thousand reply chunks, each kind, drawn from the
/// seed): kills and reply faults in one run. `FLEET_KILL_SEEDS=N` runs
/// seeds 0..N (5 by default), `FLEET_KILL_SEED=n` replays one (the
/// processes' timing is not seeded: a replay kills at the same page
/// counts, not the same instants). Even seeds' processes run the blocking
/// driver, odd ones' the tokio driver (`FLEET_DRIVER` for one).
#[test]
fn seeded_kill_schedules_lose_no_page() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let mut dealt = 0;
    for seed in faults::seeds("FLEET_KILL_SEED", "FLEET_KILL_SEEDS", 5) {
        let mut rng = Rng(seed ^ 0x6b11);
        let victims = 1 + (rng.next() % 2) as usize;
        let kills: Vec<Kill> = (0..victims)
            .map(|_| Kill {
                after: 1 + (rng.next() % 250) as usize,
                replace: rng.chance(500),
            })
            .collect();
        let per_mille = rng.next() % 11;
        let proxy = faults::Proxy::start(server.port, seed, per_mille, Duration::from_millis(300));
        let driver = Driver::for_turn(seed);
        eprintln!(
            "seed {seed}: {} driver, {per_mille}/1000 reply faults of each kind",
            driver.name()
        );
        kill_some(&proxy.url(), &format!("seed{seed}"), &kills, driver);
        dealt += proxy
            .schedule
            .faults
            .load(std::sync::atomic::Ordering::Relaxed);
    }
    assert!(
        dealt > 0,
        "the proxies dealt no fault: the processes bypass them"
    );
    eprintln!("kill schedules passed, {dealt} reply faults among them");
}

/// Three clients crawl while the server stops answering for longer than
/// their timeout, again and again: every page once.
#[test]
fn replies_delayed_past_the_timeout_lose_and_repeat_nothing() {
    let web = small_web();
    let expected = reachable(&web);
    for kind in common::KINDS {
        let server = Server::start(kind, &[], &[]);
        let config = config(&server.url(), "paused")
            .timeout(Duration::from_millis(100))
            .retry_for(Duration::from_secs(2))
            .lease(Duration::from_secs(4));
        let frontiers: Vec<Frontier> = (0..3)
            .map(|_| Frontier::connect(&config, Driver::Blocking).expect("connects"))
            .collect();
        let fetch = crawling::fetch_slowly(&web, Duration::from_micros(300));
        let tallies = crawling::crawl_with(&frontiers, &web, &fetch, || {
            let mut connection = server.connect();
            for _ in 0..5 {
                std::thread::sleep(Duration::from_millis(150));
                redis::cmd("CLIENT")
                    .arg("PAUSE")
                    .arg(300)
                    .arg("ALL")
                    .query::<()>(&mut connection)
                    .unwrap();
            }
        });
        crawling::each_page_once(&tallies, &expected, &format!("{kind:?}"));
        let retries: u64 = tallies.iter().map(|tally| tally.stats.retries).sum();
        assert!(retries > 0, "{kind:?}: no reply was ever late");
    }
}

/// A client that takes work and goes away without completing it (its
/// process ends) holds the fleet up for one lease, then another client
/// gets its URLs and the fleet finishes.
#[test]
fn a_client_that_leaves_holding_work_does_not_block_the_end() {
    let server = Server::start(Kind::Redis, &[], &[]);
    let config = config(&server.url(), "leaver");
    let leaver = FleetFrontier::connect(&config).unwrap();
    for page in 0..5 {
        leaver.push(format!("https://example.com/{page}")).unwrap();
    }
    leaver.flush().unwrap();
    let held = leaver.pop().unwrap().expect("a URL");
    let stayer = FleetFrontier::connect(&config).unwrap();
    // The leaver's take leased all five (pop batches of 16).
    assert!(stayer.pop().unwrap().is_none());
    assert!(
        !stayer.is_finished().unwrap(),
        "the leaver's leases are live"
    );
    let gone = Instant::now();
    drop(held);
    drop(leaver);
    let mut popped = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !stayer.is_finished().unwrap() {
        assert!(Instant::now() < deadline, "the fleet never finished");
        while let Some(page) = stayer.pop().unwrap() {
            popped.push(page.url().to_string());
            stayer.complete(page);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    popped.sort();
    let all: Vec<String> = (0..5)
        .map(|page| format!("https://example.com/{page}"))
        .collect();
    assert_eq!(popped, all);
    assert!(
        gone.elapsed() >= Duration::from_millis(1000),
        "the URLs came back before the lease ended: {:?}",
        gone.elapsed()
    );
}

#[test]
fn a_full_filter_that_cannot_grow_is_an_error_naming_its_key() {
    for kind in common::KINDS {
        let server = Server::start(kind, &[], &[]);
        let config = FleetConfig::new(server.url()).prefix("full").shards(1);
        let seen = FleetSeen::connect(&config).unwrap();
        seen.insert("first").unwrap();
        let mut connection = server.connect();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("full:seen:*")
            .query(&mut connection)
            .unwrap();
        redis::cmd("DEL")
            .arg(&keys[0])
            .query::<()>(&mut connection)
            .unwrap();
        redis::cmd("BF.RESERVE")
            .arg(&keys[0])
            .arg(0.01)
            .arg(10)
            .arg("NONSCALING")
            .query::<()>(&mut connection)
            .unwrap();
        let items: Vec<String> = (0..200).map(|n| format!("item{n}")).collect();
        match seen.insert_many(&items) {
            Err(Error::ServerRefused { message, .. }) => {
                assert!(message.contains(&keys[0]), "{kind:?}: {message}");
                assert!(message.contains("full"), "{kind:?}: {message}");
            }
            other => panic!("{kind:?}: {other:?}"),
        }
    }
}

#[test]
fn a_process_with_other_settings_is_refused_at_connect() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let first = FleetConfig::new(server.url()).prefix("settled").shards(4);
    FleetFrontier::connect(&first).expect("the first client settles the fleet");
    FleetSeen::connect(&first).expect("the same settings");
    for (other, setting) in [
        (first.clone().shards(8), "shards"),
        (first.clone().capacity(1_000, 0.01), "capacity"),
        (first.clone().capacity(10_000_000, 0.001), "error_rate"),
        (first.clone().expansion(4), "expansion"),
    ] {
        match FleetFrontier::connect(&other) {
            Err(error @ Error::FleetSettingsDiffer { .. }) => {
                assert!(error.to_string().contains(setting), "{error}");
                assert!(error.to_string().contains("same shards"), "{error}");
            }
            other => panic!("{setting}: {other:?}"),
        }
    }
}

/// A server out of memory (`noeviction`) refuses batches with an error,
/// not silence; once it has room again, every URL pushed is popped once.
#[test]
fn an_out_of_memory_server_is_an_error_and_loses_nothing() {
    for kind in common::KINDS {
        let server = Server::start(kind, &[], &["--maxmemory-policy", "noeviction"]);
        let config = config(&server.url(), "oom").retry_for(Duration::from_millis(300));
        let frontier = FleetFrontier::connect(&config).unwrap();
        let mut connection = server.connect();
        let used = used_memory(&mut connection);
        config_set(
            &mut connection,
            "maxmemory",
            &(used + 2_000_000).to_string(),
        );
        let padding = "x".repeat(200);
        let mut pushed = Vec::new();
        let (refused, last) = loop {
            assert!(pushed.len() < 100_000, "{kind:?}: the server never ran out");
            let url = format!("https://example.com/{}/{padding}", pushed.len());
            match frontier.push(url.clone()) {
                Ok(true) => pushed.push(url),
                Ok(false) => unreachable!("a new URL"),
                // The URL that filled the batch stays buffered (`push`'s
                // doc): it may come out too.
                Err(error) => break (error, url),
            }
        };
        assert!(refused.to_string().contains("OOM"), "{kind:?}: {refused}");
        // Takes while the server is out of memory: refused, or served, but
        // never a URL off the queue and not leased.
        let mut popped = HashSet::new();
        for _ in 0..3 {
            if let Ok(Some(page)) = frontier.pop() {
                popped.insert(page.url().to_string());
                frontier.complete(page);
            }
        }
        config_set(&mut connection, "maxmemory", "0");
        frontier.flush().expect("room again");
        while let Some(page) = frontier.pop().unwrap() {
            assert!(
                popped.insert(page.url().to_string()),
                "{kind:?}: popped twice"
            );
            frontier.complete(page);
        }
        popped.remove(&last);
        let pushed: HashSet<String> = pushed.into_iter().collect();
        let lost = pushed.difference(&popped).count();
        let extra = popped.difference(&pushed).count();
        assert_eq!(
            (lost, extra),
            (0, 0),
            "{kind:?}: URLs lost, and popped not pushed"
        );
        assert!(frontier.is_finished().unwrap());
    }
}

/// The fleet's own keys (its settings, its busy clients) sit under one
/// hash tag per prefix whatever the shard count, so a process started
/// with another shard count is refused instead of crawling as a second
/// fleet, under any prefix (the default one included).
#[test]
fn a_process_with_another_shard_count_is_refused_under_any_prefix() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    for (prefix, first, others) in [("atomic-bloom", 8, &[4, 16][..]), ("crawl", 4, &[2][..])] {
        let settled = FleetConfig::new(server.url()).prefix(prefix).shards(first);
        let _fleet = FleetFrontier::connect(&settled).expect("the first client settles the fleet");
        for &shards in others {
            let other = settled.clone().shards(shards);
            let refusals = [
                FleetFrontier::connect(&other).map(|_| ()),
                FleetSeen::connect(&other).map(|_| ()),
            ];
            for refusal in refusals {
                match refusal {
                    Err(Error::FleetSettingsDiffer {
                        setting,
                        fleet,
                        this,
                        ..
                    }) => assert_eq!(
                        (setting.as_str(), fleet, this),
                        ("shards", first.to_string(), shards.to_string()),
                        "prefix {prefix}"
                    ),
                    other => panic!("prefix {prefix}, {first} then {shards} shards: {other:?}"),
                }
            }
        }
    }
}

/// A worker that panics (or returns early with `?`) drops its `Leased`
/// without completing it: the URL goes back on the queue, another client
/// crawls it, and the fleet finishes, the dropping client included,
/// long before the lease would have ended.
#[test]
fn a_leased_url_dropped_without_complete_is_crawled_and_the_fleet_finishes() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    // A lease far longer than the test: only giving it back ends it.
    let config = config(&server.url(), "dropped").lease(Duration::from_secs(120));
    let dropper = FleetFrontier::connect(&config).unwrap();
    let urls: Vec<String> = (0..5)
        .map(|page| format!("https://example.com/{page}"))
        .collect();
    for url in &urls {
        dropper.push(url.clone()).unwrap();
    }
    dropper.flush().unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let page = dropper.pop().unwrap().expect("a URL");
        panic!("a worker fails while crawling {}", page.url());
    }));
    assert!(panicked.is_err());
    assert_eq!(dropper.held().1, 0, "the dropped page is no longer in hand");
    let other = FleetFrontier::connect(&config).unwrap();
    let mut crawled = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        for frontier in [&other, &dropper] {
            while let Some(page) = frontier.pop().unwrap() {
                crawled.push(page.url().to_string());
                frontier.complete(page);
            }
        }
        // Each client checks (and so goes idle) every round.
        let finished = [&other, &dropper].map(|frontier| frontier.is_finished().unwrap());
        if finished == [true, true] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the fleet never finished; crawled {crawled:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    crawled.sort();
    assert_eq!(crawled, urls, "every URL crawled once, the dropped one too");
}

/// A batch refused part-way (a full filter that cannot grow) keeps the
/// answers of the items its first run added: offered again once the
/// filter has room, every item is answered new, once. While the refusal
/// lasts, calls for other items go on.
#[test]
fn a_batch_refused_part_way_keeps_its_answers_and_holds_up_only_its_items() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = FleetConfig::new(server.url())
        .prefix("partway")
        .shards(2)
        .without_local_filter()
        .retry_for(Duration::from_millis(300));
    let seen = FleetSeen::connect(&config).unwrap();
    let warm: Vec<String> = (0..20).map(|n| format!("warm{n}")).collect();
    assert!(seen.insert_many(&warm).unwrap().iter().all(|&new| new));
    let mut connection = server.connect();
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("partway:seen:*")
        .query(&mut connection)
        .unwrap();
    keys.sort();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let full = &keys[0];
    reserve_again(&mut connection, full, 10, true);
    let items: Vec<String> = (0..200).map(|n| format!("item{n}")).collect();
    match seen.insert_many(&items) {
        Err(Error::ServerRefused { message, .. }) => assert!(message.contains("full"), "{message}"),
        other => panic!("{other:?}"),
    }
    // Other items, one a call: those of the other shard are answered.
    let mut answered = 0;
    for n in 0..40 {
        if let Ok(new) = seen.insert(&format!("other{n}")) {
            assert!(new, "other{n} answered seen");
            answered += 1;
        }
    }
    assert!(answered > 0, "a refused batch held up every call");
    // Room again, keeping what the full filter holds.
    let offered: Vec<String> = (items.iter().cloned())
        .chain((0..40).map(|n| format!("other{n}")))
        .collect();
    let held: Vec<i64> = redis::cmd("BF.MEXISTS")
        .arg(full)
        .arg(&offered)
        .query(&mut connection)
        .unwrap();
    let held: Vec<&String> = (offered.iter().zip(held))
        .filter(|(_, held)| *held == 1)
        .map(|(item, _)| item)
        .collect();
    assert!(!held.is_empty(), "the first run added nothing");
    reserve_again(&mut connection, full, 10_000, false);
    redis::cmd("BF.MADD")
        .arg(full)
        .arg(&held)
        .query::<()>(&mut connection)
        .unwrap();
    let answers = seen.insert_many(&items).expect("room again");
    let lost: Vec<&String> = (items.iter().zip(&answers))
        .filter(|(_, &new)| !new)
        .map(|(item, _)| item)
        .collect();
    assert!(lost.is_empty(), "answered seen, never new: {lost:?}");
    assert!(seen.insert_many(&items).unwrap().iter().all(|&new| !new));
}

/// `key` replaced by an empty filter of `capacity` at 0.01%, that grows
/// unless `nonscaling`.
fn reserve_again(connection: &mut redis::Connection, key: &str, capacity: usize, nonscaling: bool) {
    redis::cmd("DEL").arg(key).query::<()>(connection).unwrap();
    let mut reserve = redis::cmd("BF.RESERVE");
    reserve.arg(key).arg(0.0001).arg(capacity);
    if nonscaling {
        reserve.arg("NONSCALING");
    }
    reserve.query::<()>(connection).unwrap();
}

/// A shard whose batches are refused (a full filter that cannot grow)
/// holds back the completions of the pages crawled meanwhile (their links
/// wait in its batch): past `max_buffered` of them the client takes no
/// more work and says why, instead of growing without bound; once the
/// filter has room, the batches go, and the fleet finishes.
#[test]
fn a_refused_batch_bounds_what_a_frontier_holds_back_and_the_fleet_finishes() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = config(&server.url(), "pinned")
        .shards(2)
        .batch_size(8)
        .max_buffered(32)
        .pop_batch(8);
    let frontier = FleetFrontier::connect(&config).unwrap();
    let seeds: Vec<String> = (0..400)
        .map(|n| format!("https://example.com/seed{n}"))
        .collect();
    for url in &seeds {
        frontier.push(url.clone()).unwrap();
    }
    frontier.flush().unwrap();
    let mut connection = server.connect();
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("pinned:seen:*")
        .query(&mut connection)
        .unwrap();
    keys.sort();
    let full = keys[0].clone();
    // Shard 0's filter is full: every link for it is refused from now on.
    reserve_again(&mut connection, &full, 1, true);
    redis::cmd("BF.ADD")
        .arg(&full)
        .arg("filler")
        .query::<()>(&mut connection)
        .unwrap();
    let mut crawled = 0;
    let mut stopped = None;
    for _ in 0..400 {
        match frontier.pop() {
            Ok(Some(page)) => {
                for link in 0..4 {
                    frontier.push(format!("{}/{link}", page.url())).ok();
                }
                frontier.complete(page);
                crawled += 1;
            }
            Ok(None) => break,
            Err(error) => {
                stopped = Some(error);
                break;
            }
        }
    }
    let taken = frontier.stats().taken;
    assert!(
        stopped.is_some(),
        "took {taken} URLs and crawled {crawled} pages with their completions held back"
    );
    assert!(
        stopped.unwrap().to_string().contains("full"),
        "the error says why"
    );
    assert!(taken <= 32 + 2 * 8 + 8, "took {taken} URLs");
    // Room again (keeping what it held): the fleet finishes.
    reserve_again(&mut connection, &full, 100_000, false);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !frontier.is_finished().unwrap_or(false) {
        assert!(Instant::now() < deadline, "the fleet never finished");
        while let Ok(Some(page)) = frontier.pop() {
            frontier.complete(page);
        }
    }
}

/// Calls of more batches than a pipeline carries acknowledgements for:
/// the batches' answers on the server (and the acknowledgements the
/// client keeps) stay bounded.
#[test]
fn acknowledgements_do_not_pile_up_when_a_call_makes_many_batches() {
    let server = Server::start(Kind::Valkey, &[], &[]);
    let config = FleetConfig::new(server.url())
        .prefix("acks")
        .shards(2)
        .batch_size(1)
        .without_local_filter();
    let seen = FleetSeen::connect(&config).unwrap();
    for round in 0..4 {
        let items: Vec<String> = (0..1000).map(|n| format!("r{round}-{n}")).collect();
        assert!(seen.insert_many(&items).unwrap().iter().all(|&new| new));
    }
    seen.insert("last").unwrap();
    let mut connection = server.connect();
    let answers: Vec<String> = redis::cmd("KEYS")
        .arg("acks:result:*")
        .query(&mut connection)
        .unwrap();
    assert!(
        answers.len() <= 600,
        "{} batch answers left on the server",
        answers.len()
    );
}

/// Issue 37: a server out of memory (`noeviction`) refuses the give-back of
/// a dropped URL (its `LPUSH`) and the lease renewals (their `ZADD`). The
/// holder must keep its lease and give the URL back once the server has
/// room: before, it dropped the whole lease, which then expired, and every
/// URL of the take (finished, or still in hand) went back to the queue for
/// another client to crawl again.
#[test]
fn a_give_back_refused_for_memory_keeps_the_lease() {
    let server = Server::start(Kind::Valkey, &[], &["--maxmemory-policy", "noeviction"]);
    // Short leases: the refusal lasts two of them.
    let config = config(&server.url(), "oomlease").shards(1);
    let holder = FleetFrontier::connect(&config).unwrap();
    let urls: Vec<String> = (0..5).map(|n| format!("https://oom{n}.example/")).collect();
    for url in &urls {
        holder.push(url.clone()).unwrap();
    }
    holder.flush().unwrap();
    let mut pages: Vec<_> = (0..5)
        .map(|_| holder.pop().unwrap().expect("a URL"))
        .collect();
    let in_hand = pages.pop().unwrap();
    let dropped = pages.pop().unwrap();
    let dropped_url = dropped.url().to_string();
    for page in pages {
        holder.complete(page);
    }
    let mut connection = server.connect();
    let full = used_memory(&mut connection).saturating_sub(100_000).max(1);
    config_set(&mut connection, "maxmemory", &full.to_string());
    drop(dropped);
    // Two leases out of memory, the holder's calls carrying the give-back.
    let refused = Instant::now();
    while refused.elapsed() < Duration::from_secs(5) {
        let _ = holder.flush();
        std::thread::sleep(Duration::from_millis(100));
    }
    config_set(&mut connection, "maxmemory", "0");
    let _ = holder.flush();
    let other = FleetFrontier::connect(&config).unwrap();
    let mut taken = Vec::new();
    let looking = Instant::now();
    while looking.elapsed() < Duration::from_secs(2) {
        let _ = holder.flush();
        // A check puts expired leases back on the queue.
        let _ = other.is_finished();
        if let Ok(Some(page)) = other.pop() {
            taken.push(page.url().to_string());
            other.complete(page);
        }
    }
    assert_eq!(
        taken,
        [dropped_url],
        "another client got more than the dropped URL: the holder's lease was lost"
    );
    holder.complete(in_hand);
}
