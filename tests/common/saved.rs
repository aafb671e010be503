//! The byte layout of saved filters (FORMAT.md), for tests that break it.

/// Where the header's CRC-32C sits; it covers the bytes before it.
pub const HEADER_CRC_AT: usize = 24;

/// Where the body begins.
pub fn body_start() -> usize {
    HEADER_CRC_AT + 4
}

/// Rewrites both checksums of `bytes` (a whole saved filter) so that they
/// match its bytes again: what an attacker who knows the format does.
pub fn reseal(bytes: &mut [u8]) {
    let header = crc32c::crc32c(&bytes[..HEADER_CRC_AT]);
    bytes[HEADER_CRC_AT..body_start()].copy_from_slice(&header.to_le_bytes());
    let end = bytes.len() - 4;
    let body = crc32c::crc32c(&bytes[body_start()..end]);
    bytes[end..].copy_from_slice(&body.to_le_bytes());
}
