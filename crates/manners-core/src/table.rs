//! The line table: what a file says, line by line, in less room than the file.
//!
//! Preparing skips a byte order mark, caps the size, ends lines at LF, CRLF or a lone CR,
//! cuts lines longer than Google's buffer, and keeps every line that carries a key and a
//! value, with its number.  Blank lines and comments are not kept, nor keys spelled one of
//! the usual ways, so a table holds less than the file it came from.
//!
//! It is one pass: bit masks of every ':', '#' and line end, made eight bytes at a time,
//! take it from stop to stop, so a `key: value` line costs a few steps whatever its length.
//! Other lines go to the line grammar (`line.rs`); a test holds the two readings equal.

use std::cell::Cell;

use crate::line::{classify, split_line, trim, two_words_before_stop, Kind};

/// Google's line buffer is 2083 * 8 bytes including the terminating NUL.
pub const MAX_LINE_BYTES: usize = 2083 * 8 - 1;
/// How much of an unparsable line is kept, for its diagnostic.
const UNPARSABLE_KEPT: usize = 240;
/// How much of the start of a file is looked at to tell a binary file or an HTML page.
const HEAD_CHARS: usize = 4096;

/// The meta byte's bits: the kind (low four), the key's spelling, a missing colon.
const KIND_MASK: u8 = 0x0f;
const SPELLING_SHIFT: u8 = 4;
const STORED: u8 = 3; // the key is stored before the value, with a ':' between
const MISSING_COLON: u8 = 1 << 6;

/// Every MARK-th entry has its line number and arena offset kept whole; the others keep
/// theirs as differences from the entry before, in two bytes each.
const MARK: usize = 32;
/// A gap between line numbers too large for two bytes: that entry is marked.
const FAR: u16 = u16::MAX;

/// One kept line: meta byte, gap (two bytes), length (two bytes), in five bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Record([u8; 5]);

impl Record {
    fn new(meta: u8, gap: u16, len: u16) -> Record {
        let [g0, g1] = gap.to_le_bytes();
        let [l0, l1] = len.to_le_bytes();
        Record([meta, g0, g1, l0, l1])
    }
    fn meta(self) -> u8 {
        self.0[0]
    }
    fn gap(self) -> u16 {
        u16::from_le_bytes([self.0[1], self.0[2]])
    }
    fn len(self) -> u32 {
        u16::from_le_bytes([self.0[3], self.0[4]]) as u32
    }
}

/// An agent line: where it is, and what came between it and the agent line before.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AgentLine {
    pub(crate) entry: u32,
    pub(crate) number: u32,
    /// Its offset in the arena, to read its value at once.
    pub(crate) start: u32,
    pub(crate) kind: Kind,
    /// Rules and fields (`SINCE_RULE`, `SINCE_FIELD`) since the agent line before (or the
    /// file's start).
    pub(crate) since: u8,
}

/// An Allow or Disallow line came.
pub(crate) const SINCE_RULE: u8 = 1;
/// A Crawl-delay, Request-rate or Check line came.
pub(crate) const SINCE_FIELD: u8 = 2;

/// One kept line.
#[derive(Clone, Copy, Debug)]
pub struct LineRef<'a> {
    pub number: u32,
    pub kind: Kind,
    /// The key as written (for an unparsable line, empty).
    pub key: &'a [u8],
    /// The value, trimmed; for an unparsable line, its text without a comment.
    pub value: &'a [u8],
    pub missing_colon: bool,
}

/// Every line with a key and a value, and what was done to the file to read it.
#[derive(Debug, Default, PartialEq)]
pub struct Table {
    arena: Vec<u8>,
    /// Per entry: its meta byte (kind, key spelling, missing colon); its line number less
    /// the previous entry's (FAR: see `marks`); its bytes in the arena (a key and value fit:
    /// lines are cut at 16,663 bytes).  One record, so that keeping a line is one push.
    records: Vec<Record>,
    /// (entry, line number, arena offset) of every MARK-th entry and of every FAR one.
    marks: Vec<(u32, u32, u32)>,
    /// Line number of the last entry pushed, while the table is built.
    last_number: u32,
    /// For each entry, the first blank line before the next entry (0: none); only for
    /// entries followed by one, as (entry, line).
    blanks: Vec<(u32, u32)>,
    /// Every agent line (User-agent or Virtual-agent): groups are chosen from these alone.
    agent_lines: Vec<AgentLine>,
    /// The rules and fields (`SINCE_*`) after the last agent line, or in the whole file.
    since: u8,
    /// It has a Content-Usage or Content-Signal line: without one, usage questions are
    /// answered at once.
    pub usage: bool,
    /// Lines holding control characters or bytes that are not UTF-8.
    pub control_lines: Vec<u32>,
    /// Lines cut at MAX_LINE_BYTES.
    pub long_lines: Vec<u32>,
    /// Lines in the file (an empty file has one).
    pub n_lines: u32,
    /// Where `max_bytes` cut the input, if it did.
    pub truncated_at: Option<usize>,
    /// The first line `max_bytes` left out (when it cut the input).
    pub truncated_line: u32,
    pub bom: bool,
    pub invalid_utf8: bool,
    /// Its start looks like a binary file, or like an HTML page.
    pub binary: bool,
    pub html: bool,
}

