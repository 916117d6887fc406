//! `manners watch` without I/O: a server's access log read line by line ([`logs`]) and folded
//! into per-client evidence ([`fold`]).  It is here, in the engine, rather than in Python because
//! a log is millions of lines: the per-line work must cost well under a microsecond's worth of
//! interpreter calls, so no line crosses into Python.  Python reads the files (gzip, rotation,
//! following) and turns the fold's sums into a report.

use std::borrow::Cow;

pub mod fold;
pub mod logs;
mod pyre;
pub mod scan;

/// One request, as much of it as a log line tells (Python's `manners.watch.logs.Hit`).
/// Text the client sent is as it sent it: the server's own escapes undone.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit<'a> {
    /// Epoch seconds; None when the format records no time.
    pub when: Option<f64>,
    /// The client's address as logged (IPv6 brackets removed); None for `-` or nothing.
    pub client: Option<Cow<'a, str>>,
    /// "gemini", "gopher", "http", "https", "spartan" or "web" (a Web log that does not say which).
    pub scheme: &'static str,
    /// The authority asked for (`host` or `host:port`, lower-cased), when logged.
    pub host: Option<Cow<'a, str>>,
    /// The URL, path or selector as requested.
    pub target: Cow<'a, str>,
    /// As logged: "20", "44", "200"; None when the format logs none.
    pub status: Option<&'a str>,
    /// The Web User-Agent; None when not sent or the format has none.
    pub agent: Option<Cow<'a, str>>,
    /// Bytes sent, when logged.
    pub size: Option<u64>,
}

/// What one line of a log is.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed<'a> {
    /// A request.
    Hit(Hit<'a>),
    /// A line the server writes that records no request (its start, an error after a request).
    Noise,
    /// A line the format does not read.
    Unread,
}
