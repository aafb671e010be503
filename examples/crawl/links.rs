//! Finding links in a page and resolving them against the page's URL.
//!
//! Only std and the `url` crate: `tests/crawl.rs` includes this file too.

use url::Url;

/// The schemes a crawler follows; every other link (`mailto:`,
/// `javascript:`, `data:`, `ftp:` ...) is skipped.
const FOLLOWED_SCHEMES: [&str; 3] = ["http", "https", "file"];

/// The values of the `href` attributes in `html`, in order: `href="..."`,
/// `href='...'` and unquoted `href=...`, with `href` in any case and spaces
/// allowed around the `=`.
///
/// A scan, not a parser: it reads any input, however malformed, without
/// panicking, skips an `href` with no value, and stops at a quoted value
/// that never closes. Entities such as `&amp;` are left as they are.
pub fn extract_links(html: &str) -> impl Iterator<Item = &str> {
    HrefValues { html, at: 0 }
}

/// Resolves `href`, found on the page at `base`, to an absolute URL:
/// relative paths, `./`, `..`, absolute paths, scheme-relative `//host/...`
/// and absolute URLs, by [`Url::join`]. The fragment is dropped (`a#x` and
/// `a#y` are one page). `None` when the link cannot be parsed or its scheme
/// is not http, https or file.
pub fn resolve(base: &Url, href: &str) -> Option<Url> {
    let mut url = base.join(href.trim()).ok()?;
    if !FOLLOWED_SCHEMES.contains(&url.scheme()) {
        return None;
    }
    url.set_fragment(None);
    Some(url)
}

/// The iterator behind [`extract_links`]: `at` is the byte offset where the
/// search for the next `href` resumes.
struct HrefValues<'a> {
    html: &'a str,
    at: usize,
}

impl<'a> Iterator for HrefValues<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.html.as_bytes();
        while let Some(name) = find_href(bytes, self.at) {
            self.at = name + 4;
            let Some(value_start) = after_equals(bytes, self.at) else {
                continue;
            };
            // Every boundary below sits next to an ASCII byte, so each is a
            // char boundary; `get` keeps that a `None`, not a panic, anyway.
            match bytes.get(value_start) {
                Some(&quote @ (b'"' | b'\'')) => {
                    let start = value_start + 1;
                    let Some(len) = bytes[start..].iter().position(|&b| b == quote) else {
                        self.at = bytes.len();
                        return None;
                    };
                    self.at = start + len + 1;
                    return self.html.get(start..start + len);
                }
                Some(_) => {
                    let len = bytes[value_start..]
                        .iter()
                        .position(|&b| b.is_ascii_whitespace() || b == b'>')
                        .unwrap_or(bytes.len() - value_start);
                    self.at = value_start + len;
                    return self.html.get(value_start..value_start + len);
                }
                None => return None,
            }
        }
        self.at = bytes.len();
        None
    }
}

/// The offset of the next `href` (any case) at or after `from` that starts
/// an attribute name: not preceded by a letter, digit, `-` or `_`, so
/// `data-href` does not count.
fn find_href(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at + 4 <= bytes.len() {
        let offset = bytes[at..].iter().position(|&b| b == b'h' || b == b'H')?;
        at += offset;
        let is_name = bytes
            .get(at..at + 4)
            .is_some_and(|word| word.eq_ignore_ascii_case(b"href"));
        let starts_attribute = at == 0 || {
            let before = bytes[at - 1];
            !(before.is_ascii_alphanumeric() || before == b'-' || before == b'_')
        };
        if is_name && starts_attribute {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// After an attribute name ending at `at`: the offset of its value, past
/// optional spaces, an `=` and optional spaces; `None` without an `=`.
fn after_equals(bytes: &[u8], at: usize) -> Option<usize> {
    let skip_spaces = |from: usize| {
        from + bytes[from.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count()
    };
    let equals = skip_spaces(at);
    (bytes.get(equals) == Some(&b'=')).then(|| skip_spaces(equals + 1))
}
