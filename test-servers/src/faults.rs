//! A TCP proxy that deals faults from a seed: what the fleet's seeded fault
//! schedules (`atomic-bloom-fleet/tests/schedules.rs`, `cluster_schedules.rs`) put
//! between the fleet's clients and its servers. It drops replies after the
//! server ran the command, cuts connections in the middle of a reply,
//! delays replies past the clients' timeout, blackholes the server
//! (accepts, never answers) for a while, and stalls the replication links
//! that pass through it (a replica that follows a cluster primary connects
//! to the address the primary announces: its proxy) while clients go on.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub use crate::rng::Rng;

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

/// The proxy's shared state.
pub struct Schedule {
    rng: Mutex<Rng>,
    /// Faults per thousand reply chunks, each kind.
    per_mille: AtomicU64,
    /// How long a delayed reply is held: past the clients' timeout.
    delay: Duration,
    /// Until when the server is blackholed (accepted, never answered).
    blackhole_until: Mutex<Option<Instant>>,
    /// Until when replication links are held, both ways (clients' go on).
    replication_stalled_until: Mutex<Option<Instant>>,
    /// Cuts of the replication links so far: a replication link opened
    /// before the last cut is closed, what it holds dropped.
    replication_cuts: AtomicU64,
    /// Faults dealt so far to clients' connections (a replication link's
    /// are not counted: the replica connects again and resumes).
    pub faults: AtomicU64,
    /// A client's request holding these bytes loses its reply (the
    /// connection closes when the reply comes), once; see
    /// [`Proxy::drop_reply_to`].
    drop_reply_to: Mutex<Option<Vec<u8>>>,
    /// Replies dropped by `drop_reply_to` so far.
    pub dropped_on_request: AtomicU64,
    stop: AtomicBool,
    /// Every open connection's sockets (client side, server side), by
    /// connection number, to close at the end; a connection's pumps take
    /// it out when they end.
    open: Mutex<HashMap<u64, (TcpStream, TcpStream)>>,
}

/// One proxied connection, as its two pumps see it.
struct Link {
    number: u64,
    /// A replica's link to its primary (it said REPLCONF or PSYNC).
    replication: AtomicBool,
    /// The next reply is dropped (`drop_reply_to` matched the request).
    drop_next_reply: AtomicBool,
    /// `replication_cuts` when the connection was opened.
    cuts_at_open: u64,
}

impl Link {
    fn is_replication(&self) -> bool {
        // Relaxed: set by this connection's request pump before the
        // replica's first command goes through; read by its pumps alone.
        self.replication.load(Ordering::Relaxed)
    }
}

impl Schedule {
    fn fault(&self, link: &Link) -> Fault {
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
        if fault != Fault::None && !link.is_replication() {
            // Relaxed: a tally read after the pumps' work is done.
            self.faults.fetch_add(1, Ordering::Relaxed);
        }
        fault
    }

    /// Whether `link` was cut (a replication link opened before the last
    /// cut).
    fn was_cut(&self, link: &Link) -> bool {
        // Relaxed: a cut made before the primary's kill is seen by the
        // pumps' next look, and a pump that looks late still closes.
        link.is_replication() && self.replication_cuts.load(Ordering::Relaxed) != link.cuts_at_open
    }

    /// Waits while the server is blackholed, and while replication links
    /// are stalled if `link` is one; false if the connection is to be
    /// closed, what it holds dropped (a cut replication link).
    fn through_blackhole(&self, link: &Link) -> bool {
        let stalls: &[&Mutex<Option<Instant>>] = if link.is_replication() {
            &[&self.blackhole_until, &self.replication_stalled_until]
        } else {
            &[&self.blackhole_until]
        };
        for until in stalls {
            while self.holds(until) {
                if self.was_cut(link) {
                    return false;
                }
                thread::sleep(Duration::from_millis(5));
            }
        }
        !self.was_cut(link)
    }

    /// Whether `until` names an instant still to come (and the proxy runs).
    fn holds(&self, until: &Mutex<Option<Instant>>) -> bool {
        let until = *until.lock().unwrap();
        // Relaxed: a flag read alone; the pumps stop soon after it is set.
        until.is_some_and(|until| Instant::now() < until) && !self.stop.load(Ordering::Relaxed)
    }

