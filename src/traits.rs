//! Standard traits that several filters implement alike, each written once
//! as a macro the filter's module invokes with its own docs: `Extend` by
//! `insert`, and the fixed-size filters' `Debug`, `PartialEq` and `Eq`.

/// `Extend<A>` for every [`AsItem<T>`](crate::AsItem) `A`, inserting one
/// item at a time, for a filter whose `insert(&T)` takes `&self`.
macro_rules! extend_by_insert {
    ($(#[$doc:meta])* impl Extend for $filter:ident;) => {
        $(#[$doc])*
        impl<T, S, A> Extend<A> for $filter<T, S>
        where
            T: ?Sized + std::hash::Hash,
            S: std::hash::BuildHasher,
            A: crate::AsItem<T>,
        {
            fn extend<I: IntoIterator<Item = A>>(&mut self, items: I) {
                for item in items {
                    self.insert(item.as_item());
                }
            }
        }
    };
}

/// `Debug`, `PartialEq` and `Eq` of a fixed-size filter (its fields
/// `geometry`, `target_rate`, `hasher` and an array with `same`): `Debug`
/// shows the type's own leading fields, then the parameters every such
/// filter has; equal means built alike and holding the same array.
macro_rules! fixed_filter_traits {
    (
        $filter:ident, debug [$($leading:ident),*], same $array:ident,
        $(#[$eq_doc:meta])*
        impl PartialEq;
    ) => {
        impl<T: ?Sized, S: std::fmt::Debug> std::fmt::Debug for $filter<T, S> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($filter))
                    $(.field(stringify!($leading), &self.$leading()))*
                    .field("capacity", &self.capacity())
                    .field("target_fpr", &self.target_rate)
                    .field("num_hashes", &self.num_hashes())
                    .field("sizing", &self.sizing())
                    .field("memory_bytes", &self.memory_bytes())
                    .field("hasher", &self.hasher)
                    .finish_non_exhaustive()
            }
        }

        $(#[$eq_doc])*
        impl<T: ?Sized, S: PartialEq> PartialEq for $filter<T, S> {
            fn eq(&self, other: &Self) -> bool {
                std::ptr::eq(self, other)
                    || (self.geometry == other.geometry
                        && self.target_rate.to_bits() == other.target_rate.to_bits()
                        && self.hasher == other.hasher
                        && self.$array.same(&other.$array))
            }
        }

        impl<T: ?Sized, S: Eq> Eq for $filter<T, S> {}
    };
}

pub(crate) use {extend_by_insert, fixed_filter_traits};
