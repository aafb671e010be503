//! The options every builder shares (`seed`, `layout`, `sizing`): one
//! definition, each builder giving its own first lines of docs (what the
//! option means for its filter).

/// `seed`, `layout` and `sizing` setters, each given as `$(#[doc])* fn
/// name;`, inside an `impl` block of the builder of the filter named
/// `$name` (a type of the crate's root, built by `$name::builder(1000,
/// 0.01)` in the examples). The builder has a `request: Request<S>` field,
/// and a `layout: Layout` field where it takes `layout`; `seed` goes in
/// the block for the default hasher.
macro_rules! builder_options {
    ($name:literal; $($(#[$doc:meta])* fn $option:ident;)+) => {
        $($crate::builder_options::builder_options!(@option $name; $(#[$doc])* $option);)+
    };
    (@option $name:literal; $(#[$doc:meta])* seed) => {
        $(#[$doc])*
        ///
        /// # Example
        ///
        /// ```
        #[doc = concat!("use atomic_bloom::", $name, ";")]
        ///
        #[doc = concat!("let a: ", $name, "<str> = ", $name, "::builder(1000, 0.01).seed(7).build()?;")]
        #[doc = concat!("let b: ", $name, "<str> = ", $name, "::builder(1000, 0.01).seed(7).build()?;")]
        /// assert_eq!(a.hash_item("x"), b.hash_item("x"));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn seed(mut self, seed: u64) -> Self {
            self.request = self.request.seed(seed);
            self
        }
    };
    (@option $name:literal; $(#[$doc:meta])* layout) => {
        $(#[$doc])*
        ///
        /// # Example
        ///
        /// ```
        #[doc = concat!("use atomic_bloom::{Layout, ", $name, "};")]
        ///
        #[doc = concat!("let f: ", $name, "<str> =")]
        #[doc = concat!("    ", $name, "::builder(1000, 0.01).layout(Layout::Word).build()?;")]
        /// assert_eq!(f.layout(), Layout::Word);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn layout(mut self, layout: $crate::Layout) -> Self {
            self.layout = layout;
            self
        }
    };
    (@option $name:literal; $(#[$doc:meta])* sizing) => {
        $(#[$doc])*
        ///
        /// # Example
        ///
        /// ```
        #[doc = concat!("use atomic_bloom::{", $name, ", Sizing};")]
        ///
        #[doc = concat!("let f: ", $name, "<str> =")]
        #[doc = concat!("    ", $name, "::builder(1000, 0.01).sizing(Sizing::PowerOfTwo).build()?;")]
        /// assert_eq!(f.sizing(), Sizing::PowerOfTwo);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn sizing(mut self, sizing: $crate::Sizing) -> Self {
            self.request.sizing = sizing;
            self
        }
    };
}

pub(crate) use builder_options;
