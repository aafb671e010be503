//! The keys a bench times its subjects on, by index: `u64` (the index
//! itself: hashing 8 bytes is cheap, so the filter's own work dominates)
//! and URL-shaped strings as the crawl example links them
//! (`https://host{h}.example/section{s}/page{i}.html`, 40-48 bytes), built
//! before timing and read through a `Vec<String>`, as a crawler holds them.

use std::hash::Hash;

/// The keys of one run: key `index` of the sequence.
pub trait Keys: Sync {
    type Key: Hash + ?Sized + 'static;
    const NAME: &'static str;
    fn with<R>(&self, index: u64, op: impl FnOnce(&Self::Key) -> R) -> R;
}

/// `u64` keys: the index itself.
pub struct Integers;

impl Keys for Integers {
    type Key = u64;
    const NAME: &'static str = "u64";
    #[inline]
    fn with<R>(&self, index: u64, op: impl FnOnce(&u64) -> R) -> R {
        op(&index)
    }
}

/// URL-shaped keys, one `String` each, distinct per index.
pub struct Urls(pub Vec<String>);

impl Urls {
    pub fn new(count: usize) -> Self {
        Urls(
            (0..count)
                .map(|i| {
                    format!(
                        "https://host{}.example/section{}/page{i}.html",
                        i % 1500,
                        (i / 1500) % 16
                    )
                })
                .collect(),
        )
    }
}

impl Keys for Urls {
    type Key = str;
    const NAME: &'static str = "url";
    #[inline]
    fn with<R>(&self, index: u64, op: impl FnOnce(&str) -> R) -> R {
        op(&self.0[index as usize])
    }
}
