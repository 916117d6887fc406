//! One line of a server's access log, read: the formats of `src/manners/watch/logs.py`.
//! (To be filled: the parsers, the line splitter.)

use super::Parsed;

/// The log formats, by their `--format` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Jetforce,
    MollyBrown,
    Agate,
    Gophernicus,
    Pygopherd,
    Combined,
}

impl Format {
    /// The format named `name` (`jetforce`, `molly-brown`, `agate`, `gophernicus`, `pygopherd`,
    /// `combined`).
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "jetforce" => Format::Jetforce,
            "molly-brown" => Format::MollyBrown,
            "agate" => Format::Agate,
            "gophernicus" => Format::Gophernicus,
            "pygopherd" => Format::Pygopherd,
            "combined" => Format::Combined,
            _ => return None,
        })
    }
}

/// `line` (its end of line removed) read as `format`.
pub fn parse(format: Format, line: &str) -> Parsed<'_> {
    let _ = (format, line);
    Parsed::Unread
}