fn is_control(b: u8) -> bool {
    (b < 9) | (b.wrapping_sub(0x0e) < 0x12) | (b == 0x7f)
}

/// Whether any byte is a control character, in chunks the compiler can vectorise.
fn any_control(s: &[u8]) -> bool {
    s.chunks(64)
        .any(|c| c.iter().fold(false, |acc, &b| acc | is_control(b)))
}

/// Control characters in `s`, counting each byte that is not part of valid UTF-8 as one (as
/// Python does, decoding with surrogateescape).
fn count_odd(s: &[u8], limit_chars: usize) -> (usize, usize) {
    let mut odd = 0;
    let mut chars = 0;
    let mut rest = s;
    while !rest.is_empty() && chars < limit_chars {
        let valid = match std::str::from_utf8(rest) {
            Ok(v) => v,
            Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or_default(),
        };
        for c in valid.chars() {
            if chars == limit_chars {
                return (odd, chars);
            }
            chars += 1;
            if c.is_ascii() && is_control(c as u8) {
                odd += 1;
            }
        }
        rest = &rest[valid.len()..];
        if !rest.is_empty() && chars < limit_chars {
            let bad = match std::str::from_utf8(rest) {
                Err(e) => e.error_len().unwrap_or(rest.len()),
                Ok(_) => 0,
            };
            let bad = bad.min(limit_chars - chars).max(1);
            odd += bad;
            chars += bad;
            rest = &rest[bad.min(rest.len())..];
        }
    }
    (odd, chars)
}

fn has_odd(line: &[u8]) -> bool {
    if line.is_ascii() {
        line.iter().any(|&b| is_control(b))
    } else {
        count_odd(line, usize::MAX).0 > 0
    }
}

/// How much of a UTF-8 byte order mark starts the data: Google skips any prefix of one.
fn bom_length(data: &[u8]) -> usize {
    data.iter()
        .zip(b"\xef\xbb\xbf")
        .take_while(|(a, b)| a == b)
        .count()
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// Where the first byte of `set` is, eight bytes at a time.
pub(crate) fn find<const N: usize>(s: &[u8], set: [u8; N]) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= s.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&s[i..i + 8]);
        let v = u64::from_le_bytes(word);
        // a zero byte of v ^ c, or a false one above a true one: the lowest hit is true
        let hit = set.iter().fold(0, |hit, &c| {
            let x = v ^ (LO * c as u64);
            hit | x.wrapping_sub(LO) & !x
        }) & HI;
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    s[i..].iter().position(|c| set.contains(c)).map(|k| i + k)
}

/// The file read as lines: each without its line end (LF, CRLF or a lone CR).
struct Lines<'a> {
    rest: &'a [u8],
    done: bool,
}

impl<'a> Lines<'a> {
    fn new(text: &'a [u8]) -> Lines<'a> {
        Lines {
            rest: text,
            done: false,
        }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.done {
            return None;
        }
        match find(self.rest, [b'\n', b'\r']) {
            Some(i) => {
                let line = &self.rest[..i];
                self.rest = &self.rest[i + eol_length(self.rest, i)..];
                Some(line)
            }
            None => {
                self.done = true;
                Some(self.rest)
            }
        }
    }
}

/// The text with each line cut at its first NUL (its line end kept), and the numbers of
/// the lines that were.
fn cut_at_nul(text: &[u8]) -> (Vec<u8>, Vec<u32>) {
    let mut out = Vec::with_capacity(text.len());
    let mut cut = Vec::new();
    let mut rest = text;
    for number in 1.. {
        let end = find(rest, [b'\n', b'\r']).unwrap_or(rest.len());
        let line = &rest[..end];
        match find(line, [0]) {
            Some(nul) => {
                out.extend_from_slice(&line[..nul]);
                cut.push(number);
            }
            None => out.extend_from_slice(line),
        }
        if end == rest.len() {
            break;
        }
        let eol = eol_length(rest, end);
        out.extend_from_slice(&rest[end..end + eol]);
        rest = &rest[end + eol..];
    }
    (out, cut)
}

/// The length of the line end at `i`: 2 for CRLF, else 1.
fn eol_length(text: &[u8], i: usize) -> usize {
    if text[i] == b'\r' && text.get(i + 1) == Some(&b'\n') {
        2
    } else {
        1
    }
}

/// 0x80 in each byte of `y` that is zero, and 0 elsewhere (exact: no borrow between bytes).
fn zero_bytes(y: u64) -> u64 {
    !((y & LOW7).wrapping_add(LOW7) | y) & HI
}

/// Bit i set where byte i of a block is one the line reader stops at: ':', '#', LF or CR.
/// Eight bytes at a time; the hits are gathered into one word with byte and bit swapped,
/// then transposed back, with no multiply per word.
#[inline(always)]
fn stop_mask(block: &[u8; 64]) -> u64 {
    let mut t = 0u64;
    for (k, w) in block.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let x = u64::from_le_bytes(b);
        let hits = zero_bytes(x ^ (LO * b':' as u64))
            | zero_bytes(x ^ (LO * b'#' as u64))
            | zero_bytes(x ^ (LO * b'\n' as u64))
            | zero_bytes(x ^ (LO * b'\r' as u64));
        // byte j of word k: bit 8j + k
        t |= (hits >> 7) << k;
    }
    transpose8(t)
}

