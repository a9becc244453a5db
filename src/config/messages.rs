//! serde's messages in the words of the file format (one implementation,
//! in the policy crate).

pub use retrysim_policy::messages::{names_program_types, plain, toml_error};
