//! What the blocking and the async clients answer alike, without I/O:
//! their counts, their configuration, their `Debug` (and a frontier's
//! held URLs), written once for both drivers.

/// `stats`, `config` and `Debug` for a seen-set (`seen`) or a frontier
/// (`frontier`, with `held`), whose `Client` is at `self.core.client`.
macro_rules! client_accessors {
    (seen $type:ident) => {
        impl $type {
            /// What this client did so far.
            pub fn stats(&self) -> $crate::FleetStats {
                self.core.client.stats()
            }

            /// The configuration it connected with.
            pub fn config(&self) -> &$crate::FleetConfig {
                &self.core.client.config
            }
        }

        impl std::fmt::Debug for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($type))
                    .field("client", &self.core.client)
                    .finish_non_exhaustive()
            }
        }
    };
    (frontier $type:ident) => {
        impl $type {
            /// URLs taken from the server and not yet popped, and popped and
            /// not yet completed, by this process.
            pub fn held(&self) -> (usize, usize) {
                self.core.held()
            }

            /// What this client did so far.
            pub fn stats(&self) -> $crate::FleetStats {
                self.core.client.stats()
            }

            /// The configuration it connected with.
            pub fn config(&self) -> &$crate::FleetConfig {
                &self.core.client.config
            }
        }

        impl std::fmt::Debug for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($type))
                    .field("client", &self.core.client)
                    .field("held", &self.held())
                    .finish_non_exhaustive()
            }
        }
    };
}

pub(crate) use client_accessors;