/// The stop masks of `text`, 64 bytes each; the last block padded with bytes that are no stop.
fn stop_masks(text: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let blocks = text.chunks_exact(64);
    let rest = blocks.remainder();
    let last = (!rest.is_empty()).then(|| {
        let mut padded = [0u8; 64];
        padded[..rest.len()].copy_from_slice(rest);
        stop_mask(&padded)
    });
    blocks
        .map(|b| stop_mask(b.try_into().unwrap_or(&[0; 64])))
        .chain(last)
}

/// The 8x8 bit matrix in a word transposed: bit 8j + k goes to bit 8k + j.
fn transpose8(mut x: u64) -> u64 {
    let y = (x ^ (x >> 7)) & 0x00aa_00aa_00aa_00aa;
    x ^= y ^ (y << 7);
    let y = (x ^ (x >> 14)) & 0x0000_cccc_0000_cccc;
    x ^= y ^ (y << 14);
    let y = (x ^ (x >> 28)) & 0x0000_0000_f0f0_f0f0;
    x ^ y ^ (y << 28)
}

/// Where the next ':', '#' or line end is, from bit masks made first, 64 bytes at a time:
/// one pass over the text finds every place the line grammar turns on.
struct Stops<'a> {
    text: &'a [u8],
    masks: &'a [u64],
}

impl<'a> Stops<'a> {
    /// The stops of `text`, its masks written to `masks` (a buffer kept between files).
    fn new(text: &'a [u8], masks: &'a mut Vec<u64>) -> Stops<'a> {
        masks.clear();
        masks.extend(stop_masks(text));
        Stops { text, masks }
    }

    /// The first stop at or after `from`; the text's length when there is none.
    #[inline]
    fn next(&self, from: usize) -> usize {
        let n = self.text.len();
        let mut w = from / 64;
        let Some(&first) = self.masks.get(w) else {
            return n;
        };
        let mut m = first & (!0u64 << (from % 64));
        while m == 0 {
            w += 1;
            match self.masks.get(w) {
                Some(&next) => m = next,
                None => return n,
            }
        }
        w * 64 + m.trailing_zeros() as usize
    }

    /// The first '#' or line end at or after `from`: where a value ends.
    fn value_end(&self, from: usize) -> usize {
        let mut at = self.next(from);
        while self.text.get(at) == Some(&b':') {
            at = self.next(at + 1);
        }
        at
    }
}

/// The stops in order, each given once: the line reader only moves forward.
struct Walk<'s, 'a> {
    stops: &'s Stops<'a>,
    /// The mask being read, and its stops not given yet.
    w: usize,
    bits: u64,
}

impl<'s, 'a> Walk<'s, 'a> {
    fn new(stops: &'s Stops<'a>) -> Walk<'s, 'a> {
        let bits = stops.masks.first().copied().unwrap_or(0);
        Walk { stops, w: 0, bits }
    }

    /// The next stop; the text's length when there are no more.
    #[inline]
    fn pop(&mut self) -> usize {
        while self.bits == 0 {
            match self.stops.masks.get(self.w + 1) {
                Some(&m) => (self.w, self.bits) = (self.w + 1, m),
                None => return self.stops.text.len(),
            }
        }
        let at = self.w * 64 + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        at
    }

    /// The next stop that is not ':' nor `also`.
    fn pop_past(&mut self, also: u8) -> usize {
        loop {
            let at = self.pop();
            match self.stops.text.get(at) {
                Some(&b) if b == b':' || b == also => continue,
                _ => return at,
            }
        }
    }
}

