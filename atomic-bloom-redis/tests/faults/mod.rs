//! A TCP proxy that deals faults from a seed: what the seeded fault
//! schedules (`fleet_schedules.rs`, `fleet_cluster_schedules.rs`) put
//! between the fleet's clients and its servers. It drops replies after the
//! server ran the command, cuts connections in the middle of a reply,
//! delays replies past the clients' timeout, blackholes the server
//! (accepts, never answers) for a while, and stalls the replication links
//! that pass through it (a replica that follows a cluster primary connects
//! to the address the primary announces: its proxy) while clients go on.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// splitmix64: the schedule's random numbers.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `per_mille` / 1000.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.next() % 1000 < per_mille
    }
}

/// What the proxy does to one chunk of a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
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

/// What the proxy does to replication links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Replication {
    Flowing,
    /// Held, both ways, until then.
    StalledUntil(Instant),
    /// Closed without forwarding what they hold: what a primary killed in
    /// a stall had sent, and its replica never got.
    Cut,
}

/// The proxy's shared state.
pub struct Schedule {
    rng: Mutex<Rng>,
    /// Faults per thousand reply chunks, each kind.
    per_mille: AtomicU64,
    /// How long a delayed reply is held: past the clients' timeout.
    delay: Duration,
    /// Until when the server is blackholed (accepted, never answered).
    blackhole_until: Mutex<Option<Instant>>,
    /// What replication links through the proxy do (clients' go on).
    replication: Mutex<Replication>,
    /// Faults dealt so far.
    pub faults: AtomicU64,
    stop: AtomicBool,
    /// Every connection's sockets, to close at the end.
    open: Mutex<Vec<TcpStream>>,
}

impl Schedule {
    fn fault(&self) -> Fault {
        let mut rng = self.rng.lock().unwrap();
        // Relaxed: a setting read alone; a new seed's takes effect soon enough.
        let per_mille = self.per_mille.load(Ordering::Relaxed);
        let fault = if rng.chance(per_mille) {
            Fault::Drop
        } else if rng.chance(per_mille) {
            Fault::Cut
        } else if rng.chance(per_mille) {
            Fault::Delay
        } else {
            Fault::None
        };
        if fault != Fault::None {
            self.faults.fetch_add(1, Ordering::Relaxed);
        }
        fault
    }

    /// Waits while the server is blackholed, and while replication links
    /// are stalled if `replication` (this connection is one); false if the
    /// connection is to be closed, what it holds dropped (a cut link).
    fn through_blackhole(&self, replication: &AtomicBool) -> bool {
        loop {
            let until = *self.blackhole_until.lock().unwrap();
            match until {
                Some(until) if Instant::now() < until && !self.stop.load(Ordering::Relaxed) => {
                    thread::sleep(Duration::from_millis(5))
                }
                _ => break,
            }
        }
        // Relaxed: set by this connection's request pump before the replica's
        // first command goes through; a chunk or two late does no harm.
        if !replication.load(Ordering::Relaxed) {
            return true;
        }
        loop {
            let state = *self.replication.lock().unwrap();
            match state {
                Replication::Cut => return false,
                Replication::StalledUntil(until)
                    if Instant::now() < until && !self.stop.load(Ordering::Relaxed) =>
                {
                    thread::sleep(Duration::from_millis(5))
                }
                _ => return true,
            }
        }
    }
}

/// A TCP proxy on 127.0.0.1 in front of `upstream`'s port.
pub struct Proxy {
    pub port: u16,
    pub schedule: Arc<Schedule>,
    accepting: Option<thread::JoinHandle<()>>,
}

fn close(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Both);
}

impl Proxy {
    /// A proxy to `upstream` dealing `per_mille` faults of each kind per
    /// thousand reply chunks, drawn from `seed`; a delayed reply is held
    /// `delay`.
    pub fn start(upstream: u16, seed: u64, per_mille: u64, delay: Duration) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let schedule = Arc::new(Schedule {
            rng: Mutex::new(Rng(seed)),
            per_mille: AtomicU64::new(per_mille),
            delay,
            blackhole_until: Mutex::new(None),
            replication: Mutex::new(Replication::Flowing),
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
                // Whether this connection is a replica's link to its primary
                // (it said REPLCONF or PSYNC).
                let replication = Arc::new(AtomicBool::new(false));
                let requests = Arc::clone(&shared);
                let (mut from, mut to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let is_replication = Arc::clone(&replication);
                thread::spawn(move || {
                    let mut buffer = vec![0u8; 64 * 1024];
                    while let Ok(read) = from.read(&mut buffer) {
                        if read == 0 {
                            break;
                        }
                        let chunk = &buffer[..read];
                        let says = |word: &[u8]| chunk.windows(word.len()).any(|w| w == word);
                        if says(b"REPLCONF") || says(b"PSYNC") {
                            // Relaxed: read by this connection's pumps alone.
                            is_replication.store(true, Ordering::Relaxed);
                        }
                        if !requests.through_blackhole(&is_replication) {
                            break;
                        }
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
                        if !replies.through_blackhole(&replication) {
                            break;
                        }
                        let chunk = &buffer[..read];
                        let sent = match replies.fault() {
                            Fault::None => to.write_all(chunk),
                            Fault::Drop => break,
                            Fault::Cut => {
                                let _ = to.write_all(&chunk[..read / 2]);
                                break;
                            }
                            Fault::Delay => {
                                thread::sleep(replies.delay);
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

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn blackhole(&self, duration: Duration) {
        *self.schedule.blackhole_until.lock().unwrap() = Some(Instant::now() + duration);
    }

    /// Holds what replication links through this proxy carry, both ways,
    /// for `duration`: the primary behind it goes on answering clients
    /// while its replica hears nothing.
    pub fn stall_replication(&self, duration: Duration) {
        *self.schedule.replication.lock().unwrap() =
            Replication::StalledUntil(Instant::now() + duration);
    }

    /// Closes the replication links, dropping what a stall held (after the
    /// primary was killed: its replica never hears what it sent last).
    pub fn cut_replication(&self) {
        *self.schedule.replication.lock().unwrap() = Replication::Cut;
    }

    /// Lets replication links through again (new ones, after a cut).
    pub fn resume_replication(&self) {
        *self.schedule.replication.lock().unwrap() = Replication::Flowing;
    }

    /// A new schedule on the same port: faults drawn from `seed`, no
    /// blackhole, no stall.
    pub fn reseed(&self, seed: u64, per_mille: u64) {
        *self.schedule.rng.lock().unwrap() = Rng(seed);
        // Relaxed: a setting read alone by the pumps.
        self.schedule.per_mille.store(per_mille, Ordering::Relaxed);
        *self.schedule.blackhole_until.lock().unwrap() = None;
        *self.schedule.replication.lock().unwrap() = Replication::Flowing;
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

/// The seeds to run: `$one=n` replays seed `n`; `$many=N` runs seeds
/// `0..N` (`default` when unset), `$many=a..b` seeds `a..b`.
pub fn seeds(one: &str, many: &str, default: u64) -> Vec<u64> {
    if let Ok(seed) = std::env::var(one) {
        return vec![seed.parse().unwrap_or_else(|_| panic!("{one} is a number"))];
    }
    let seeds = std::env::var(many).unwrap_or_else(|_| default.to_string());
    let number = |text: &str| -> u64 {
        text.parse()
            .unwrap_or_else(|_| panic!("{many} is N or a..b"))
    };
    match seeds.split_once("..") {
        Some((from, to)) => (number(from)..number(to)).collect(),
        None => (0..number(&seeds)).collect(),
    }
}
