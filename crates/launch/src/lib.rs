//! placeholder

pub mod seatbelt;
