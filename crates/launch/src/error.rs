use std::io;

/// Everything that can stop a launch. Each message names the thing and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] sandbox_core::ConfigError),
    #[error(transparent)]
    Policy(#[from] sandbox_core::PolicyError),
    #[error(transparent)]
    Adapter(#[from] sandbox_core::AdapterError),
    #[error(transparent)]
    Plan(#[from] crate::linux::plan::PlanError),
    #[error("unknown CLI `{name}`: use one of {known}")]
    UnknownCli { name: String, known: String },
    #[error("HOME is not set: set it to the person's home folder")]
    NoHome,
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    #[error("{0}")]
    BadInput(String),
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// Bad input (exit status 2) as opposed to a failure of the machine.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Error::Config(_)
                | Error::Policy(_)
                | Error::NoHome
                | Error::Adapter(_)
                | Error::UnknownCli { .. }
                | Error::BadInput(_)
        ) || matches!(self, Error::Plan(e) if e.is_bad_input())
    }
}
