//! retrysim: a deterministic discrete-event simulator of retry policies,
//! idempotency and overload in service graphs.
//!
//! Data flows one way: [`config`] (files, overrides, validation) →
//! [`model`] (the world of one run, on the [`engine`]) → [`metrics`] →
//! [`analysis`] (replications, statistics) → [`output`]. [`policy`] holds
//! the retry decision as pure functions; [`cli`] the command line.

pub mod analysis;
pub mod charts;
pub mod cli;
pub mod config;
pub mod emulate;
pub mod engine;
pub mod error;
pub mod import;
pub mod interrupt;
pub mod metrics;
pub mod model;
pub mod output;
pub mod policy;
pub mod progress;
pub mod teardown;
pub mod traces;
pub mod words;

pub use error::InputError;
