//! Stand-in for the `metrics` crate, which Debian does not package.  The seed
//! (`state_key.rs`) only calls `metrics::counter!(name, labels...).increment(1)`
//! when a state key migration moves or races; the store's get/put/list code
//! paths never reach it.  No recorder is installed in the original either
//! unless the CLI sets one up, so a no-op is what the library itself does.

/// A counter handle whose increments go nowhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counter;

impl Counter {
    /// Does nothing.
    pub fn increment(&self, _value: u64) {}
}

/// `counter!("name", "label" => "value", ...)`: a [`Counter`] that records nothing.
#[macro_export]
macro_rules! counter {
    ($($tokens:tt)*) => {
        $crate::Counter
    };
}
