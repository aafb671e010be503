//! Items in a borrowed form, as `HashSet` takes them: a filter of `String`
//! is asked about a `&str` without a `String` being made, on every filter;
//! and a taken item moves out of the frontier without a clone.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hash};

use atomic_bloom::{
    BloomFilter, CountingBloomFilter, DefaultHasher, Frontier, ScalableBloomFilter,
    WindowedBloomFilter,
};

/// What a borrowed lookup relies on: `Borrow` promises that the owned and
/// the borrowed form hash alike, and they do under the filters' hasher.
fn hashes_alike<T: Borrow<Q> + Hash, Q: ?Sized + Hash>(owned: &T, borrowed: &Q) {
    let hasher = DefaultHasher::with_seed(7);
    assert_eq!(hasher.hash_one(owned), hasher.hash_one(borrowed));
}

#[test]
fn owned_and_borrowed_forms_hash_alike() {
    hashes_alike(&String::from("a"), "a");
    hashes_alike(&String::new(), "");
    hashes_alike(&vec![1u8, 2, 3], &[1u8, 2, 3][..]);
    hashes_alike(&Box::<str>::from("a"), "a");
    hashes_alike(&7u64, &7u64);
}

#[test]
fn a_bloom_filter_of_strings_takes_str() {
    let filter: BloomFilter<String> = BloomFilter::builder(1_000, 0.01).seed(1).build().unwrap();
    // As a HashSet<String> is asked.
    let mut set: HashSet<String> = HashSet::new();
    assert!(filter.insert("a"));
    assert!(set.insert("a".to_string()));
    assert!(filter.contains("a") && set.contains("a"));
    assert!(filter.contains(&"a".to_string()));
    assert!(!filter.insert(&"a".to_string()));
    assert_eq!(filter.hash_item("a"), filter.hash_item(&"a".to_string()));
    assert!(!filter.contains("b"));

    let bytes: BloomFilter<Vec<u8>> = BloomFilter::builder(1_000, 0.01).seed(1).build().unwrap();
    bytes.insert(&vec![1, 2, 3]);
    assert!(bytes.contains(&[1u8, 2, 3][..]));
}

#[test]
fn a_counting_filter_of_strings_takes_str() {
    let filter: CountingBloomFilter<String> = CountingBloomFilter::builder(1_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    assert!(filter.insert("a"));
    assert!(!filter.insert(&"a".to_string()));
    assert_eq!(filter.count("a"), 2);
    assert!(filter.remove("a"));
    assert!(filter.contains("a"));
    assert!(filter.remove(&"a".to_string()));
    assert!(!filter.contains("a"));
    assert_eq!(filter.hash_item("a"), filter.hash_item(&"a".to_string()));
}

#[test]
fn a_scalable_filter_of_strings_takes_str() {
    let filter: ScalableBloomFilter<String> = ScalableBloomFilter::builder(100, 0.01)
        .seed(1)
        .build()
        .unwrap();
    for i in 0..1_000 {
        filter.insert(format!("{i}").as_str());
    }
    assert!(filter.stages() > 1);
    assert!((0..1_000).all(|i| filter.contains(format!("{i}").as_str())));
    assert_eq!(filter.try_insert("0"), Ok(false));
    assert!(filter.contains(&"999".to_string()));
}

#[test]
fn a_windowed_filter_of_strings_takes_str() {
    let filter: WindowedBloomFilter<String> = WindowedBloomFilter::builder(1_000, 0.01)
        .seed(1)
        .build()
        .unwrap();
    assert!(filter.insert("a"));
    assert!(!filter.insert_if_new("a"));
    assert!(filter.contains("a") && filter.contains(&"a".to_string()));
    assert_eq!(filter.hash_item("a"), filter.hash_item(&"a".to_string()));
}

#[test]
fn a_frontier_of_strings_takes_str_and_gives_its_items_up() {
    let frontier: Frontier<String> = Frontier::new(1_000, 0.01).unwrap();
    assert!(frontier.push_ref("https://a.example/"));
    assert!(frontier.seen("https://a.example/"));
    let taken = frontier.take().unwrap();
    let pointer = taken.as_ptr();
    // Moved out, not cloned: the same heap buffer.
    let url: String = taken.into_inner();
    assert_eq!(url, "https://a.example/");
    assert_eq!(url.as_ptr(), pointer);
    // Giving the item up ends its flight, as dropping the `Taken` does.
    assert!(frontier.is_finished());
    assert!(frontier.wait_take().is_none());
}
