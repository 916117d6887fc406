//! manners-core: robots.txt parsing and decisions for the Web, Gemini and Gopher.
//!
//! A tolerant line parser ([`line`]) fills a line table ([`table`]); a [`RobotsTxt`] reads
//! the table under a [`Profile`] to delimit groups, choose the ones that apply to a robot,
//! and decide with the longest matching rule ([`rule`]).  Line numbers go all the way to
//! decisions.  No I/O, no Python: the extension module `manners._core` wraps this crate.
#![forbid(unsafe_code)]

pub mod agents;
pub mod fields;
pub mod line;
pub mod profile;
pub mod repr;
pub mod robots;
pub mod rule;
pub mod smallnet;
pub mod table;
pub mod target;
#[cfg(test)]
mod testing;
pub mod usage;
pub mod watch;

pub use line::Kind;
pub use profile::Profile;
pub use robots::{Decision, RobotsTxt};
pub use table::Table;
