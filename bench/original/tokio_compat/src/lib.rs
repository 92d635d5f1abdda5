//! tokio as it is, with `tokio::fs::try_exists` added when the tokio at hand
//! predates it (Debian 12 packages tokio 1.24; `try_exists` came in 1.27).
//!
//! The original `state.rs` calls `tokio::fs::try_exists` only in `delete` and
//! in the one-time legacy-name migration, never on a get, put, list or export.
//! It is written as tokio writes it: `std::path::Path::try_exists` on the
//! blocking pool.

pub use tokio::*;

/// `tokio::fs`, plus `try_exists`.
pub mod fs {
    pub use tokio::fs::*;

    use std::io;
    use std::path::Path;

    /// Whether `path` exists (tokio >= 1.27's `tokio::fs::try_exists`).
    pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
        let path = path.as_ref().to_owned();
        match tokio::task::spawn_blocking(move || path.try_exists()).await {
            Ok(res) => res,
            Err(_) => Err(io::Error::other("background task failed")),
        }
    }
}
