//! The original faucet_core state store, for the side-by-side benchmark.
//!
//! `state` and `state_key` are the original sources, extracted from the seed
//! files by `build.rs` at build time and compiled unchanged.  `error` and
//! `check` are stand-ins written here for the two modules of the original
//! crate they reference (`crate::error::FaucetError`, `crate::check::*`): the
//! smallest types that let them compile and their tests run.  Neither is on
//! a get, put, list or export code path, except `FaucetError::State` as the
//! error type.

pub mod check;
pub mod error;

include!(concat!(env!("OUT_DIR"), "/seed/modules.rs"));
