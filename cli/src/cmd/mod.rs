//! One module per command.

pub mod compare;
pub mod compress;
pub mod decompress;
pub mod demo;
pub mod dict;
pub mod inspect;
