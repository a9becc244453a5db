//! The discrete-event engine: an integer-nanosecond clock, a deterministic
//! event queue and counter-based random streams.
//!
//! The engine knows nothing about clients, services or retries: it orders
//! opaque, copyable events in time and hands out reproducible random numbers.

mod binheap;
pub mod clock;
mod lane;
pub mod queue;
mod radix;
pub mod random;

pub use clock::{NEVER, Nanos, from_secs_f64, nanos_f64, to_secs_f64};
pub use queue::EventQueue;
pub use random::{KeyedRandom, Stream};
