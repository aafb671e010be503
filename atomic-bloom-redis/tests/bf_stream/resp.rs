//! A RESP2/RESP3 client that keeps every reply as the server wrote it: its
//! type (a status is not a bulk string, a RESP3 boolean is not an integer),
//! its error text whole, and errors inside arrays in place, so that two
//! servers' replies compare exactly.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A reply, as sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Status(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    Set(Vec<Reply>),
    Bool(bool),
    /// A RESP3 double, big number or verbatim string: its text.
    Other(u8, Vec<u8>),
}

impl Reply {
    /// The error text, if this is an error.
    pub fn error(&self) -> Option<String> {
        match self {
            Reply::Error(text) => Some(String::from_utf8_lossy(text).into_owned()),
            _ => None,
        }
    }

    /// Whether this is the status `OK`.
    pub fn is_ok(&self) -> bool {
        matches!(self, Reply::Status(text) if text == b"OK")
    }

    /// An integer, or a RESP3 boolean as 0 / 1.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(n) => Some(*n),
            Reply::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
}

/// Bytes as `redis-cli` takes them in a double-quoted argument.
pub fn quoted(bytes: &[u8]) -> String {
    let mut text = String::from("\"");
    for &byte in bytes {
        match byte {
            b'"' => text.push_str("\\\""),
            b'\\' => text.push_str("\\\\"),
            0x20..=0x7e => text.push(byte as char),
            _ => text.push_str(&format!("\\x{byte:02x}")),
        }
    }
    text.push('"');
    text
}

/// A command as a `redis-cli` line.
pub fn command_line(args: &[Vec<u8>]) -> String {
    let parts: Vec<String> = args.iter().map(|arg| quoted(arg)).collect();
    parts.join(" ")
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, items: &[Reply]| {
            write!(f, "[")?;
            for (index, item) in items.iter().enumerate() {
                write!(f, "{}{item}", if index > 0 { ", " } else { "" })?;
            }
            write!(f, "]")
        };
        match self {
            Reply::Status(text) => write!(f, "+{}", String::from_utf8_lossy(text)),
            Reply::Error(text) => write!(f, "(error) {}", String::from_utf8_lossy(text)),
            Reply::Int(n) => write!(f, "{n}"),
            Reply::Bulk(bytes) if bytes.len() > 48 => {
                write!(f, "{}...({} bytes)", quoted(&bytes[..48]), bytes.len())
            }
            Reply::Bulk(bytes) => write!(f, "{}", quoted(bytes)),
            Reply::Nil => write!(f, "nil"),
            Reply::Array(items) => list(f, items),
            Reply::Set(items) => {
                write!(f, "set")?;
                list(f, items)
            }
            Reply::Map(pairs) => {
                write!(f, "{{")?;
                for (index, (key, value)) in pairs.iter().enumerate() {
                    write!(f, "{}{key}: {value}", if index > 0 { ", " } else { "" })?;
                }
                write!(f, "}}")
            }
            Reply::Bool(b) => write!(f, "({b})"),
            Reply::Other(kind, text) => {
                write!(f, "{}{}", *kind as char, String::from_utf8_lossy(text))
            }
        }
    }
}

/// One connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    /// Connects to 127.0.0.1:`port`, in RESP3 (`HELLO 3`) if `resp3`.
    pub fn open(port: u16, resp3: bool) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("a connection");
        stream.set_nodelay(true).unwrap();
        // A server that hangs fails the test instead of stalling it.
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        let mut conn = Conn {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        };
        if resp3 {
            let hello = conn.call(&[b"HELLO".to_vec(), b"3".to_vec()]);
            assert!(matches!(hello, Reply::Map(_)), "HELLO 3: {hello}");
        }
        conn
    }

    /// Writes a command without reading its reply.
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            let arg = arg.as_ref();
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.writer
            .write_all(&out)
            .expect("the server takes the command");
    }

    /// Reads the next reply.
    pub fn receive(&mut self) -> Reply {
        self.read().expect("a reply (did the server die?)")
    }

    /// Sends a command and reads its reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Reply {
        self.send(args);
        self.receive()
    }

    fn line(&mut self) -> std::io::Result<Vec<u8>> {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line)?;
        if line.len() < 3 || !line.ends_with(b"\r\n") {
            return Err(std::io::Error::other(format!(
                "a broken reply line: {line:?}"
            )));
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }

    fn number(text: &[u8]) -> std::io::Result<i64> {
        std::str::from_utf8(text)
            .ok()
            .and_then(|text| text.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("not a number: {text:?}")))
    }

    fn read(&mut self) -> std::io::Result<Reply> {
        let line = self.line()?;
        let (kind, rest) = (line[0], line[1..].to_vec());
        let blob = |conn: &mut Conn, length: i64| -> std::io::Result<Vec<u8>> {
            let mut bytes = vec![0; length as usize + 2];
            conn.reader.read_exact(&mut bytes)?;
            bytes.truncate(length as usize);
            Ok(bytes)
        };
        let items = |conn: &mut Conn, count: i64| -> std::io::Result<Vec<Reply>> {
            (0..count).map(|_| conn.read()).collect()
        };
        Ok(match kind {
            b'+' => Reply::Status(rest),
            b'-' => Reply::Error(rest),
            b':' => Reply::Int(Self::number(&rest)?),
            b'_' => Reply::Nil,
            b'#' => Reply::Bool(rest == b"t"),
            b',' | b'(' => Reply::Other(kind, rest),
            b'$' | b'!' | b'=' => match Self::number(&rest)? {
                -1 => Reply::Nil,
                length if kind == b'!' => Reply::Error(blob(self, length)?),
                length if kind == b'=' => Reply::Other(kind, blob(self, length)?),
                length => Reply::Bulk(blob(self, length)?),
            },
            b'*' | b'~' | b'>' => match Self::number(&rest)? {
                -1 => Reply::Nil,
                count if kind == b'~' => Reply::Set(items(self, count)?),
                count => Reply::Array(items(self, count)?),
            },
            b'%' => {
                let count = Self::number(&rest)?;
                let mut pairs = Vec::new();
                for _ in 0..count {
                    pairs.push((self.read()?, self.read()?));
                }
                Reply::Map(pairs)
            }
            other => {
                return Err(std::io::Error::other(format!(
                    "an unknown reply type {:?}",
                    other as char
                )))
            }
        })
    }
}
