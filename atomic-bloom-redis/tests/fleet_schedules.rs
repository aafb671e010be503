//! Seeded fault schedules against a real server: a TCP proxy between the
//! fleet's clients and the server drops replies after the server ran the
//! command, cuts connections in the middle of a reply, delays replies past
//! the clients' timeout and blackholes the server for a while, and the
//! server is killed and restarted from its append-only file, and one
//! client is cut off past its lease, each by a schedule drawn from the
//! seed. Per seed three in-process clients crawl the small web, each
//! through its own proxy; every page is crawled, twice only if the client
//! cut off had crawled it, every client finishes on its own and holds
//! nothing at the end, and a client with other settings never joins.
//! (Processes SIGKILLed mid-crawl are `fleet_faults.rs`'s.)
//!
//! `FLEET_SEEDS=N` runs seeds 0..N (30 by default), `FLEET_SEEDS=a..b`
//! seeds a..b, `FLEET_SEED=n` replays one. A failing seed names itself; the threads' timing is not seeded,
//! so a replay draws the same faults in a similar, not identical, order.

mod common;
mod crawling;

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use atomic_bloom::fleet::{FleetConfig, FleetFrontier};
use atomic_bloom::Error;
use common::{Kind, Server};
use crawling::{reachable, small_web};

/// The clients' timeout: a delayed reply waits longer than this.
const TIMEOUT: Duration = Duration::from_millis(250);

/// splitmix64: the schedule's random numbers.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `per_mille` / 1000.
    fn chance(&mut self, per_mille: u64) -> bool {
        self.next() % 1000 < per_mille
    }
}

/// What the proxy does to one chunk of a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Forward it.
    None,
    /// Close the connection instead: the server ran the command, the
    /// client never hears.
    Drop,
    /// Forward half of it, then close.
    Cut,
    /// Forward it after the client stopped waiting.
    Delay,
}

/// The proxy's shared state.
struct Schedule {
    rng: Mutex<Rng>,
    /// Faults per thousand reply chunks, each kind.
    per_mille: u64,
    /// Until when the server is blackholed (accepted, never answered).
    blackhole_until: Mutex<Option<Instant>>,
    faults: AtomicU64,
    stop: AtomicBool,
    /// Every connection's sockets, to close at the end.
    open: Mutex<Vec<TcpStream>>,
}

impl Schedule {
    fn fault(&self) -> Fault {
        let mut rng = self.rng.lock().unwrap();
        let fault = if rng.chance(self.per_mille) {
            Fault::Drop
        } else if rng.chance(self.per_mille) {
            Fault::Cut
        } else if rng.chance(self.per_mille) {
            Fault::Delay
        } else {
            Fault::None
        };
        if fault != Fault::None {
            self.faults.fetch_add(1, Ordering::Relaxed);
        }
        fault
    }

    /// Waits while the server is blackholed.
    fn through_blackhole(&self) {
        loop {
            let until = *self.blackhole_until.lock().unwrap();
            match until {
                Some(until) if Instant::now() < until && !self.stop.load(Ordering::Relaxed) => {
                    thread::sleep(Duration::from_millis(5))
                }
                _ => return,
            }
        }
    }
}

/// A TCP proxy on 127.0.0.1 in front of `upstream`'s port.
struct Proxy {
    port: u16,
    schedule: Arc<Schedule>,
    accepting: Option<thread::JoinHandle<()>>,
}

fn close(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Both);
}

