//! `contains` and `hash_item`, which the Bloom, scalable and windowed
//! filters share: one definition, each filter giving its own first lines
//! of `contains`'s docs (what "may be in the filter" means for it).

/// `contains` and `hash_item` inside an `impl<T: ?Sized + Hash, S:
/// BuildHasher>` block of the filter named `$name` (a type of the crate's
/// root, built by `$name::new(1000, 0.01)` in the examples), which has
/// `contains_hash(&self, u64) -> bool` and a `hasher: S` field.
macro_rules! item_methods {
    (
        $name:literal;
        $(#[$contains_doc:meta])* fn contains;
        $(#[$hash_doc:meta])* fn hash_item;
    ) => {
        $(#[$contains_doc])*
        ///
        /// # Example
        ///
        /// ```
        #[doc = concat!("let f: atomic_bloom::", $name, "<[u8]> =")]
        #[doc = concat!("    atomic_bloom::", $name, "::new(1000, 0.01)?;")]
        /// f.insert(b"key");
        /// assert!(f.contains(b"key"));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[inline]
        pub fn contains(&self, item: &T) -> bool {
            self.contains_hash(self.hash_item(item))
        }

        $(#[$hash_doc])*
        ///
        /// # Example
        ///
        /// ```
        #[doc = concat!("let f: atomic_bloom::", $name, "<str> =")]
        #[doc = concat!("    atomic_bloom::", $name, "::new(1000, 0.01)?;")]
        /// assert_eq!(f.hash_item("a"), f.hash_item("a"));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[inline]
        pub fn hash_item(&self, item: &T) -> u64 {
            self.hasher.hash_one(item)
        }
    };
}

pub(crate) use item_methods;
