//! Shared fixtures for the cross-crate tests in this folder.

pub mod real_clis;