    /// Ends connection `number`: closes both sockets, forgets them.
    fn close_link(&self, number: u64) {
        if let Some((client, server)) = self.open.lock().unwrap().remove(&number) {
            close(&client);
            close(&server);
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
            replication_stalled_until: Mutex::new(None),
            replication_cuts: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            drop_reply_to: Mutex::new(None),
            dropped_on_request: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            open: Mutex::new(HashMap::new()),
        });
        let shared = Arc::clone(&schedule);
        let accepting = thread::spawn(move || {
            let mut number = 0u64;
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
                let (Ok(requests_in), Ok(requests_out), Ok(kept_client), Ok(kept_server)) = (
                    client.try_clone(),
                    server.try_clone(),
                    client.try_clone(),
                    server.try_clone(),
                ) else {
                    // Out of descriptors: refuse this one, as a full server would.
                    close(&client);
                    close(&server);
                    continue;
                };
                number += 1;
                shared
                    .open
                    .lock()
                    .unwrap()
                    .insert(number, (kept_client, kept_server));
                let link = Arc::new(Link {
                    number,
                    replication: AtomicBool::new(false),
                    drop_next_reply: AtomicBool::new(false),
                    // Relaxed: a cut after this load closes the link; one
                    // before it belongs to links opened earlier.
                    cuts_at_open: shared.replication_cuts.load(Ordering::Relaxed),
                });
                let (requests, request_link) = (Arc::clone(&shared), Arc::clone(&link));
                let (mut from, mut to) = (requests_in, requests_out);
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
                            request_link.replication.store(true, Ordering::Relaxed);
                        }
                        if !request_link.is_replication() {
                            let mut armed = requests.drop_reply_to.lock().unwrap();
                            if armed.as_deref().is_some_and(says) {
                                *armed = None;
                                // SeqCst: stored before the request goes on,
                                // so the reply pump sees it with the reply.
                                request_link.drop_next_reply.store(true, Ordering::SeqCst);
                            }
                        }
                        if !requests.through_blackhole(&request_link) {
                            break;
                        }
                        if to.write_all(&buffer[..read]).is_err() {
                            break;
                        }
                    }
                    close(&from);
                    close(&to);
                    requests.close_link(request_link.number);
                });
                let replies = Arc::clone(&shared);
                let (mut from, mut to) = (server, client);
                thread::spawn(move || {
                    let mut buffer = vec![0u8; 64 * 1024];
                    while let Ok(read) = from.read(&mut buffer) {
                        if read == 0 {
                            break;
                        }
                        if !replies.through_blackhole(&link) {
                            break;
                        }
                        let chunk = &buffer[..read];
                        // SeqCst: see the request pump's store.
                        if link.drop_next_reply.swap(false, Ordering::SeqCst) {
                            // Relaxed: a tally the test reads after the fact.
                            replies.dropped_on_request.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                        let sent = match replies.fault(&link) {
                            Fault::None => to.write_all(chunk),
                            Fault::Drop => break,
                            Fault::Cut => {
                                let _ = to.write_all(&chunk[..read / 2]);
                                break;
                            }
                            Fault::Delay => {
                                thread::sleep(replies.delay);
                                if replies.was_cut(&link) {
                                    break;
                                }
                                to.write_all(chunk)
                            }
                        };
                        if sent.is_err() {
                            break;
                        }
                    }
                    close(&from);
                    close(&to);
                    replies.close_link(link.number);
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
        *self.schedule.replication_stalled_until.lock().unwrap() = Some(Instant::now() + duration);
    }

    /// The next client request through this proxy that holds `bytes`
    /// loses its reply: the server runs it, the connection closes when the
    /// reply comes. Once; `dropped_on_request` counts it.
    pub fn drop_reply_to(&self, bytes: &[u8]) {
        *self.schedule.drop_reply_to.lock().unwrap() = Some(bytes.to_vec());
    }

    /// Closes every replication link open now, dropping what a stall held
    /// (after the primary was killed: its replica never hears what it sent
    /// last), and ends the stall: links opened from now on flow.
    pub fn cut_replication(&self) {
        // Relaxed: the pumps look at it every 5 ms while they hold a chunk,
        // and before forwarding any.
        self.schedule
            .replication_cuts
            .fetch_add(1, Ordering::Relaxed);
        *self.schedule.replication_stalled_until.lock().unwrap() = None;
    }

    /// A new schedule on the same port: faults drawn from `seed`, no
    /// blackhole, no stall.
    pub fn reseed(&self, seed: u64, per_mille: u64) {
        *self.schedule.rng.lock().unwrap() = Rng(seed);
        // Relaxed: a setting read alone by the pumps.
        self.schedule.per_mille.store(per_mille, Ordering::Relaxed);
        *self.schedule.blackhole_until.lock().unwrap() = None;
        *self.schedule.replication_stalled_until.lock().unwrap() = None;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.schedule.stop.store(true, Ordering::Relaxed);
        for (_, (client, server)) in self.schedule.open.lock().unwrap().drain() {
            close(&client);
            close(&server);
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
