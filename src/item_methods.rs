//! `contains` and `hash_item`, which the Bloom, scalable and windowed
//! filters share: one definition, each filter giving its own first lines
//! of `contains`'s docs (what "may be in the filter" means for it). Both
//! take the item in any borrowed form, as `HashSet::contains` does.

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
        /// Takes the item or any borrowed form of it, as
        /// [`HashSet::contains`](std::collections::HashSet::contains)
        /// does: `contains("key")` on a filter of `String`. The borrowed
        /// form must hash as the item does, which
        /// [`Borrow`](std::borrow::Borrow) promises (`String` and `str`,
        /// `Vec<u8>` and `[u8]` hash alike).
        ///
        /// # Example
        ///
        /// ```
        #[doc = concat!("let f: atomic_bloom::", $name, "<String> =")]
        #[doc = concat!("    atomic_bloom::", $name, "::new(1000, 0.01)?;")]
        /// f.insert("key");
        /// assert!(f.contains("key"));
        /// assert!(f.contains(&"key".to_string()));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[inline]
        pub fn contains<Q>(&self, item: &Q) -> bool
        where
            T: ::std::borrow::Borrow<Q>,
            Q: ?Sized + ::std::hash::Hash,
        {
            self.contains_hash(self.hash_item(item))
        }

        $(#[$hash_doc])*
        ///
        /// # Example
        ///
        /// ```
        #[doc = concat!("let f: atomic_bloom::", $name, "<String> =")]
        #[doc = concat!("    atomic_bloom::", $name, "::new(1000, 0.01)?;")]
        /// assert_eq!(f.hash_item("a"), f.hash_item(&String::from("a")));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[inline]
        pub fn hash_item<Q>(&self, item: &Q) -> u64
        where
            T: ::std::borrow::Borrow<Q>,
            Q: ?Sized + ::std::hash::Hash,
        {
            self.hasher.hash_one(item)
        }
    };
}

pub(crate) use item_methods;