/// Whether a file's start is an HTML page: a tag near the top, and none of its first three
/// lines without a '<' is a robots.txt line.
fn looks_like_html(head: &[u8]) -> bool {
    const TAGS: [&[u8]; 10] = [
        b"!doctype",
        b"html",
        b"head",
        b"body",
        b"title",
        b"meta",
        b"script",
        b"div",
        b"p",
        b"a",
    ];
    let mut found = false;
    for (i, _) in head.iter().enumerate().filter(|(_, &b)| b == b'<') {
        let mut j = i + 1;
        while j < head.len() && matches!(head[j], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            j += 1;
        }
        let rest = &head[j..];
        if TAGS.iter().any(|t| {
            rest.len() >= t.len()
                && rest[..t.len()].eq_ignore_ascii_case(t)
                && rest
                    .get(t.len())
                    .is_none_or(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80))
        }) {
            found = true;
            break;
        }
    }
    found
        && !head
            .split(|&b| b == b'\n')
            .take(3)
            .filter(|l| !l.contains(&b'<'))
            .any(|l| split_line(l.strip_suffix(b"\r").unwrap_or(l)).is_some())
}

/// The field a key names and which of its usual spellings it is, when it is one of them.
fn spelled(key: &[u8]) -> Option<(Kind, u8)> {
    let kind = match (key.len(), key.first()? | 0x20) {
        (5, b'a') => Kind::Allow,
        (5, b'c') => Kind::Check,
        (7, b's') => Kind::Sitemap,
        (8, b'd') => Kind::Disallow,
        (10, b'u') => Kind::UserAgent,
        (11, b'c') => Kind::CrawlDelay,
        (12, b'r') => Kind::RequestRate,
        (13, b'v') => Kind::VirtualAgent,
        (13, b'c') => Kind::ContentUsage,
        (14, b'c') => Kind::ContentSignal,
        _ => return None,
    };
    let key = ends(key);
    let spelling = kind.spellings().iter().position(|w| ends(w) == key)?;
    Some((kind, spelling as u8))
}

/// The first and last four or eight bytes of a string of 4 to 16 bytes: two of the same
/// length are equal when these are, compared without a call.
fn ends(s: &[u8]) -> (u64, u64) {
    let n = s.len();
    if n >= 8 {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&s[at..at + 8]);
            u64::from_le_bytes(w)
        };
        (word(0), word(n - 8))
    } else {
        let word = |at: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&s[at..at + 4]);
            u64::from(u32::from_le_bytes(w))
        };
        (word(0), word(n - 4))
    }
}

/// The buffers a table is read into, kept by each thread between files.
#[derive(Default)]
struct Scratch {
    arena: Vec<u8>,
    records: Vec<Record>,
    marks: Vec<(u32, u32, u32)>,
    blanks: Vec<(u32, u32)>,
    agent_lines: Vec<AgentLine>,
    /// The stop masks of the file being read (not part of a table).
    masks: Vec<u64>,
}

impl Scratch {
    fn swap(&mut self, t: &mut Table) {
        std::mem::swap(&mut self.arena, &mut t.arena);
        std::mem::swap(&mut self.records, &mut t.records);
        std::mem::swap(&mut self.marks, &mut t.marks);
        std::mem::swap(&mut self.blanks, &mut t.blanks);
        std::mem::swap(&mut self.agent_lines, &mut t.agent_lines);
    }

    fn clear(&mut self) {
        self.arena.clear();
        self.records.clear();
        self.marks.clear();
        self.blanks.clear();
        self.agent_lines.clear();
        self.masks.clear();
    }
}

/// Files up to this size are read into scratch buffers; a thread keeps them between files.
const SCRATCH_KEPT: usize = 256 << 10;

thread_local! {
    static SCRATCH: Cell<Scratch> = Cell::new(Scratch::default());
}

impl Table {
    /// Read a file.  `max_bytes` caps what is read; a line it cuts in two is dropped, since
    /// half an `Allow` would allow too much.
    pub fn new(data: &[u8], max_bytes: Option<usize>) -> Table {
        Table::read(data, max_bytes, false, Table::read_lines)
    }

    /// Read a file given as text: the same table, without checking it is UTF-8.
    pub fn of_text(text: &str, max_bytes: Option<usize>) -> Table {
        Table::read(text.as_bytes(), max_bytes, true, Table::read_lines)
    }

    /// The same table read line by line by the line grammar alone, which the one-pass
    /// reader must equal: the tests and the fuzzer check that it does.
    #[cfg(any(test, fuzzing))]
    pub fn by_line(data: &[u8], max_bytes: Option<usize>) -> Table {
        Table::read(data, max_bytes, false, |t, text, clean, _| {
            let mut number = 0;
            for mut line in Lines::new(text) {
                number += 1;
                if line.len() > MAX_LINE_BYTES {
                    line = &line[..MAX_LINE_BYTES];
                    t.long_lines.push(number);
                }
                if !clean && has_odd(line) {
                    t.control_lines.push(number);
                }
                t.read_line(number, line);
            }
            number
        })
    }

