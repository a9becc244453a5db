//! The simulated world: clients, services, requests and faults, built once
//! per run from a validated [`crate::config::Scenario`] and driven by the
//! engine's event queue.

pub mod balance;
pub mod dist;
pub mod ledger;
pub mod slab;
pub mod token_bucket;
pub mod unloaded;
pub mod world;

pub use dist::Dist;
pub use slab::{Id, Slab};
pub use world::{RunOptions, World, bytes_per_instance, progress_units, simulate, simulate_with};
