//! Links of small-net pages, sans IO: a gemtext page's `=>` lines and a Gopher menu's items.
//!
//! The crawler's inner loop (`manners/crawl/links.py` drives it).  The scanners read a page
//! line by line and keep its distinct links in page order; a link of one of the shapes nearly
//! every link has is normalised here by gluing it onto a prefix the caller computed (with its
//! URL normaliser) for the page, a host or a run of "../"; anything else is handed back to the
//! caller as an [`GemEvent`] / [`MenuEvent`], and the scan resumes where it stopped.  The
//! caller answers questions (`set_head`, `set_dots`, `set_place`) and adds the links it
//! normalised itself (`links.add`), so that dedupe, `max_links` and the count of lines past it
//! follow page order exactly.  A scan runs a budget of bytes at a time ([`GemEvent::Pause`]).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

/// Entries kept per memo of targets handed back (the caller's `MEMO_MAX`).
pub const MEMO_MAX: usize = 50_000;
/// The longest URL the crawler requests.
pub const MAX_REQUEST_BYTES: usize = 1024;

// -- character classes (RFC 3986 as manners/crawl/urls.py spells them) ----------------------

const fn class_table() -> [u8; 256] {
    // bit 1: unreserved; 2: raw in a query (urls._QUERY_SAFE)
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let unreserved = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~');
        let sub = matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'/'
                | b'?'
        );
        t[b] = (unreserved as u8) | (((unreserved || sub) as u8) << 1);
        b += 1;
    }
    t
}

static CLASSES: [u8; 256] = class_table();

fn unreserved(b: u8) -> bool {
    CLASSES[usize::from(b)] & 1 != 0
}

/// Raw in a query (and in a whole Gopher path): urls._QUERY_SAFE.
fn query_safe(b: u8) -> bool {
    CLASSES[usize::from(b)] & 2 != 0
}

/// _Q: query_safe or "%".
fn q(b: u8) -> bool {
    query_safe(b) || b == b'%'
}

/// _SEGMENT: a path character but ":" and "/".
fn segment(b: u8) -> bool {
    q(b) && !matches!(b, b'?' | b':' | b'/')
}

/// SipHash's key from the standard library's random state; a folded multiply per 8 bytes
/// (foldhash's way): much faster on URLs, and still seeded per process.
#[derive(Clone)]
struct Seeded(u64);

impl Default for Seeded {
    fn default() -> Self {
        use std::hash::BuildHasher;
        use std::sync::OnceLock;
        static SEED: OnceLock<u64> = OnceLock::new();
        Self(*SEED.get_or_init(|| {
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1
        }))
    }
}

impl std::hash::BuildHasher for Seeded {
    type Hasher = Folded;
    fn build_hasher(&self) -> Folded {
        Folded(self.0)
    }
}

struct Folded(u64);

fn fold(a: u64, b: u64) -> u64 {
    let full = u128::from(a).wrapping_mul(u128::from(b));
    (full as u64) ^ ((full >> 64) as u64)
}

impl std::hash::Hasher for Folded {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut h = self.0 ^ (bytes.len() as u64).wrapping_mul(K);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            h = fold(h ^ w, K ^ self.0.rotate_left(17));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        h = fold(h ^ u64::from_le_bytes(tail), K.rotate_left(29) ^ self.0);
        self.0 = h;
    }

    fn write_u8(&mut self, i: u8) {
        self.0 = fold(self.0 ^ u64::from(i), 0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        fold(self.0, 0x2545_f491_4f6c_dd1d)
    }
}

type Map<K, V> = HashMap<K, V, Seeded>;