    /// A file read with `lines`, which reads its lines (clean ones need no look for odd
    /// bytes) and says how many there were.  `utf8`: the data is known to be UTF-8.
    fn read(
        data: &[u8],
        max_bytes: Option<usize>,
        utf8: bool,
        lines: impl FnOnce(&mut Table, &[u8], bool, &mut Vec<u64>) -> u32,
    ) -> Table {
        let mut t = Table::default();
        let bom = bom_length(data);
        t.bom = bom > 0;
        let mut text = &data[bom..];
        if let Some(max) = max_bytes {
            if text.len() > max {
                text = &text[..max];
                t.truncated_at = Some(max);
                let end = text.iter().rposition(|&b| b == b'\n' || b == b'\r');
                text = end.map_or(&text[..0], |e| &text[..=e]);
            }
        }
        // Text stays UTF-8 when a whole mark is skipped and when it is cut at a line end (an
        // ASCII byte), not when only the start of a character that begins like a mark is.
        let utf8 = utf8 && (bom == 0 || bom == 3);
        t.invalid_utf8 = !utf8 && std::str::from_utf8(text).is_err();
        // Most files are valid UTF-8 without control characters: then no line needs a look.
        let clean = !t.invalid_utf8 && !any_control(text);
        // the first HEAD_CHARS characters
        let head = || {
            let ascii = &text[..text.len().min(HEAD_CHARS)];
            if ascii.is_ascii() {
                return ascii;
            }
            let end = text
                .iter()
                .enumerate()
                .filter(|(_, &b)| (b & 0xc0) != 0x80)
                .nth(HEAD_CHARS)
                .map_or(text.len(), |(i, _)| i);
            &text[..end]
        };
        if !clean {
            let (odd, chars) = count_odd(text, HEAD_CHARS);
            t.binary = head().contains(&0) || odd > 4.max(chars / 20);
        }
        // the head is the first HEAD_CHARS bytes unless they hold a character that is not
        // ASCII: a '<' is looked for there first, and further only when it may be longer
        let near = &text[..text.len().min(HEAD_CHARS)];
        let may_be_html = near.contains(&b'<')
            || (text.len() > HEAD_CHARS && !near.is_ascii() && head().contains(&b'<'));
        t.html = !t.binary && may_be_html && looks_like_html(head());
        // Google's parser reads each line as a C string, up to its first NUL: so does every
        // profile.  Such lines are rare: a file holding one is read from a copy cut there.
        let cut;
        let mut nul_lines = Vec::new();
        if !clean && find(text, [0]).is_some() {
            (cut, nul_lines) = cut_at_nul(text);
            text = &cut;
        }

        // A file up to SCRATCH_KEPT is read into this thread's scratch buffers, then kept at
        // its exact size: one allocation each, where growing and shrinking its own would take
        // several.  A larger one is read into its own buffers, made large enough and then
        // shrunk in place: its pages are touched once, not twice, and no thread keeps them.
        let big = text.len() > SCRATCH_KEPT;
        let mut scratch = if big {
            Scratch::default()
        } else {
            SCRATCH.with(Cell::take)
        };
        scratch.swap(&mut t);
        t.arena.reserve(text.len());
        t.records.reserve(text.len() / 32 + 4);
        let number = lines(&mut t, text, clean, &mut scratch.masks);
        if t.truncated_at.is_some() {
            t.truncated_line = number;
        }
        if !nul_lines.is_empty() {
            t.control_lines.extend(nul_lines);
            t.control_lines.sort_unstable();
            t.control_lines.dedup();
        }
        // A final line end does not start another line; an empty file still has one.
        let ends_with_eol = text.last().is_some_and(|&b| b == b'\n' || b == b'\r');
        t.n_lines = if ends_with_eol { number - 1 } else { number }.max(1);
        if big {
            t.arena.shrink_to_fit();
            t.records.shrink_to_fit();
            t.marks.shrink_to_fit();
            t.blanks.shrink_to_fit();
            t.agent_lines.shrink_to_fit();
        } else {
            scratch.swap(&mut t);
            t.arena = scratch.arena.to_vec();
            t.records = scratch.records.to_vec();
            t.marks = scratch.marks.to_vec();
            t.blanks = scratch.blanks.to_vec();
            t.agent_lines = scratch.agent_lines.to_vec();
            scratch.clear();
            SCRATCH.with(|s| s.set(scratch));
        }
        t
    }