impl Proxy {
    fn start(upstream: u16, seed: u64, per_mille: u64) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let schedule = Arc::new(Schedule {
            rng: Mutex::new(Rng(seed)),
            per_mille,
            blackhole_until: Mutex::new(None),
            faults: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            open: Mutex::new(Vec::new()),
        });
        let shared = Arc::clone(&schedule);
        let accepting = thread::spawn(move || {
            while !shared.stop.load(Ordering::Relaxed) {
                let client = match listener.accept() {
                    Ok((client, _)) => client,
                    Err(_) => {
                        thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                };
                client.set_nonblocking(false).unwrap();
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    close(&client);
                    continue;
                };
                client.set_nodelay(true).ok();
                server.set_nodelay(true).ok();
                {
                    let mut open = shared.open.lock().unwrap();
                    open.push(client.try_clone().unwrap());
                    open.push(server.try_clone().unwrap());
                }
                let requests = Arc::clone(&shared);
                let (mut from, mut to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                thread::spawn(move || {
                    let mut buffer = vec![0u8; 64 * 1024];
                    while let Ok(read) = from.read(&mut buffer) {
                        if read == 0 {
                            break;
                        }
                        requests.through_blackhole();
                        if to.write_all(&buffer[..read]).is_err() {
                            break;
                        }
                    }
                    close(&from);
                    close(&to);
                });
                let replies = Arc::clone(&shared);
                let (mut from, mut to) = (server, client);
                thread::spawn(move || {
                    let mut buffer = vec![0u8; 64 * 1024];
                    while let Ok(read) = from.read(&mut buffer) {
                        if read == 0 {
                            break;
                        }
                        replies.through_blackhole();
                        let chunk = &buffer[..read];
                        let sent = match replies.fault() {
                            Fault::None => to.write_all(chunk),
                            Fault::Drop => break,
                            Fault::Cut => {
                                let _ = to.write_all(&chunk[..read / 2]);
                                break;
                            }
                            Fault::Delay => {
                                thread::sleep(TIMEOUT + Duration::from_millis(50));
                                to.write_all(chunk)
                            }
                        };
                        if sent.is_err() {
                            break;
                        }
                    }
                    close(&from);
                    close(&to);
                });
            }
        });
        Proxy {
            port,
            schedule,
            accepting: Some(accepting),
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn blackhole(&self, duration: Duration) {
        *self.schedule.blackhole_until.lock().unwrap() = Some(Instant::now() + duration);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.schedule.stop.store(true, Ordering::Relaxed);
        for stream in self.schedule.open.lock().unwrap().drain(..) {
            close(&stream);
        }
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
    }
}

/// The clients' lease: a client cut off for longer loses its takes.
const LEASE: Duration = Duration::from_secs(6);

/// Every page of `expected` crawled; a page crawled twice only if the
/// client `stalled` (cut off past its lease) crawled it, and at most twice.
fn only_the_stalled_repeat(
    tallies: &[crawling::fleet::FleetTally],
    expected: &HashSet<String>,
    stalled: usize,
    what: &str,
) {
    let mut count: HashMap<&String, usize> = HashMap::new();
    for tally in tallies {
        for page in &tally.crawled {
            *count.entry(page).or_default() += 1;
        }
    }
    let missing = expected
        .iter()
        .filter(|page| !count.contains_key(page))
        .count();
    assert_eq!(missing, 0, "{what}: {missing} pages never crawled");
    assert_eq!(count.len(), expected.len(), "{what}: pages not of the web");
    let stalled_pages: HashSet<&String> = tallies[stalled].crawled.iter().collect();
    let twice = count.values().filter(|&&times| times > 1).count();
    for (page, &times) in &count {
        assert!(
            times == 1 || (times == 2 && stalled_pages.contains(page)),
            "{what}: {page} crawled {times} times"
        );
    }
    eprintln!("{what}: {twice} pages crawled twice, all the stalled client's");
}

fn config(url: &str, prefix: &str) -> FleetConfig {
    FleetConfig::new(url)
        .prefix(prefix)
        .shards(4)
        .capacity(10_000, 1e-7)
        .local_filter(10_000, 1e-8)
        .pop_batch(16)
        .timeout(TIMEOUT)
        .retry_for(Duration::from_secs(2))
        .lease(LEASE)
}

/// The seeds to run: `FLEET_SEED=n`, or `FLEET_SEEDS=N` (seeds `0..N`,
/// 30 by default) or `FLEET_SEEDS=a..b`.
fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("FLEET_SEED") {
        return vec![seed.parse().expect("FLEET_SEED is a number")];
    }
    let seeds = std::env::var("FLEET_SEEDS").unwrap_or_else(|_| "30".to_string());
    let number = |text: &str| -> u64 { text.parse().expect("FLEET_SEEDS is N or a..b") };
    match seeds.split_once("..") {
        Some((from, to)) => (number(from)..number(to)).collect(),
        None => (0..number(&seeds)).collect(),
    }
}

/// One seed: a crawl through the proxy while the schedule runs.
fn run_seed(server: &mut Server, seed: u64) -> (u64, bool) {
    let web = small_web();
    let expected = reachable(&web);
    let mut plan = Rng(seed ^ 0x5eed);
    // 0 to 20 faults per thousand reply chunks, each kind.
    let per_mille = plan.next() % 21;
    // A proxy per client, so that one client can be cut off alone.
    let proxies: Vec<Proxy> = (0..3)
        .map(|client| Proxy::start(server.port, seed * 3 + client, per_mille))
        .collect();
    let prefix = format!("seed{seed}");
    let frontiers: Vec<FleetFrontier> = (proxies.iter())
        .map(|proxy| {
            let mut tries = 0;
            loop {
                match FleetFrontier::connect(&config(&proxy.url(), &prefix)) {
                    Ok(frontier) => break frontier,
                    Err(Error::ServerUnavailable { .. }) if tries < 40 => tries += 1,
                    Err(other) => panic!("seed {seed}: connect: {other}"),
                }
            }
        })
        .collect();
    let blackhole_at = Duration::from_millis(plan.next() % 1000);
    let blackhole_for = Duration::from_millis(plan.next() % 1200);
    let restart = plan.chance(300);
    let restart_at = Duration::from_millis(plan.next() % 1000);
    // In one seed of five, one client is cut off past its lease (as a
    // process stopped with SIGSTOP would be): its leased pages go to the
    // others, and it finishes once it is back.
    let stalled = plan.chance(200).then(|| (plan.next() % 3) as usize);
    let stall_at = blackhole_at + blackhole_for + Duration::from_millis(plan.next() % 500);
    let fetch = crawling::fetch_slowly(&web, Duration::from_micros(200));
    let tallies = crawling::crawl_with(&frontiers, &web, &fetch, || {
        let started = Instant::now();
        let mut events = vec![(blackhole_at, 0), (restart_at, 1), (stall_at, 2)];
        events.sort();
        for (at, event) in events {
            thread::sleep(at.saturating_sub(started.elapsed()));
            match event {
                0 => proxies
                    .iter()
                    .for_each(|proxy| proxy.blackhole(blackhole_for)),
                2 => {
                    if let Some(victim) = stalled {
                        // Once it holds work (or 3 s on).
                        let holding = Instant::now();
                        while frontiers[victim].held() == (0, 0)
                            && holding.elapsed() < Duration::from_secs(3)
                        {
                            thread::sleep(Duration::from_millis(1));
                        }
                        proxies[victim].blackhole(LEASE + Duration::from_secs(1));
                    }
                }
                1 if restart => {
                    server.kill();
                    server
                        .launch()
                        .expect("the server starts again from its AOF");
                }
                _ => {}
            }
        }
        // A process with another shard count never joins.
        let other = config(&proxies[0].url(), &prefix).shards(8);
        for _ in 0..20 {
            match FleetFrontier::connect(&other) {
                Err(Error::FleetSettingsDiffer { .. }) => break,
                Err(Error::ServerUnavailable { .. }) => continue,
                Ok(_) => panic!("seed {seed}: a client with 8 shards joined a fleet of 4"),
                Err(error) => panic!("seed {seed}: {error}"),
            }
        }
    });
    let what = format!(
        "seed {seed} ({per_mille}/1000 faults of each kind, blackhole {blackhole_for:?} at \
         {blackhole_at:?}, restart {restart} at {restart_at:?}, client {stalled:?} cut off \
         past its lease at {stall_at:?})"
    );
    match stalled {
        None => crawling::each_page_once(&tallies, &expected, &what),
        Some(victim) => only_the_stalled_repeat(&tallies, &expected, victim, &what),
    }
    for frontier in &frontiers {
        assert_eq!(
            frontier.held(),
            (0, 0),
            "{what}: a client holds work at the end"
        );
    }
    let faults: u64 = (proxies.iter())
        .map(|proxy| proxy.schedule.faults.load(Ordering::Relaxed))
        .sum();
    let errors: usize = tallies.iter().map(|tally| tally.errors).sum();
    let retries: u64 = tallies.iter().map(|tally| tally.stats.retries).sum();
    eprintln!(
        "seed {seed}: {faults} reply faults, {retries} retries, {errors} errors the crawl saw"
    );
    (faults, restart)
}

#[test]
fn seeded_fault_schedules_lose_and_repeat_nothing() {
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut server = Server::start(Kind::Valkey, &[], &aof);
    let (mut faults, mut restarts) = (0, 0);
    let seeds = seeds();
    for &seed in &seeds {
        let (seed_faults, restarted) = run_seed(&mut server, seed);
        faults += seed_faults;
        restarts += usize::from(restarted);
    }
    eprintln!(
        "{} seeds passed: {faults} reply faults, {restarts} restarts from the AOF",
        seeds.len()
    );
}
