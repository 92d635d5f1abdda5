//! Stand-in for the original `crate::error`: the one variant the state store
//! uses.

use std::fmt;

/// The error the state store returns.
#[derive(Debug)]
#[non_exhaustive]
pub enum FaucetError {
    /// A state store failure, with its message.
    State(String),
    /// Any other failure.  The original has many more variants; this one
    /// keeps the seed's `match` arms past `State` reachable, as they are there.
    Other(String),
}

impl fmt::Display for FaucetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::State(msg) => write!(f, "state error: {msg}"),
            Self::Other(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for FaucetError {}