    /// Every line, in one pass: a `key: value` line is read between the stops around its
    /// colon; any other line (a comment, a blank, two words without a colon, a long line)
    /// goes to `read_line`.  Returns the number of the last line.
    fn read_lines(&mut self, text: &[u8], clean: bool, masks: &mut Vec<u64>) -> u32 {
        let n = text.len();
        let stops = Stops::new(text, masks);
        let mut walk = Walk::new(&stops);
        let mut pos = 0;
        let mut number: u32 = 0;
        loop {
            number += 1;
            let mut k = pos;
            while k < n && matches!(text[k], b' ' | b'\t' | 0x0b | 0x0c) {
                k += 1;
            }
            // the first ':', '#' or line end after the line's leading white space (which
            // holds none: the walk is there)
            let first = walk.pop();
            let at = text.get(first).copied();
            let (end, split) = match at {
                Some(b':') if first > k => {
                    // `key: value`: the value runs to a '#' or the line end
                    let stop = walk.pop_past(b':');
                    let end = if text.get(stop) == Some(&b'#') {
                        walk.pop_past(b'#')
                    } else {
                        stop
                    };
                    (end, Some(stop))
                }
                Some(b':' | b'#') => (walk.pop_past(b'#'), None),
                _ => (first, None),
            };
            let mut line = &text[pos..end];
            let long = line.len() > MAX_LINE_BYTES;
            if long {
                line = &line[..MAX_LINE_BYTES];
                self.long_lines.push(number);
            }
            if !clean && has_odd(line) {
                self.control_lines.push(number);
            }
            if long {
                self.read_line(number, line);
            } else if let Some(stop) = split {
                let (key, value) = (&text[k..first], &text[first + 1..stop]);
                self.keep(number, trim(key), trim(value), false);
            } else if k == end {
                self.blank(number);
            } else if at != Some(b'#') || first > k {
                // neither a comment nor `key: value`: two words, or unparsable
                let hash = if at == Some(b':') {
                    stops.value_end(first + 1)
                } else {
                    first
                };
                // what comes before the first stop holds no ':' nor '#'; a ':' first is no key
                let words = (at != Some(b':')).then(|| two_words_before_stop(&text[k..first]));
                match words.flatten() {
                    Some(s) => self.keep(number, s.key, s.value, true),
                    None => self.unparsable(trim(&text[k..hash]), number),
                }
            }
            if end >= n {
                return number;
            }
            pos = end + eol_length(text, end);
            if pos > end + 1 {
                walk.pop(); // the LF of a CRLF
            }
        }
    }

    /// One line that is not `key: value`, read by the line grammar itself.
    fn read_line(&mut self, number: u32, line: &[u8]) {
        // a comment line: nothing to keep, and not blank
        let lead = line
            .iter()
            .position(|&b| !matches!(b, b' ' | b'\t'))
            .unwrap_or(line.len());
        if line.get(lead) == Some(&b'#') {
            return;
        }
        match split_line(line) {
            Some(s) => self.keep(number, s.key, s.value, s.missing_colon),
            None => {
                let uncommented = trim(&line[..find(line, [b'#']).unwrap_or(line.len())]);
                if !uncommented.is_empty() {
                    self.unparsable(uncommented, number);
                } else if trim(line).is_empty() {
                    self.blank(number);
                }
            }
        }
    }

    /// A line that is neither blank, nor a comment, nor `key: value`: kept for diagnostics.
    fn unparsable(&mut self, uncommented: &[u8], number: u32) {
        let kept = &uncommented[..uncommented.len().min(UNPARSABLE_KEPT)];
        self.push(number, Kind::Unparsable as u8, kept.len());
        self.arena.extend_from_slice(kept);
    }

    /// A blank line: the first after each kept line is noted.
    fn blank(&mut self, number: u32) {
        if let Some(last) = self.records.len().checked_sub(1) {
            let last = last as u32;
            if self.blanks.last().is_none_or(|&(e, _)| e != last) {
                self.blanks.push((last, number));
            }
        }
    }

    /// Keep a line with a key and a value: the key only when spelled an unusual way.
    fn keep(&mut self, number: u32, key: &[u8], value: &[u8], missing_colon: bool) {
        let (kind, spelling) = match key.first().map(|&b| b | 0x20) {
            // every field's key begins with one of these letters
            Some(b'a' | b'c' | b'd' | b'r' | b's' | b'u' | b'v') => {
                spelled(key).unwrap_or_else(|| (classify(key), STORED))
            }
            _ => (Kind::Unknown, STORED),
        };
        match kind {
            Kind::UserAgent | Kind::VirtualAgent => {
                self.agent_lines.push(AgentLine {
                    entry: self.records.len() as u32,
                    number,
                    start: self.arena.len() as u32,
                    kind,
                    since: self.since,
                });
                self.since = 0;
            }
            Kind::Allow | Kind::Disallow => self.since |= SINCE_RULE,
            Kind::CrawlDelay | Kind::RequestRate | Kind::Check => self.since |= SINCE_FIELD,
            Kind::ContentUsage | Kind::ContentSignal => self.usage = true,
            _ => {}
        }
        let meta =
            kind as u8 | spelling << SPELLING_SHIFT | if missing_colon { MISSING_COLON } else { 0 };
        if spelling == STORED {
            self.push(number, meta, key.len() + 1 + value.len());
            self.arena.extend_from_slice(key);
            self.arena.push(b':');
        } else {
            self.push(number, meta, value.len());
        }
        self.arena.extend_from_slice(value);
    }

