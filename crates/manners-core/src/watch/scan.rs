//! One log file's bytes, chunk by chunk, to the requests it logs: cut into lines ([`Splitter`]),
//! each read in the file's format ([`parse`]), counted as `manners/watch/sources.py` counts them
//! (lines, requests, noise, unparseable, overlong; the first few unparseable kept to be shown),
//! and the requests between `--since` and `--until` handed on.  The same outcomes as reading
//! the file line by line in Python (`LogReader._take`), without a line crossing into Python.

use super::logs::{parse, Format, Line, Splitter};
use super::pyre::space;
use super::{Hit, Parsed};

/// Unparseable lines kept to be shown.
pub const SHOWN: usize = 5;
/// Characters kept of each (one more, so the reader can tell one was cut).
pub const SHOWN_CHARS: usize = 200;

/// What one file held, so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// Lines that are not blank.
    pub lines: u64,
    /// Requests.
    pub hits: u64,
    /// Lines the server writes that record no request.
    pub noise: u64,
    /// Lines the format does not read (overlong ones included).
    pub unparsed: u64,
    /// Lines longer than [`super::logs::MAX_LINE`] bytes.
    pub overlong: u64,
    /// Requests without a time while bounds were given (they cannot be applied: kept).
    pub untimed: u64,
}

/// An unparseable line kept to be shown: its number, and its first [`SHOWN_CHARS`] + 1
/// characters (None: an overlong line).
pub type Shown = (u64, Option<String>);

/// The requests to keep: from `since` to `until`, both included (None: unbounded).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    pub since: Option<f64>,
    pub until: Option<f64>,
}

impl Window {
    fn bounded(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }
}

/// One file being read.
#[derive(Clone, Debug)]
pub struct Scan {
    format: Format,
    splitter: Splitter,
    pub counts: Counts,
    /// Of every file read with the same `shown` budget: see [`Scan::feed`].
    pub shown: Vec<Shown>,
}

impl Scan {
    pub fn new(format: Format) -> Scan {
        Scan {
            format,
            splitter: Splitter::new(),
            counts: Counts::default(),
            shown: Vec::new(),
        }
    }

    /// Reads the lines `chunk` ends (at the end of the file, `end`, its last one too), handing
    /// each request in `window` to `each` with its line number; keeps unparseable lines while
    /// fewer than `room` are kept.  Returns the bytes consumed: the rest begins a line not yet
    /// ended, to be given again at the start of the next chunk.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        end: bool,
        window: Window,
        room: usize,
        mut each: impl FnMut(&Hit<'_>, u64),
    ) -> usize {
        let format = self.format;
        let counts = &mut self.counts;
        let shown = &mut self.shown;
        let mut keep = |number: u64, text: Option<&str>| {
            counts.unparsed += 1;
            if shown.len() < room {
                shown.push((
                    number,
                    text.map(|t| t.chars().take(SHOWN_CHARS + 1).collect()),
                ));
            }
        };
        let mut lines = self.splitter.lines(chunk, end);
        for (number, line) in &mut lines {
            let text = match line {
                Line::Overlong => {
                    counts.lines += 1;
                    counts.overlong += 1;
                    keep(number, None);
                    continue;
                }
                Line::Text(text) => text,
            };
            if text.chars().all(space) {
                continue; // blank: not a line of the log's
            }
            counts.lines += 1;
            match parse(format, &text) {
                Parsed::Unread => keep(number, Some(&text)),
                Parsed::Noise => counts.noise += 1,
                Parsed::Hit(hit) => {
                    counts.hits += 1;
                    match hit.when {
                        None if window.bounded() => counts.untimed += 1,
                        Some(when)
                            if window.since.is_some_and(|s| when < s)
                                || window.until.is_some_and(|u| when > u) =>
                        {
                            continue
                        }
                        _ => {}
                    }
                    each(&hit, number);
                }
            }
        }
        lines.consumed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JET: &str =
        "127.0.0.1 [29/Nov/2026:11:13:57 +0000] \"gemini://localhost/a\" 20 \"text/gemini\" 10";

    fn read(scan: &mut Scan, data: &[u8], piece: usize, window: Window) -> Vec<(String, u64)> {
        let mut got = Vec::new();
        let mut held: Vec<u8> = Vec::new();
        let mut at = 0;
        loop {
            let next = (at + piece).min(data.len());
            held.extend_from_slice(&data[at..next]);
            at = next;
            let end = at == data.len();
            let used = scan.feed(&held, end, window, SHOWN, |hit, n| {
                got.push((hit.target.to_string(), n))
            });
            held.drain(..used);
            if end {
                return got;
            }
        }
    }

    #[test]
    fn counts_as_python_does_in_any_chunking() {
        let long = "x".repeat(super::super::logs::MAX_LINE + 5);
        let data = format!("{JET}\n\n   \nnot a log line\n{long}\nYou are now riding on\n{JET}");
        for piece in [1, 7, 100, 1 << 20] {
            let mut scan = Scan::new(Format::Jetforce);
            let got = read(&mut scan, data.as_bytes(), piece, Window::default());
            let target = "gemini://localhost/a".to_string();
            assert_eq!(got, vec![(target.clone(), 1), (target, 7)], "piece {piece}");
            let c = &scan.counts;
            assert_eq!(
                (c.lines, c.hits, c.noise, c.unparsed, c.overlong),
                (5, 2, 1, 2, 1)
            );
            assert_eq!(
                scan.shown,
                vec![(4, Some("not a log line".into())), (5, None)]
            );
        }
    }

    #[test]
    fn the_window_keeps_what_lies_between_and_untimed_lines() {
        let t = 1795950837.0; // 2026-11-29T11:13:57Z
        let mut scan = Scan::new(Format::Jetforce);
        let late = JET.replace("13:57", "13:59");
        let data = format!("{JET}\n{late}\n");
        let got = read(
            &mut scan,
            data.as_bytes(),
            1 << 20,
            Window {
                since: Some(t + 1.0),
                until: None,
            },
        );
        assert_eq!(got.len(), 1);
        let mut scan = Scan::new(Format::Pygopherd);
        let data = "127.0.0.1 [GopherProtocol/FileHandler]: /a\n";
        let window = Window {
            since: Some(t),
            until: Some(t),
        };
        assert_eq!(read(&mut scan, data.as_bytes(), 1 << 20, window).len(), 1);
        assert_eq!(scan.counts.untimed, 1);
    }

    #[test]
    fn a_shown_line_is_cut_one_past_what_is_shown() {
        let mut scan = Scan::new(Format::Jetforce);
        let data = "é".repeat(500) + "\n";
        read(&mut scan, data.as_bytes(), 1 << 20, Window::default());
        assert_eq!(
            scan.shown[0].1.as_deref().map(|t| t.chars().count()),
            Some(SHOWN_CHARS + 1)
        );
    }
}