fn upper_hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Whether urls.normalise would rewrite an escape of `text` (links._ESCAPE_CHANGES, or
/// _GOPHER_ESCAPE_CHANGES for a Gopher URL).
fn escapes_change(text: &[u8], gopher: bool) -> bool {
    for (i, &b) in text.iter().enumerate() {
        if b != b'%' {
            continue;
        }
        let (Some(hi), Some(lo)) = (
            text.get(i + 1).copied().and_then(upper_hex),
            text.get(i + 2).copied().and_then(upper_hex),
        ) else {
            return true;
        };
        let v = hi * 16 + lo;
        let changes = if gopher {
            query_safe(v) || matches!(v, 0 | 9 | 10 | 13)
        } else {
            unreserved(v)
        };
        if changes {
            return true;
        }
    }
    false
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn ascii(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

// -- the links of a page ------------------------------------------------------------------

/// A kept link: (URL, Gopher item type, mirror).
pub type Link = (String, Option<String>, bool);

/// A link's Gopher item type, kept small (one character).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    /// Not a gopher:// URL.
    None,
    /// An escape: the caller decodes it from the URL ("" outside).
    Decode,
    Char(char),
}

impl Type {
    fn of(item_type: Option<&str>) -> Self {
        let Some(t) = item_type else {
            return Type::None;
        };
        let mut chars = t.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => Type::Char(c),
            _ => Type::Decode,
        }
    }

    fn text(self) -> Option<String> {
        match self {
            Type::None => None,
            Type::Decode => Some(String::new()),
            Type::Char(c) => Some(c.to_string()),
        }
    }
}

/// Distinct links in page order; an item beats a mirror of the same URL, at the item's place.
#[derive(Debug, Default)]
pub struct Links {
    /// Per link made, in page order: its type, whether a mirror, and whether it still
    /// stands (an item that replaces a mirror makes a new one).
    entries: Vec<(Type, bool, bool)>,
    /// URL: its entry.  The URLs live here only.
    index: Map<String, usize>,
    max_links: usize,
    /// Link lines past `max_links` (less those plainly repeating a kept link).
    pub more: usize,
}

/// What [`Links::offer`] did with a URL.
enum Offer {
    /// The URL is kept already.
    Seen,
    /// Kept now.
    Kept,
    /// Past max_links: counted.
    Counted,
    /// Over a request's length: given back, neither kept nor counted.
    Long(String),
}

impl Links {
    /// Room is made for `expected` links (at most max_links).
    pub fn new(max_links: usize, expected: usize) -> Self {
        let room = max_links.min(expected);
        Self {
            entries: Vec::with_capacity(room),
            index: Map::with_capacity_and_hasher(room, Seeded::default()),
            max_links,
            more: 0,
        }
    }

    /// Whether `max_links` distinct links are kept.
    pub fn full(&self) -> bool {
        self.index.len() >= self.max_links
    }

    pub fn contains(&self, url: &str) -> bool {
        self.index.contains_key(url)
    }

    /// Keep a link: a new URL goes last; an item (not a mirror) whose URL only a mirror gave
    /// so far replaces it, at the item's place.
    pub fn add(&mut self, url: String, item_type: Option<&str>, mirror: bool) {
        self.put(url, Type::of(item_type), mirror);
    }

    fn put(&mut self, url: String, item_type: Type, mirror: bool) {
        let next = self.entries.len();
        match self.index.entry(url) {
            Entry::Vacant(v) => {
                v.insert(next);
            }
            Entry::Occupied(mut o) => {
                let i = *o.get();
                if mirror || !self.entries[i].1 {
                    return;
                }
                self.entries[i].2 = false;
                o.insert(next);
            }
        }
        self.entries.push((item_type, mirror, true));
    }

    /// A fast-path item (never a mirror), with one look-up: kept unless seen (where an
    /// item beats a mirror), past max_links or too long.
    fn offer(&mut self, url: String, item_type: Type) -> Offer {
        let next = self.entries.len();
        let full = self.full();
        match self.index.entry(url) {
            Entry::Occupied(mut o) => {
                let i = *o.get();
                if self.entries[i].1 {
                    self.entries[i].2 = false;
                    o.insert(next);
                    self.entries.push((item_type, false, true));
                }
                Offer::Seen
            }
            Entry::Vacant(_) if full => {
                self.more += 1;
                Offer::Counted
            }
            Entry::Vacant(v) if v.key().len() > MAX_REQUEST_BYTES => Offer::Long(v.into_key()),
            Entry::Vacant(v) => {
                v.insert(next);
                self.entries.push((item_type, false, true));
                Offer::Kept
            }
        }
    }

    /// The kept links: (URL, item type, mirror) in page order.
    pub fn into_parts(self) -> Vec<Link> {
        let mut urls: Vec<Option<String>> = vec![None; self.entries.len()];
        for (url, i) in self.index {
            urls[i] = Some(url);
        }
        urls.into_iter()
            .zip(self.entries)
            .filter_map(|(url, (t, mirror, alive))| {
                Some((url.filter(|_| alive)?, t.text(), mirror))
            })
            .collect()
    }
}

/// The item type of a gopher:// URL made here: its path's first character, or an escape
/// the caller decodes (urls.gopher_ref).
fn gopher_type(url: &str) -> Type {
    let b = url.as_bytes();
    let slash = b
        .iter()
        .skip(9)
        .position(|&c| c == b'/')
        .map_or(0, |i| i + 9);
    match b.get(slash + 1) {
        None => Type::Char('1'),
        Some(b'%') => Type::Decode,
        Some(&c) => Type::Char(c as char),
    }
}

// -- gemtext --------------------------------------------------------------------------------

/// What a gemtext scan stopped for.
#[derive(Debug, PartialEq, Eq)]
pub enum GemEvent {
    /// The page is read.
    Done,
    /// The budget of bytes is spent: call `step` again.
    Pause,
    /// `scheme://authority` as written: answer with `set_head` (then `step` again).
    Head(String),
    /// A run of "../" and "./": answer with `set_dots`.
    Dots(String),
    /// A target for the URL normaliser (once per page), as written.
    Slow(Vec<u8>),
    /// A fast-path URL longer than a request may be, and the target as written.
    Long { url: String, target: Vec<u8> },
}

/// The prefixes and memos of one page's base: what `links._Normaliser` computed.
#[derive(Debug)]
pub struct Prefixes {
    /// "scheme://host[:port]" before an absolute path; None: leave those to the caller.
    pub absolute: Option<String>,
    /// "scheme://host[:port]/dir/" before a relative name.
    pub relative: Option<String>,
    /// The base is a gopher:// URL.
    pub gopher: bool,
    /// The base has no scheme: every head is refused.
    pub refuses: bool,
}

#[derive(Debug)]
pub struct Gemtext {
    text: Vec<u8>,
    pos: usize,
    pre: bool,
    title: Option<Vec<u8>>,
    base: Prefixes,
    heads: Map<String, Option<(String, bool)>>,
    dotted: Map<String, Option<String>>,
    done: HashSet<Vec<u8>, Seeded>,
    pub links: Links,
}

enum Action<E> {
    Next,
    /// Return the event and read the line again after it is answered.
    Ask(E),
    /// Return the event, the line done.
    Emit(E),
}

/// A scanner that reads its buffer a line at a time: gemtext pages and Gopher menus.
trait Lines {
    type Event;
    const DONE: Self::Event;
    const PAUSE: Self::Event;
    /// The buffer and the position of the next line in it.
    fn cursor(&mut self) -> (&mut Vec<u8>, &mut usize);
    fn line(&mut self, line: &[u8]) -> Action<Self::Event>;
}

/// Read on until an event; at most about `budget` bytes before a pause.  A line that asks a
/// question is read again once it is answered; the buffer is lent out while a line is read.
fn step_lines<S: Lines>(scan: &mut S, budget: usize) -> S::Event {
    let stop = scan.cursor().1.saturating_add(budget.max(1));
    loop {
        let (buffer, pos) = scan.cursor();
        let (start, size) = (*pos, buffer.len());
        if start >= size {
            return S::DONE;
        }
        if start >= stop {
            return S::PAUSE;
        }
        let end = buffer[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(size, |i| start + i);
        let text = std::mem::take(buffer);
        let action = scan.line(&text[start..end]);
        let (buffer, pos) = scan.cursor();
        *buffer = text;
        match action {
            Action::Next => *pos = end + 1,
            Action::Ask(e) => return e,
            Action::Emit(e) => {
                *pos = end + 1;
                return e;
            }
        }
    }
}

enum Shape {
    Absolute,
    Url(usize),
    Relative,
    Dots(usize),
}

fn relative_shape(part: &[u8]) -> bool {
    match part.first() {
        Some(&b) if segment(b) && b != b'.' => {}
        _ => return false,
    }
    let sep = part
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(part.len());
    part[..sep].iter().all(|&b| segment(b)) && part[sep..].iter().all(|&b| q(b))
}

/// Which of links._SHAPES `part` (a target without fragment) is, as the regex reads it.
fn shape(part: &[u8]) -> Option<Shape> {
    let first = *part.first()?;
    if first == b'/' {
        return (part.get(1) != Some(&b'/') && part.iter().all(|&b| q(b)))
            .then_some(Shape::Absolute);
    }
    if first == b'.' {
        let mut k = 0;
        loop {
            if part[k..].starts_with(b"../") {
                k += 3;
            } else if part[k..].starts_with(b"./") {
                k += 2;
            } else {
                break;
            }
        }
        let rest = &part[k..];
        let ok = k > 0
            && (rest.is_empty()
                || relative_shape(rest)
                || (rest[0] == b'?' && rest.iter().all(|&b| q(b))));
        return ok.then_some(Shape::Dots(k));
    }
    if let Some(end) = url_head(part) {
        let rest = &part[end..];
        if rest.is_empty() || (matches!(rest[0], b'/' | b'?') && rest.iter().all(|&b| q(b))) {
            return Some(Shape::Url(end));
        }
    }
    relative_shape(part).then_some(Shape::Relative)
}

/// The end of `(?i:gemini|gopher|https?)://[A-Za-z0-9.\-]+(?::[0-9]*)?` at the start of `part`.
fn url_head(part: &[u8]) -> Option<usize> {
    let colon = part.iter().take(7).position(|&b| b == b':')?;
    let scheme = part[..colon].to_ascii_lowercase();
    if !matches!(&scheme[..], b"gemini" | b"gopher" | b"http" | b"https")
        || !part[colon..].starts_with(b"://")
    {
        return None;
    }
    let start = colon + 3;
    let mut i = start;
    while i < part.len() && (part[i].is_ascii_alphanumeric() || matches!(part[i], b'.' | b'-')) {
        i += 1;
    }
    if i == start {
        return None;
    }
    if part.get(i) == Some(&b':') {
        i += 1;
        while i < part.len() && part[i].is_ascii_digit() {
            i += 1;
        }
    }
    Some(i)
}

impl Lines for Gemtext {
    type Event = GemEvent;
    const DONE: GemEvent = GemEvent::Done;
    const PAUSE: GemEvent = GemEvent::Pause;
    fn cursor(&mut self) -> (&mut Vec<u8>, &mut usize) {
        (&mut self.text, &mut self.pos)
    }
    fn line(&mut self, line: &[u8]) -> Action<GemEvent> {
        self.read_line(line)
    }
}

impl Gemtext {
    pub fn new(text: Vec<u8>, base: Prefixes, max_links: usize) -> Self {
        let size = text.len();
        Self {
            text,
            pos: 0,
            pre: false,
            title: None,
            base,
            heads: Map::default(),
            dotted: Map::default(),
            done: HashSet::default(),
            links: Links::new(max_links, size / 32),
        }
    }

    /// The first level-1 heading with text, stripped, as bytes of the page.
    pub fn title(&self) -> Option<&[u8]> {
        self.title.as_deref()
    }

    /// `_head(raw)`: the normalised `scheme://authority` and whether it is Gopher, or None.
    pub fn set_head(&mut self, raw: String, head: Option<(String, bool)>) {
        self.heads.insert(raw, head);
    }

    /// The prefix "../x" gets (less its "x") for a run of dots, or None.
    pub fn set_dots(&mut self, dots: String, prefix: Option<String>) {
        self.dotted.insert(dots, prefix);
    }

    /// Read on until an event; at most about `budget` bytes before a [`GemEvent::Pause`].
    pub fn step(&mut self, budget: usize) -> GemEvent {
        step_lines(self, budget)
    }

    fn read_line(&mut self, line: &[u8]) -> Action<GemEvent> {
        if line.starts_with(b"```") {
            self.pre = !self.pre;
            return Action::Next;
        }
        if self.pre {
            return Action::Next;
        }
        if line.starts_with(b"=>") {
            return self.link(line);
        }
        if self.title.is_none() && line.first() == Some(&b'#') && line.get(1) != Some(&b'#') {
            let heading = strip_blanks(line[1..].strip_suffix(b"\r").unwrap_or(&line[1..]));
            if !heading.is_empty() {
                self.title = Some(heading.to_vec());
            }
        }
        Action::Next
    }

    fn link(&mut self, line: &[u8]) -> Action<GemEvent> {
        let n = line.len();
        let mut i = 2;
        while i < n && matches!(line[i], b' ' | b'\t') {
            i += 1;
        }
        let ts = i;
        while i < n && !matches!(line[i], b' ' | b'\t') {
            i += 1;
        }
        let te = i;
        if ts == te {
            return Action::Next;
        }
        let t = &line[ts..te];
        let at_eol = te == n;
        let (part, fast_end) = match t.iter().position(|&b| b == b'#') {
            Some(h) => (&t[..h], te),
            None if at_eol && t.ends_with(b"\r") => (&t[..t.len() - 1], te - 1),
            None => (t, te),
        };
        if let Some(shape) = shape(part) {
            let fast = match self.fast(part, shape) {
                Ok(fast) => fast,
                Err(ask) => return Action::Ask(ask),
            };
            if let Some((url, item_type)) = fast {
                if let Offer::Long(url) = self.links.offer(url, item_type) {
                    let target = line[ts..fast_end].to_vec();
                    return Action::Emit(GemEvent::Long { url, target });
                }
                return Action::Next;
            }
        }
        if let Some((url, item_type)) = self.escaped(part) {
            self.links.offer(url, item_type); // never too long: escaped() sees to it
            return Action::Next;
        }
        // any other target: for the caller's normaliser, once per page
        let target = if at_eol {
            t.strip_suffix(b"\r").unwrap_or(t)
        } else {
            t
        };
        if target.is_empty() || self.done.contains(target) {
            return Action::Next;
        }
        if self.links.full() {
            self.links.more += 1;
            return Action::Next;
        }
        if self.done.len() < MEMO_MAX {
            self.done.insert(target.to_vec());
        }
        Action::Emit(GemEvent::Slow(target.to_vec()))
    }

    /// The URL (and Gopher item type) of a target of a fast shape, None when the caller must
    /// normalise it, or the question to ask first.
    fn fast(&self, part: &[u8], shape: Shape) -> Result<Option<(String, Type)>, GemEvent> {
        let gopher = self.base.gopher;
        let (prefix, kept) = match shape {
            Shape::Absolute => {
                let Some(absolute) = &self.base.absolute else {
                    return Ok(None);
                };
                if escapes_change(part, gopher) {
                    return Ok(None);
                }
                if gopher {
                    let url = if part == b"/1" {
                        glue(absolute, "/")
                    } else {
                        glue(absolute, ascii(part))
                    };
                    let t = gopher_type(&url);
                    return Ok(Some((url, t)));
                }
                (absolute, part)
            }
            Shape::Url(end) => return self.url(ascii(&part[..end]), &part[end..]),
            Shape::Relative => {
                let Some(relative) = &self.base.relative else {
                    return Ok(None);
                };
                if escapes_change(part, gopher) || (gopher && part == b"1") {
                    return Ok(None);
                }
                (relative, part)
            }
            Shape::Dots(k) => {
                let dots = ascii(&part[..k]);
                let prefix = if self.base.absolute.is_none() {
                    None
                } else {
                    match self.dotted.get(dots) {
                        Some(p) => p.as_ref(),
                        None => return Err(GemEvent::Dots(dots.to_owned())),
                    }
                };
                let Some(prefix) = prefix else {
                    return Ok(None);
                };
                let kept = &part[k..];
                if escapes_change(kept, gopher) {
                    return Ok(None);
                }
                (prefix, kept)
            }
        };
        if gopher {
            let url = glue(prefix, ascii(kept));
            let t = gopher_type(&url);
            return Ok(Some((url, t)));
        }
        if contains(kept, b"/.") {
            return Ok(None);
        }
        Ok(Some((glue(prefix, ascii(kept)), Type::None)))
    }

    /// An ASCII target of an absolute path, a relative name or a URL of a known non-Gopher
    /// head whose characters or escapes urls.normalise rewrites ("%7e", "%zz", a raw "<"):
    /// the prefix and the target with its escapes normalised (urls._normalise_escapes),
    /// when no dot segment shows before or after.  None: the caller's normaliser does it.
    fn escaped(&self, part: &[u8]) -> Option<(String, Type)> {
        let (&first, &last) = (part.first()?, part.last()?);
        // the ends would be stripped; non-ASCII is the caller's (IRIs: urls.normalise, once
        // per page, as the tests hold it)
        if first <= b' ' || last <= b' ' || !part.is_ascii() {
            return None;
        }
        let (prefix, kept): (&str, &[u8]) = if first == b'/' {
            if part.get(1) == Some(&b'/') || self.base.gopher {
                return None;
            }
            (self.base.absolute.as_deref()?, part)
        } else if let Some(end) = url_head(part) {
            let raw = ascii(&part[..end]);
            let rest = &part[end..];
            if !(rest.is_empty() || matches!(rest[0], b'/' | b'?')) || self.base.refuses {
                return None;
            }
            let head = match normal_head(raw) {
                Some(false) => raw,
                Some(true) => return None,
                None => match self.heads.get(raw)? {
                    Some((head, false)) => head.as_str(),
                    _ => return None,
                },
            };
            let mut url = glue(head, if rest.first() == Some(&b'/') { "" } else { "/" });
            normalise_escapes(&mut url, rest);
            return (!url[head.len()..].contains("/.") && url.len() <= MAX_REQUEST_BYTES)
                .then_some((url, Type::None));
        } else {
            let sep = part
                .iter()
                .position(|&b| b == b'/' || b == b'?')
                .unwrap_or(part.len());
            if matches!(first, b'.' | b'?') || part[..sep].contains(&b':') || self.base.gopher {
                return None;
            }
            (self.base.relative.as_deref()?, part)
        };
        let mut url = glue(prefix, "");
        normalise_escapes(&mut url, kept);
        let tail = &url[prefix.len()..];
        (!tail.starts_with('.') && !tail.contains("/.") && url.len() <= MAX_REQUEST_BYTES)
            .then_some((url, Type::None))
    }

    fn url(&self, raw: &str, rest: &[u8]) -> Result<Option<(String, Type)>, GemEvent> {
        let (head, gopher) = if self.base.refuses {
            return Ok(None);
        } else if let Some(gopher) = normal_head(raw) {
            (raw, gopher)
        } else {
            match self.heads.get(raw) {
                Some(Some((head, gopher))) => (head.as_str(), *gopher),
                Some(None) => return Ok(None),
                None => return Err(GemEvent::Head(raw.to_owned())),
            }
        };
        Ok(head_and_rest(head, gopher, ascii(rest)))
    }
}

/// A URL of a normalised `head` (and whether it is Gopher) and the `rest` of a fast URL
/// shape (links._Normaliser.url), or None for the caller's normaliser.
fn head_and_rest(head: &str, gopher: bool, rest: &str) -> Option<(String, Type)> {
    let slash = if rest.is_empty() || rest.starts_with('?') {
        "/"
    } else {
        ""
    };
    if gopher {
        if escapes_change(rest.as_bytes(), true) {
            return None;
        }
        if slash.is_empty() && rest == "/1" {
            return Some((glue(head, "/"), Type::Char('1')));
        }
        let url = glue(&glue(head, slash), rest);
        let t = gopher_type(&url);
        return Some((url, t));
    }
    if escapes_change(rest.as_bytes(), false) || rest.contains("/.") {
        return None;
    }
    Some((glue(&glue(head, slash), rest), Type::None))
}

/// Whether `raw` (scheme://authority) is spelled as urls.normalise writes it (links._head's
/// shortcut, _NORMAL_HEAD): then whether it is Gopher.
fn normal_head(raw: &str) -> Option<bool> {
    let (scheme, rest) = raw.split_once("://")?;
    let default = match scheme {
        "gemini" => 1965,
        "gopher" => 70,
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (host, port) = match rest.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    let label = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if !host.split('.').all(label) {
        return None;
    }
    if let Some(port) = port {
        let digits = port.bytes().all(|b| b.is_ascii_digit());
        if !digits || !(1..=5).contains(&port.len()) || port.starts_with('0') {
            return None;
        }
        let n: u32 = port.parse().ok()?;
        if n >= 65536 || n == default {
            return None;
        }
    }
    Some(scheme == "gopher")
}

/// urls._normalise_escapes(text, _QUERY_SAFE) of ASCII `text`, onto `out`: escapes of
/// unreserved characters decoded, the others' hex upper-cased, a "%" that starts no escape
/// and every character not raw in a URL escaped (as UTF-8).
fn normalise_escapes(out: &mut String, text: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b == b'%' {
            if let (Some(hi), Some(lo)) = (hex(text.get(i + 1)), hex(text.get(i + 2))) {
                let v = (hi * 16 + lo) as u8;
                if unreserved(v) {
                    out.push(v as char);
                } else {
                    out.push('%');
                    out.push(HEX[usize::from(v >> 4)] as char);
                    out.push(HEX[usize::from(v & 15)] as char);
                }
                i += 3;
                continue;
            }
            out.push_str("%25");
        } else if query_safe(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
        i += 1;
    }
}

fn glue(prefix: &str, rest: &str) -> String {
    let mut url = String::with_capacity(prefix.len() + rest.len());
    url.push_str(prefix);
    url.push_str(rest);
    url
}

/// `str.strip(" \t")`.
fn strip_blanks(mut b: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = b {
        b = rest;
    }
    b
}

// -- Gopher menus -------------------------------------------------------------------------

/// Why a menu item is skipped (the caller words it).
#[derive(Debug, PartialEq, Eq)]
pub enum Problem {
    /// A CR or NUL in the selector.
    Broken,
    /// The selector is this many bytes, over a request's.
    LongSelector(usize),
    /// The URL is this many bytes, over a request's.
    LongUrl(usize),
}

/// What a menu scan stopped for.
#[derive(Debug, PartialEq, Eq)]
pub enum MenuEvent {
    Done,
    Pause,
    /// A line's "host TAB port" field: answer with `set_place` (its "gopher://host[:port]/",
    /// "" when unlinkable).
    Place(Vec<u8>),
    /// A `URL:` selector's rest (not stripped, not UTF-8) and whether its line is a mirror:
    /// the caller normalises it and adds it (or counts it past max_links), with its memo.
    External {
        target: Vec<u8>,
        mirror: bool,
    },
    /// A `URL:` selector's target (stripped, new, not past max_links) that is no fast URL:
    /// the caller normalises it, answers with `remember` and adds it.
    Resolve {
        target: String,
        mirror: bool,
    },
    /// A selector over a request's length (the caller reports it).
    LongSelector {
        place: String,
        item_type: String,
        selector: Vec<u8>,
    },
    /// An item skipped: its URL and why.
    Skip {
        url: String,
        problem: Problem,
    },
}

#[derive(Debug)]
pub struct Menu {
    body: Vec<u8>,
    pos: usize,
    previous: Option<char>,
    title: Option<String>,
    places: Map<Vec<u8>, String>,
    /// URL: targets (stripped) read so far: their link, None when skipped.
    external: Map<String, Option<(String, Type)>>,
    pub links: Links,
}

/// bytes.strip()'s white space.
fn byte_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// str.isspace().
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

fn quote_into(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        if query_safe(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
}

/// Item types a fast line may have: raw in a URL, not "+", "i" or "3".
fn fast_type(b: u8) -> bool {
    query_safe(b) && !matches!(b, b'+' | b'i' | b'3')
}

impl Lines for Menu {
    type Event = MenuEvent;
    const DONE: MenuEvent = MenuEvent::Done;
    const PAUSE: MenuEvent = MenuEvent::Pause;
    fn cursor(&mut self) -> (&mut Vec<u8>, &mut usize) {
        (&mut self.body, &mut self.pos)
    }
    fn line(&mut self, line: &[u8]) -> Action<MenuEvent> {
        self.read_line(line)
    }
}

impl Menu {
    pub fn new(body: Vec<u8>, max_links: usize) -> Self {
        let size = body.len();
        Self {
            body,
            pos: 0,
            previous: None,
            title: None,
            places: Map::default(),
            external: Map::default(),
            links: Links::new(max_links, size / 48),
        }
    }

    /// The display of the first `i` line whose selector is TITLE (stripped, not empty).
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    pub fn set_place(&mut self, field: Vec<u8>, place: String) {
        self.places.insert(field, place);
    }

    /// A [`MenuEvent::Resolve`] target's link (URL, item type), None when it was skipped.
    pub fn remember(&mut self, target: String, link: Option<(String, Option<&str>)>) {
        if self.external.len() < MEMO_MAX {
            let link = link.map(|(url, t)| (url, Type::of(t)));
            self.external.insert(target, link);
        }
    }

    /// A URL: selector's rest: links._menu's handling, with its memo.
    fn external(&mut self, rest: &[u8], mirror: bool) -> Action<MenuEvent> {
        let Ok(text) = std::str::from_utf8(rest) else {
            let target = rest.to_vec();
            return Action::Emit(MenuEvent::External { target, mirror });
        };
        let target = text.trim_matches(py_space);
        if target.is_empty() {
            return Action::Next;
        }
        if let Some(known) = self.external.get(target) {
            if let (Some((url, t)), false) = (known, mirror) {
                self.links.put(url.clone(), *t, false); // an item beats a mirror
            }
            return Action::Next;
        }
        if self.links.full() {
            self.links.more += 1;
            return Action::Next;
        }
        // links._Normaliser(None).fast: only a URL of a known head, a fragment dropped
        let part = target.split('#').next().unwrap_or_default();
        let fast = match shape(part.as_bytes()) {
            Some(Shape::Url(end)) => normal_head(&part[..end])
                .and_then(|gopher| head_and_rest(&part[..end], gopher, &part[end..]))
                .filter(|(url, _)| url.len() <= MAX_REQUEST_BYTES),
            _ => None,
        };
        let Some((url, t)) = fast else {
            let target = target.to_owned();
            return Action::Emit(MenuEvent::Resolve { target, mirror });
        };
        if self.external.len() < MEMO_MAX {
            self.external
                .insert(target.to_owned(), Some((url.clone(), t)));
        }
        self.links.put(url, t, mirror);
        Action::Next
    }

    /// Read on until an event; at most about `budget` bytes before a [`MenuEvent::Pause`].
    pub fn step(&mut self, budget: usize) -> MenuEvent {
        step_lines(self, budget)
    }

    fn read_line(&mut self, line: &[u8]) -> Action<MenuEvent> {
        let raw = line.strip_suffix(b"\r").unwrap_or(line);
        let stripped = {
            let mut s = raw;
            while let [b, rest @ ..] = s {
                if !byte_space(*b) {
                    break;
                }
                s = rest;
            }
            while let [rest @ .., b] = s {
                if !byte_space(*b) {
                    break;
                }
                s = rest;
            }
            s
        };
        if stripped.is_empty() || stripped == b"." {
            return Action::Next;
        }
        let type_byte = raw[0];
        let mirror = type_byte == b'+';
        let mut item_type = match self.previous {
            Some(previous) if mirror => previous,
            _ if type_byte.is_ascii() => type_byte as char,
            _ => '\u{fffd}',
        };
        let mut fields = raw[1..].splitn(5, |&b| b == b'\t');
        let display = fields.next().unwrap_or_default();
        let selector = fields.next().unwrap_or_default();
        let (Some(host), Some(port)) = (fields.next(), fields.next()) else {
            if !matches!(item_type, 'i' | '3') {
                item_type = 'i';
            }
            if self.title.is_none() {
                self.title = title(item_type, display, selector);
            }
            self.previous = Some(item_type);
            return Action::Next;
        };
        // host TAB port, a slice of the line
        let field_start = 1 + display.len() + 1 + selector.len() + 1;
        let field = &raw[field_start..field_start + host.len() + 1 + port.len()];
        let external = selector.starts_with(b"URL:");
        let fast = fast_type(type_byte) && !external && selector.iter().all(|&b| query_safe(b));
        let linked = fast || (!external && !matches!(item_type, 'i' | '3' | '+'));
        let place = if linked {
            match self.places.get(field) {
                Some(place) => place.as_str(),
                None => return Action::Ask(MenuEvent::Place(field.to_vec())),
            }
        } else {
            ""
        };
        if self.title.is_none() {
            self.title = title(item_type, display, selector);
        }
        self.previous = Some(item_type);
        if external {
            if matches!(item_type, 'i' | '3') {
                return Action::Next;
            }
            return self.external(&selector[4..], mirror);
        }
        if place.is_empty() {
            return Action::Next;
        }
        if !fast && self.links.full() {
            self.links.more += 1;
            return Action::Next;
        }
        if !fast && selector.len() > MAX_REQUEST_BYTES {
            return Action::Emit(MenuEvent::LongSelector {
                place: place.to_owned(),
                item_type: item_type.to_string(),
                selector: selector.to_vec(),
            });
        }
        let mut url = String::with_capacity(place.len() + 1 + selector.len());
        url.push_str(place);
        if !(item_type == '1' && selector.is_empty()) {
            let mut utf8 = [0; 4];
            quote_into(&mut url, item_type.encode_utf8(&mut utf8).as_bytes());
            quote_into(&mut url, selector);
        }
        let t = Type::Char(item_type);
        if fast {
            return match self.links.offer(url, t) {
                Offer::Long(url) => {
                    let n = selector.len();
                    let problem = if n > MAX_REQUEST_BYTES {
                        Problem::LongSelector(n)
                    } else {
                        Problem::LongUrl(url.len())
                    };
                    Action::Emit(MenuEvent::Skip { url, problem })
                }
                _ => Action::Next,
            };
        }
        if self.links.contains(&url) {
            if !mirror {
                self.links.put(url, t, false); // an item beats a mirror
            }
            return Action::Next;
        }
        if selector.contains(&b'\r') || selector.contains(&0) {
            return Action::Emit(MenuEvent::Skip {
                url,
                problem: Problem::Broken,
            });
        }
        if url.len() > MAX_REQUEST_BYTES {
            let problem = Problem::LongUrl(url.len());
            return Action::Emit(MenuEvent::Skip { url, problem });
        }
        self.links.put(url, t, mirror);
        Action::Next
    }
}

/// A menu item's title: the display of an `i` item whose selector is TITLE, stripped.
fn title(item_type: char, display: &[u8], selector: &[u8]) -> Option<String> {
    if item_type != 'i' || selector != b"TITLE" {
        return None;
    }
    let display = String::from_utf8_lossy(display);
    let display = display.trim_matches(py_space);
    (!display.is_empty()).then(|| display.to_owned())
}

/// Both scans over `data`, answering every question as a caller might (for the fuzz target
/// and the tests): no panic, and the links come out distinct, at most max_links of them.
#[doc(hidden)]
pub fn exercise(data: &[u8]) {
    let max_links = usize::from(data.first().copied().unwrap_or(0) % 8) * 3;
    let base = Prefixes {
        absolute: Some("gemini://h".to_owned()),
        relative: Some("gemini://h/dir/".to_owned()),
        gopher: data.get(1).is_some_and(|&b| b & 1 == 1),
        refuses: false,
    };
    let mut g = Gemtext::new(data.to_vec(), base, max_links);
    loop {
        match g.step(16) {
            GemEvent::Done => break,
            GemEvent::Head(raw) => {
                let head =
                    (raw.len() % 2 == 0).then(|| (raw.to_ascii_lowercase(), raw.starts_with('g')));
                g.set_head(raw, head);
            }
            GemEvent::Dots(dots) => g.set_dots(dots, Some("gemini://h/".to_owned())),
            GemEvent::Slow(target) => {
                g.links
                    .add(String::from_utf8_lossy(&target).into_owned(), None, false)
            }
            GemEvent::Long { url, .. } => g.links.add(url, Some(""), false),
            GemEvent::Pause => {}
        }
    }
    check(g.links, max_links);
    let mut m = Menu::new(data.to_vec(), max_links);
    loop {
        match m.step(16) {
            MenuEvent::Done => break,
            MenuEvent::Place(field) => {
                let place = if field.len() % 3 == 0 {
                    String::new()
                } else {
                    "gopher://h/".to_owned()
                };
                m.set_place(field, place);
            }
            MenuEvent::External { target, mirror } if !m.links.full() => {
                m.links
                    .add(String::from_utf8_lossy(&target).into_owned(), None, mirror);
            }
            MenuEvent::Resolve { target, mirror } => {
                m.remember(target.clone(), Some((target.clone(), Some("1"))));
                m.links.add(target, Some("1"), mirror);
            }
            _ => {}
        }
    }
    check(m.links, max_links);
}

fn check(links: Links, max_links: usize) {
    let parts = links.into_parts();
    let distinct: HashSet<&str> = parts.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(distinct.len(), parts.len());
    assert!(parts.len() <= max_links.max(1) || max_links == 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gem(text: &str, base: Prefixes) -> (Vec<Link>, Vec<GemEvent>) {
        let mut g = Gemtext::new(text.as_bytes().to_vec(), base, 100);
        let mut events = Vec::new();
        loop {
            match g.step(7) {
                GemEvent::Done => break,
                GemEvent::Pause => {}
                GemEvent::Head(raw) => {
                    let head = raw.to_ascii_lowercase();
                    let gopher = head.starts_with("gopher");
                    events.push(GemEvent::Head(raw.clone()));
                    g.set_head(raw, Some((head, gopher)));
                }
                GemEvent::Dots(dots) => {
                    events.push(GemEvent::Dots(dots.clone()));
                    g.set_dots(dots, Some("gemini://h/".to_owned()));
                }
                e => events.push(e),
            }
        }
        (g.links.into_parts(), events)
    }

    fn gemini() -> Prefixes {
        Prefixes {
            absolute: Some("gemini://h".to_owned()),
            relative: Some("gemini://h/dir/".to_owned()),
            gopher: false,
            refuses: false,
        }
    }

    #[test]
    fn gemtext_shapes() {
        let text = "# T\r\n=> /a b\n=>b.gmi\n```\n=> /pre\n```\n=> ../c#x\r\n=> GEMINI://X/y\n\
                    => /a\n=> mailto:x\n=> /%7e\n=> /a/./b\n=>\r\r\n";
        let (links, events) = gem(text, gemini());
        let urls: Vec<_> = links.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(
            urls,
            [
                "gemini://h/a",
                "gemini://h/dir/b.gmi",
                "gemini://h/c",
                "gemini://x/y",
                "gemini://h/~", // "%7e" decoded here
            ]
        );
        assert_eq!(
            events,
            [
                GemEvent::Dots("../".into()),
                GemEvent::Head("GEMINI://X".into()),
                GemEvent::Slow(b"mailto:x".to_vec()),
                GemEvent::Slow(b"/a/./b".to_vec()),
                GemEvent::Slow(b"\r".to_vec()),
            ]
        );
    }

    #[test]
    fn gemtext_title() {
        let mut g = Gemtext::new(b"## no\n#  \r\n# \tYes \r\n# Late\n".to_vec(), gemini(), 1);
        assert_eq!(g.step(usize::MAX), GemEvent::Done);
        assert_eq!(g.title(), Some(&b"Yes"[..]));
    }

    #[test]
    fn menu_items() {
        let body =
            b"iHi\tTITLE\th\t70\r\n1Docs\t/d\th\t70\r\n+M\t/d\tm\t70\r\n0A b\t/a b\th\t70\r\n\
                     hW\tURL: http://x/\th\t70\r\nhW\tURL:HTTP://x/\th\t70\r\n1Root\t\th\t70\r\n0Docs\t/d\th\t70\r\n.\r\n";
        let mut m = Menu::new(body.to_vec(), 100);
        let mut events = Vec::new();
        loop {
            match m.step(5) {
                MenuEvent::Done => break,
                MenuEvent::Pause => {}
                MenuEvent::Place(field) => {
                    let host = field.split(|&b| b == b'\t').next().unwrap_or_default();
                    m.set_place(field.clone(), format!("gopher://{}/", ascii(host)));
                }
                e => events.push(e),
            }
        }
        assert_eq!(m.title(), Some("Hi"));
        let urls: Vec<_> = m
            .links
            .into_parts()
            .into_iter()
            .map(|l| (l.0, l.2))
            .collect();
        assert_eq!(
            urls,
            [
                ("gopher://h/1/d".to_owned(), false),
                ("gopher://m/1/d".to_owned(), true),
                ("gopher://h/0/a%20b".to_owned(), false),
                ("http://x/".to_owned(), false),
                ("gopher://h/".to_owned(), false),
                ("gopher://h/0/d".to_owned(), false),
            ]
        );
        assert_eq!(
            events,
            [MenuEvent::Resolve {
                target: "HTTP://x/".to_owned(),
                mirror: false
            }]
        );
    }

    #[test]
    fn mirror_then_item() {
        let mut links = Links::new(10, 10);
        links.add("a".into(), None, true);
        links.add("b".into(), None, false);
        links.add("a".into(), Some("1"), false);
        let parts = links.into_parts();
        assert_eq!(parts[0].0, "b");
        assert_eq!(parts[1], ("a".to_owned(), Some("1".to_owned()), false));
    }

    #[test]
    fn any_bytes() {
        // a small deterministic soup of the bytes that matter
        const ALPHABET: &[u8] = b"=> \t\r\n#`/.?%7eE:1+i3URL:gemini://Hx\xc3\xa9\xff";
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..3000 {
            let mut data = Vec::new();
            for _ in 0..(state % 97) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                data.push(ALPHABET[(state % ALPHABET.len() as u64) as usize]);
            }
            exercise(&data);
        }
    }

    #[test]
    fn heads() {
        assert_eq!(normal_head("gemini://a.b"), Some(false));
        assert_eq!(normal_head("gopher://a.b.:7070"), Some(true));
        for raw in [
            "gemini://A.b",
            "gemini://a..b",
            "gemini://a.b:1965",
            "gemini://a:",
            "gemini://a:070",
            "ftp://a",
        ] {
            assert_eq!(normal_head(raw), None, "{raw}");
        }
    }

    #[test]
    fn escapes() {
        assert!(!escapes_change(b"/caf%C3%A9/a%20b%2F", false));
        assert!(escapes_change(b"/%7e", false));
        assert!(escapes_change(b"/%7E", false));
        assert!(escapes_change(b"/%", false));
        assert!(escapes_change(b"/%2F", true));
        assert!(!escapes_change(b"/%20", true));
    }
}