    /// A record for a line whose `len` bytes the caller puts in the arena next.
    fn push(&mut self, number: u32, meta: u8, len: usize) {
        let i = self.records.len();
        let gap = number - self.last_number;
        let far = gap >= FAR as u32;
        if i.is_multiple_of(MARK) || far {
            self.marks.push((i as u32, number, self.arena.len() as u32));
        }
        let gap = if far { FAR } else { gap as u16 };
        self.records.push(Record::new(meta, gap, len as u16));
        self.last_number = number;
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn kind(&self, i: usize) -> Kind {
        Kind::ALL[(self.records[i].meta() & KIND_MASK) as usize]
    }

    /// Line number and arena offset of entry `i`: from the mark before it, at most MARK steps.
    fn locate(&self, i: usize) -> (u32, u32) {
        let m = self.marks.partition_point(|mk| mk.0 as usize <= i) - 1;
        let (e, mut number, mut start) = self.marks[m];
        for k in e as usize..i {
            start += self.records[k].len();
            number += self.records[k + 1].gap() as u32;
        }
        (number, start)
    }

    pub fn number(&self, i: usize) -> u32 {
        self.locate(i).0
    }

    /// Entries `from..to` in order, each with its line number and value, read in one pass.
    pub fn entries(
        &self,
        from: usize,
        to: usize,
    ) -> impl Iterator<Item = (usize, u32, Kind, &[u8])> + '_ {
        self.kinds(from, to)
            .map(|(i, number, kind, start)| (i, number, kind, self.value_at(i, start)))
    }

    /// Entries `from..to` as (entry, line number, kind, arena offset), without reading their
    /// values: `value_at` reads one later.
    pub fn kinds(
        &self,
        from: usize,
        to: usize,
    ) -> impl Iterator<Item = (usize, u32, Kind, u32)> + '_ {
        let (mut number, mut start) = if from < to { self.locate(from) } else { (0, 0) };
        (from..to).map(move |i| {
            if i > from {
                start += self.records[i - 1].len();
                number = match self.records[i].gap() {
                    FAR => self.locate(i).0,
                    gap => number + gap as u32,
                };
            }
            (i, number, self.kind(i), start)
        })
    }

    /// The bytes every kept line's key and value are in: values are slices of it.
    pub(crate) fn arena(&self) -> &[u8] {
        &self.arena
    }

    /// Arena offset of entry `i`, for `value_at`.
    pub(crate) fn start(&self, i: usize) -> u32 {
        self.locate(i).1
    }

    /// The value of entry `i`, found at the arena offset `kinds` gave.
    pub fn value_at(&self, i: usize, start: u32) -> &[u8] {
        self.value_in(i, self.bytes_at(i, start))
    }

    /// The first blank line after entry `i`, before entry `i + 1`, if there is one.
    pub fn blank_after(&self, i: usize) -> Option<u32> {
        self.blanks
            .binary_search_by_key(&(i as u32), |&(e, _)| e)
            .ok()
            .map(|k| self.blanks[k].1)
    }

    fn bytes_at(&self, i: usize, start: u32) -> &[u8] {
        &self.arena[start as usize..(start + self.records[i].len()) as usize]
    }

    fn bytes(&self, i: usize) -> &[u8] {
        self.bytes_at(i, self.locate(i).1)
    }

    fn value_in<'a>(&self, i: usize, b: &'a [u8]) -> &'a [u8] {
        if (self.records[i].meta() >> SPELLING_SHIFT) & 3 == STORED
            && self.kind(i) != Kind::Unparsable
        {
            let colon = b.iter().position(|&c| c == b':').unwrap_or(0);
            &b[colon + 1..]
        } else {
            b
        }
    }

    /// The value of entry `i`, without reading its key.
    pub fn value(&self, i: usize) -> &[u8] {
        self.value_in(i, self.bytes(i))
    }

    pub fn line(&self, i: usize) -> LineRef<'_> {
        let kind = self.kind(i);
        let spelling = (self.records[i].meta() >> SPELLING_SHIFT) & 3;
        let key: &[u8] = if kind == Kind::Unparsable {
            b""
        } else if spelling == STORED {
            let b = self.bytes(i);
            &b[..b.iter().position(|&c| c == b':').unwrap_or(0)]
        } else {
            kind.spellings()[spelling as usize]
        };
        LineRef {
            number: self.number(i),
            kind,
            key,
            value: self.value(i),
            missing_colon: self.records[i].meta() & MISSING_COLON != 0,
        }
    }

    /// Every agent line, and the rules and fields after the last (`SINCE_*`).
    pub(crate) fn agent_lines(&self) -> (&[AgentLine], u8) {
        (&self.agent_lines, self.since)
    }

    /// Heap bytes the table owns.
    pub fn heap_size(&self) -> usize {
        self.agent_lines.capacity() * std::mem::size_of::<AgentLine>()
            + self.arena.capacity()
            + self.records.capacity() * std::mem::size_of::<Record>()
            + self.marks.capacity() * 12
            + self.blanks.capacity() * 8
            + (self.control_lines.capacity() + self.long_lines.capacity()) * 4
    }
}

