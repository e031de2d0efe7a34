//! What the Seatbelt suites share: the SBPL evaluator, the worlds and the probes. Each test file
//! uses part of it, hence `dead_code` is allowed here.
#![allow(dead_code)]

pub mod probes;
pub mod sbpl;
pub mod world;
