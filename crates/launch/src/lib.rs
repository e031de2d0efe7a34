//! placeholder

pub mod person_files;