/// The first `n` lines of a file, as the table reads them (BOM skipped, lines ended by LF).
pub fn head_lines(data: &[u8], n: usize) -> Vec<u8> {
    let skip = bom_length(data);
    let mut out = Vec::new();
    for (k, line) in Lines::new(&data[skip..]).take(n).enumerate() {
        if k > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{generated, web_corpus};

    #[test]
    fn lines_numbers_and_spellings() {
        let t = Table::new(
            b"\xef\xbb\xbfUser-agent: *\r\n\r\n# c\rDISALLOW: /a\nfoo bar baz\n",
            None,
        );
        assert!(t.bom);
        assert_eq!(t.len(), 3);
        assert_eq!(
            (t.number(0), t.kind(0), t.value(0)),
            (1, Kind::UserAgent, &b"*"[..])
        );
        let l = t.line(1);
        assert_eq!(
            (l.number, l.kind, l.key, l.value),
            (4, Kind::Disallow, &b"DISALLOW"[..], &b"/a"[..])
        );
        assert_eq!(t.kind(2), Kind::Unparsable);
        assert_eq!(t.blank_after(0), Some(2));
        assert_eq!(t.n_lines, 5);
    }

    #[test]
    fn a_cut_line_is_dropped() {
        let t = Table::new(b"Disallow: /a\nAllow: /abc", Some(20));
        assert_eq!(t.truncated_at, Some(20));
        assert_eq!(t.len(), 1);
        assert!(!t.invalid_utf8);
    }

    #[test]
    fn a_line_is_read_up_to_its_first_nul() {
        let t = Table::new(
            b"User-agent: *\r\nDisallow: /a\x00b\nAllow: /c\x00\n\x00Allow: /d\n",
            None,
        );
        assert_eq!(t.len(), 3);
        assert_eq!((t.number(1), t.value(1)), (2, &b"/a"[..]));
        assert_eq!((t.number(2), t.value(2)), (3, &b"/c"[..]));
        assert_eq!(t.control_lines, vec![2, 3, 4]);
        assert_eq!(t.n_lines, 4);
    }

    #[test]
    fn binary_and_html() {
        assert!(Table::new(b"\x00\x01\x02 junk", None).binary);
        assert!(Table::new(b"<!DOCTYPE html>\n<html><body>x</body></html>", None).html);
        assert!(!Table::new(b"User-agent: *\n<p>\n", None).html);
    }

    fn same(data: &[u8], max_bytes: Option<usize>) {
        let shown = String::from_utf8_lossy(&data[..data.len().min(200)]).into_owned();
        assert_eq!(
            Table::new(data, max_bytes),
            Table::by_line(data, max_bytes),
            "{shown:?}"
        );
        if let Ok(text) = std::str::from_utf8(data) {
            assert_eq!(
                Table::of_text(text, max_bytes),
                Table::new(data, max_bytes),
                "{shown:?}"
            );
        }
    }

    #[test]
    fn the_one_pass_reader_reads_as_the_line_grammar_does() {
        // every byte the grammar turns on, in short lines, from a fixed generator
        let alphabet: Vec<&[u8]> = b"ab:# \t\r\n\x0b\x0c/*$\x01".chunks(1).collect();
        for (round, data) in generated(0x2545_f491_4f6c_dd1d, 20_000, 40, &alphabet).enumerate() {
            same(&data, None);
            same(&data, Some(1 + round % 30));
        }
        // a character that begins as the byte order mark does: skipping its first byte
        // leaves the rest no longer UTF-8, text or not
        same("\u{f6ff}User-agent: *\nDisallow: /a\n".as_bytes(), None);
        let long = [
            b"Disallow: /".as_slice(),
            &[b'a'; MAX_LINE_BYTES],
            b"\nAllow: /b # c\n",
        ]
        .concat();
        same(&long, None);
        // a file larger than the scratch buffers is read into its own
        let big: Vec<u8> = (0..SCRATCH_KEPT / 16)
            .flat_map(|i| format!("Disallow: /{i:04x}#\n").into_bytes())
            .chain(b"User-agent: a\n\nx y\r\n<p>".iter().copied())
            .collect();
        assert!(big.len() > SCRATCH_KEPT);
        same(&big, None);
        for data in web_corpus(3) {
            same(&data, None);
            same(&data, Some(512_000));
        }
    }
}
