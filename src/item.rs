//! [`AsItem`]: what bulk inserts (`par_insert`, `Extend`) take, so that a
//! crawler's `Vec<String>` goes into a `BloomFilter<str>` as it is.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::sync::PlainArc;

/// A value that stands for an item of type `T` of a filter: `T` itself, a
/// reference to it, or an owner of it (`String` or `&String` for `str`,
/// `Vec<u8>` or `&Vec<u8>` for `[u8]`, `Box`, `Arc`, `Cow`).
///
/// What [`par_insert`](crate::BloomFilter::par_insert) and every filter's
/// `Extend` take, so that the items a program holds go in as they are:
/// `seen.par_insert(urls.par_iter())` with `urls: Vec<String>` and
/// `seen: BloomFilter<str>`, or `seen.extend(&urls)`. The filter hashes
/// [`as_item`](Self::as_item), exactly as `insert(item.as_item())` would.
///
/// [`Borrow`](std::borrow::Borrow) cannot serve here: `&String` is not
/// `Borrow<str>`, and no blanket impl can cover both an owned value and a
/// reference to an owner. Implement it for your own owner types as you
/// would `Borrow`: `impl AsItem<str> for Url` (and for `&Url`).
///
/// # Example
///
/// ```
/// use atomic_bloom::{AsItem, BloomFilter};
///
/// struct Url(String);
/// impl AsItem<str> for Url {
///     fn as_item(&self) -> &str {
///         &self.0
///     }
/// }
///
/// let mut seen: BloomFilter<str> = BloomFilter::new(1_000, 0.01)?;
/// let urls = vec!["https://a.example/".to_string(), "https://b.example/".to_string()];
/// seen.extend(&urls);
/// seen.extend([Url("https://c.example/".into())]);
/// assert!(seen.contains("https://b.example/") && seen.contains("https://c.example/"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// An item of another type does not go in: a filter of `str` takes no
/// `u64` (nor a `[u8]`, whose hash differs from a `str`'s).
///
/// ```compile_fail
/// let seen: atomic_bloom::BloomFilter<str> = atomic_bloom::BloomFilter::new(100, 0.01).unwrap();
/// let mut seen = seen;
/// seen.extend(vec![1u64, 2]);
/// ```
pub trait AsItem<T: ?Sized> {
    /// The item this value stands for.
    fn as_item(&self) -> &T;
}

/// The item itself, by value (an integer from a range, an owned key).
impl<T> AsItem<T> for T {
    #[inline(always)]
    fn as_item(&self) -> &T {
        self
    }
}

/// A reference to the item (`&u64` from a `Vec<u64>`, `&str`).
impl<T: ?Sized> AsItem<T> for &T {
    #[inline(always)]
    fn as_item(&self) -> &T {
        self
    }
}

/// A reference to a reference (`&&str` from a `Vec<&str>`).
impl<T: ?Sized> AsItem<T> for &&T {
    #[inline(always)]
    fn as_item(&self) -> &T {
        self
    }
}

/// An owner of a `T` and a reference to one: each `impl` pair makes
/// `Owner: AsItem<T>` and `&Owner: AsItem<T>`.
macro_rules! owners {
    ($([$($generics:tt)*] $owner:ty => $item:ty;)*) => {$(
        impl<$($generics)*> AsItem<$item> for $owner {
            #[inline(always)]
            fn as_item(&self) -> &$item {
                self
            }
        }

        impl<$($generics)*> AsItem<$item> for &$owner {
            #[inline(always)]
            fn as_item(&self) -> &$item {
                AsItem::<$item>::as_item(*self)
            }
        }
    )*};
}

owners! {
    [] String => str;
    [X] Vec<X> => [X];
    [X, const N: usize] [X; N] => [X];
    [X: ?Sized] Box<X> => X;
    [X: ?Sized] PlainArc<X> => X;
    [X: ?Sized] Rc<X> => X;
    ['a, X: ?Sized + ToOwned] Cow<'a, X> => X;
    [] PathBuf => Path;
    [] OsString => OsStr;
}
