//! Stand-in for the original `crate::check` (the `faucet doctor` probes):
//! what `StateStore::check` and its tests use, nothing more.

use std::time::Duration;

/// What a probe may look at (nothing, here).
#[derive(Debug, Clone, Default)]
pub struct CheckContext {}

/// How one probe came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeStatus {
    /// It passed.
    Pass,
    /// It failed, with what went wrong and what to do about it.
    Fail {
        message: String,
        hint: Option<String>,
    },
    /// It was not run, and why.
    Skip { reason: String },
}

/// One named probe and its outcome.
#[derive(Debug, Clone)]
pub struct Probe {
    pub name: String,
    pub elapsed: Duration,
    pub status: ProbeStatus,
}

impl Probe {
    /// A probe that passed.
    pub fn pass(name: impl Into<String>, elapsed: Duration) -> Self {
        Self {
            name: name.into(),
            elapsed,
            status: ProbeStatus::Pass,
        }
    }

    /// A probe that failed, with a hint.
    pub fn fail_hint(
        name: impl Into<String>,
        elapsed: Duration,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            elapsed,
            status: ProbeStatus::Fail {
                message: message.into(),
                hint: Some(hint.into()),
            },
        }
    }
}

/// The probes of one check.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub probes: Vec<Probe>,
}

impl CheckReport {
    /// A report of one probe.
    pub fn single(probe: Probe) -> Self {
        Self {
            probes: vec![probe],
        }
    }

    /// The report of a store that has no check: one skipped probe.
    pub fn not_implemented() -> Self {
        Self::single(Probe {
            name: "check".into(),
            elapsed: Duration::ZERO,
            status: ProbeStatus::Skip {
                reason: "not implemented".into(),
            },
        })
    }

    /// How many probes failed.
    pub fn failed_count(&self) -> usize {
        self.probes
            .iter()
            .filter(|p| matches!(p.status, ProbeStatus::Fail { .. }))
            .count()
    }
}
