//! Replies framed out of the bytes a connection delivers: the drivers
//! read bytes, this finds where each reply ends and parses it with the
//! `redis` crate's parser (RESP2, and RESP3's types should a server send
//! them).

use redis::Value;

/// The replies of one pipeline, as its bytes come in.
#[derive(Debug)]
pub(crate) struct Replies {
    wanted: usize,
    buffer: Vec<u8>,
    values: Vec<Value>,
}

impl Replies {
    /// Waiting for `wanted` replies.
    pub(crate) fn new(wanted: usize) -> Replies {
        Replies {
            wanted,
            buffer: Vec::new(),
            values: Vec::with_capacity(wanted.min(64)),
        }
    }

    /// Whether every reply is in.
    pub(crate) fn is_complete(&self) -> bool {
        self.values.len() >= self.wanted
    }

    /// Takes `bytes` read from the connection; an error when they are not
    /// replies (the connection is then of no further use).
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        while !self.is_complete() {
            let Some(length) = frame(&self.buffer[start..], 0)? else {
                break;
            };
            let value = redis::parse_redis_value(&self.buffer[start..start + length])
                .map_err(|error| format!("a reply that does not parse: {error}"))?;
            self.values.push(value);
            start += length;
        }
        self.buffer.drain(..start);
        if self.is_complete() && !self.buffer.is_empty() {
            return Err("more replies than commands sent".into());
        }
        Ok(())
    }

    /// What the driver answers for the pipeline: the replies read, and why
    /// the rest never came.
    pub(crate) fn received(self, lost: Option<String>) -> super::call::Received {
        super::call::Received {
            replies: self.values,
            lost,
        }
    }

    /// Takes the outcome of one read of the connection into `buffer`: the
    /// pipeline's answer once its replies are all in, or once the read
    /// failed, ended or brought garbage (the driver then drops the
    /// connection); `None` while more is to come.
    pub(crate) fn take(
        &mut self,
        read: std::io::Result<usize>,
        buffer: &[u8],
    ) -> Option<super::call::Received> {
        let fed = match read {
            Ok(0) => Err("the server closed the connection".to_string()),
            Ok(read) => self.feed(&buffer[..read]),
            Err(error) => Err(error.to_string()),
        };
        let lost = match fed {
            Ok(()) if !self.is_complete() => return None,
            Ok(()) => None,
            Err(reason) => Some(reason),
        };
        Some(std::mem::replace(self, Replies::new(0)).received(lost))
    }
}

/// Nesting no fleet reply comes near; deeper is taken as garbage.
const MAX_DEPTH: usize = 64;

/// The length of the first whole reply in `bytes`, `None` if it is not all
/// there yet.
fn frame(bytes: &[u8], depth: usize) -> Result<Option<usize>, String> {
    if depth > MAX_DEPTH {
        return Err("a reply nested deeper than any the fleet sends for".into());
    }
    let Some(line_end) = bytes.windows(2).position(|pair| pair == b"\r\n") else {
        return Ok(None);
    };
    let Some(&kind) = bytes.first() else {
        return Ok(None);
    };
    let header = line_end + 2;
    let number = || -> Result<i64, String> {
        let text = std::str::from_utf8(&bytes[1..line_end]).map_err(|e| e.to_string())?;
        text.parse()
            .map_err(|_| format!("a reply's length is not a number: {text:?}"))
    };
    let elements = match kind {
        // Simple string, error, integer; RESP3 null, boolean, double,
        // big number.
        b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => return Ok(Some(header)),
        // Bulk string, and RESP3's blob error and verbatim string.
        b'$' | b'!' | b'=' => {
            let length = number()?;
            if length < 0 {
                return Ok(Some(header));
            }
            let end = header + length as usize + 2;
            return Ok((bytes.len() >= end).then_some(end));
        }
        // Array, set, push: n replies; map, attribute: 2n.
        b'*' | b'~' | b'>' => number()?,
        b'%' => number()?.saturating_mul(2),
        b'|' => number()?.saturating_mul(2).saturating_add(1),
        other => return Err(format!("a reply of unknown type {:?}", other as char)),
    };
    let mut at = header;
    for _ in 0..elements.max(0) {
        match frame(&bytes[at..], depth + 1)? {
            Some(length) => at += length,
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_split_anywhere_come_out_whole() {
        let bytes =
            b"+OK\r\n:12\r\n$5\r\nab\r\nc\r\n*2\r\n$1\r\nx\r\n*1\r\n:1\r\n-ERR no\r\n$-1\r\n";
        for cut in 0..bytes.len() {
            let mut replies = Replies::new(6);
            replies.feed(&bytes[..cut]).unwrap();
            replies.feed(&bytes[cut..]).unwrap();
            assert!(replies.is_complete(), "cut at {cut}");
            let values = replies.received(None).replies;
            assert_eq!(values[1], Value::Int(12));
            assert_eq!(values[2], Value::BulkString(b"ab\r\nc".to_vec()));
            assert!(
                matches!(values[4], Value::ServerError(_)),
                "{:?}",
                values[4]
            );
            assert_eq!(values[5], Value::Nil);
        }
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(Replies::new(1).feed(b"?what\r\n").is_err());
        assert!(Replies::new(1).feed(b"$x\r\n").is_err());
        assert!(Replies::new(1).feed(b":1\r\n:2\r\n").is_err());
    }
}
