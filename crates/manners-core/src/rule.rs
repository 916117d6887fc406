//! Compiled rules and the longest-match search.
//!
//! Matching is linear: a pattern is split at its `*` into literal pieces, and each piece is
//! found leftmost.  For patterns whose only operator is `*`, leftmost placement is optimal,
//! so no backtracking is ever needed.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Longest first, Allow first, plain first, line order, the line's own rule first.
pub(crate) type Precedence = (Reverse<usize>, bool, bool, u32, bool);

/// One Allow or Disallow line, compiled for matching.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Octets in the pattern: the longest match wins.
    pub priority: usize,
    pub allow: bool,
    /// The pattern with `*` between its pieces removed: `cuts` says where they were.
    text: Box<[u8]>,
    /// End offsets of each piece but the last in `text`.
    cuts: Box<[u32]>,
    /// The pattern ended in `$`.
    pub anchored: bool,
    /// Which rule line of its choice it came from.
    pub ordinal: u32,
    /// Its value is made only of plain characters: on a tie it goes first.
    plain: bool,
    /// Made from an `Allow: .../index.html` line, for `.../` (Google).
    extra: bool,
}

impl Rule {
    /// A rule from an already-normalised pattern; None for an empty one, which matches nothing.
    pub fn new(
        allow: bool,
        pattern: &[u8],
        ordinal: u32,
        wildcards: bool,
        anchor: bool,
        plain: bool,
    ) -> Option<Rule> {
        if pattern.is_empty() {
            return None;
        }
        let priority = pattern.len();
        let anchored = anchor && pattern.last() == Some(&b'$');
        let body = if anchored {
            &pattern[..pattern.len() - 1]
        } else {
            pattern
        };
        let (text, cuts) = if wildcards && body.contains(&b'*') {
            let mut text = Vec::with_capacity(body.len());
            let mut cuts = Vec::new();
            for (n, piece) in body.split(|&b| b == b'*').enumerate() {
                if n > 0 {
                    cuts.push(text.len() as u32);
                }
                text.extend_from_slice(piece);
            }
            (text.into_boxed_slice(), cuts.into_boxed_slice())
        } else {
            (body.to_vec().into_boxed_slice(), Box::default())
        };
        Some(Rule {
            priority,
            allow,
            text,
            cuts,
            anchored,
            ordinal,
            plain,
            extra: false,
        })
    }

    pub(crate) fn into_extra(mut self) -> Rule {
        self.extra = true;
        self
    }

    fn piece(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.cuts[i - 1] as usize };
        let end = self.cuts.get(i).map_or(self.text.len(), |&c| c as usize);
        &self.text[start..end]
    }

    pub fn matches(&self, path: &[u8]) -> bool {
        let last = self.cuts.len();
        leftmost(
            path,
            self.piece(0),
            (1..last).map(|i| self.piece(i)),
            (last > 0).then(|| self.piece(last)),
            self.anchored,
        )
    }

    /// The order rules are tried in: longest first, Allow first on a tie, then plain ones,
    /// then as written.
    pub(crate) fn precedence(&self) -> Precedence {
        (
            Reverse(self.priority),
            !self.allow,
            !self.plain,
            self.ordinal,
            self.extra,
        )
    }

    pub fn heap_size(&self) -> usize {
        self.text.len() + self.cuts.len() * 4
    }
}

/// Whether a rule made from `pattern` (already normalised) would match `path`: the same
/// leftmost search as `Rule::matches`, without building the rule.
pub fn pattern_matches(pattern: &[u8], path: &[u8], wildcards: bool, anchor: bool) -> bool {
    let anchored = anchor && pattern.last() == Some(&b'$');
    let body = if anchored {
        &pattern[..pattern.len() - 1]
    } else {
        pattern
    };
    match body.iter().rposition(|&b| b == b'*').filter(|_| wildcards) {
        None => !pattern.is_empty() && leftmost(path, body, std::iter::empty(), None, anchored),
        Some(last_star) => {
            let mut pieces = body[..last_star].split(|&b| b == b'*');
            let first = pieces.next().unwrap_or_default();
            leftmost(path, first, pieces, Some(&body[last_star + 1..]), anchored)
        }
    }
}

/// The search every rule makes: `first` starts the path, each of `middle` is found
/// leftmost after the one before, and `tail` after them all (at the path's end when
/// anchored).  With no `tail` the rule had no `*`: `first` is all of it.
fn leftmost<'p>(
    path: &[u8],
    first: &[u8],
    middle: impl Iterator<Item = &'p [u8]>,
    tail: Option<&[u8]>,
    anchored: bool,
) -> bool {
    if !path.starts_with(first) {
        return false;
    }
    let Some(tail) = tail else {
        return !anchored || path.len() == first.len();
    };
    let mut pos = first.len();
    for piece in middle {
        match find(&path[pos..], piece) {
            Some(at) => pos += at + piece.len(),
            None => return false,
        }
    }
    if anchored {
        path.len() - pos >= tail.len() && path.ends_with(tail)
    } else {
        find(&path[pos..], tail).is_some()
    }
}

/// Leftmost occurrence of `needle` in `hay`: a first-byte scan for short needles, where it
/// is fastest, and Knuth-Morris-Pratt for long ones, so no input makes it quadratic.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    if needle.len() > hay.len() {
        return None;
    }
    if needle.len() > 16 {
        return kmp(hay, needle);
    }
    let first = needle[0];
    let last_start = hay.len() - needle.len();
    let mut i = 0;
    while i <= last_start {
        match crate::table::find(&hay[i..=last_start], [first]) {
            None => return None,
            Some(k) => {
                i += k;
                // the rest compared in line: most pieces are a few bytes
                if hay[i + 1..i + needle.len()]
                    .iter()
                    .zip(&needle[1..])
                    .all(|(a, b)| a == b)
                {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

fn kmp(hay: &[u8], needle: &[u8]) -> Option<usize> {
    // the failure table on the stack for the pieces rules have; a longer one on the heap
    let mut stack = [0u32; 128];
    let mut heap = Vec::new();
    let fail: &mut [u32] = if needle.len() <= stack.len() {
        &mut stack[..needle.len()]
    } else {
        heap.resize(needle.len(), 0);
        &mut heap
    };
    let mut k = 0;
    for i in 1..needle.len() {
        while k > 0 && needle[i] != needle[k] {
            k = fail[k - 1] as usize;
        }
        if needle[i] == needle[k] {
            k += 1;
        }
        fail[i] = k as u32;
    }
    k = 0;
    for (i, &b) in hay.iter().enumerate() {
        while k > 0 && b != needle[k] {
            k = fail[k - 1] as usize;
        }
        if b == needle[k] {
            k += 1;
            if k == needle.len() {
                return Some(i + 1 - k);
            }
        }
    }
    None
}

/// Rules sorted by precedence: the first that matches a path decides.
///
/// A rule's first piece must be a prefix of the path, so a path only needs the rules whose
/// first piece shares its first KEY bytes, plus the few whose first piece is shorter: a file
/// of thousands of rules answers about as fast as one of ten.
#[derive(Debug, Default)]
pub struct Rules {
    rules: Vec<Rule>,
    /// Rules (by position) whose first piece is shorter than KEY, in precedence order.
    short: Vec<u32>,
    /// Rules by the first KEY bytes of their first piece, each list in precedence order.
    buckets: HashMap<u16, Vec<u32>, BuildHasherDefault<KeyHasher>>,
}

/// Bucket keys are two bytes: spread them with one multiplication, not SipHash.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u16(&mut self, n: u16) {
        self.0 = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

fn key(k: &[u8]) -> u16 {
    u16::from_le_bytes([k[0], k[1]])
}

const KEY: usize = 2;
/// Below this many rules a plain scan is as fast as the buckets.
const BUCKET_FROM: usize = 16;

impl Rules {
    pub fn new(mut rules: Vec<Rule>) -> Rules {
        rules.sort_by_key(Rule::precedence);
        rules.shrink_to_fit();
        let mut short = Vec::new();
        let mut buckets: HashMap<u16, Vec<u32>, BuildHasherDefault<KeyHasher>> = Default::default();
        if rules.len() >= BUCKET_FROM {
            for (i, r) in rules.iter().enumerate() {
                match r.piece(0).get(..KEY) {
                    Some(k) => buckets.entry(key(k)).or_default().push(i as u32),
                    None => short.push(i as u32),
                }
            }
        }
        Rules {
            rules,
            short,
            buckets,
        }
    }

    pub fn first(&self, path: &[u8]) -> Option<&Rule> {
        if self.rules.len() < BUCKET_FROM {
            return self.rules.iter().find(|r| r.matches(path));
        }
        let bucket: &[u32] = match path.get(..KEY) {
            Some(k) => self.buckets.get(&key(k)).map_or(&[], Vec::as_slice),
            None => &[],
        };
        // both lists are in precedence order: merge them, and the first match decides
        let (mut a, mut b) = (bucket.iter().peekable(), self.short.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) => {
                    if x < y {
                        a.next();
                        x
                    } else {
                        b.next();
                        y
                    }
                }
                (Some(&&x), None) => {
                    a.next();
                    x
                }
                (None, Some(&&y)) => {
                    b.next();
                    y
                }
                (None, None) => return None,
            };
            let rule = &self.rules[next as usize];
            if rule.matches(path) {
                return Some(rule);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn heap_size(&self) -> usize {
        self.rules.capacity() * std::mem::size_of::<Rule>()
            + self.rules.iter().map(Rule::heap_size).sum::<usize>()
            + self.short.capacity() * 4
            + self
                .buckets
                .values()
                .map(|v| 16 + v.capacity() * 4)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, path: &str) -> bool {
        Rule::new(false, pattern.as_bytes(), 0, true, true, false)
            .unwrap()
            .matches(path.as_bytes())
    }

    #[test]
    fn wildcards_and_anchors() {
        assert!(m("/a", "/abc"));
        assert!(m("/a$", "/a") && !m("/a$", "/ab"));
        assert!(m("/*.php$", "/x/y.php") && !m("/*.php$", "/x/y.php5"));
        assert!(m("*", "/") && m("/a*b*c", "/a-b-c/d"));
        assert!(!m("/a*b*c", "/a-c-b"));
        assert!(m("/a*ba$", "/aba") && !m("/ab*ba$", "/aba"));
    }

    #[test]
    fn long_pieces_are_found_in_linear_time() {
        let piece = format!("{}b", "a".repeat(8_000));
        let path = format!("/{}", "a".repeat(20_000));
        let t = std::time::Instant::now();
        assert!(!m(&format!("/*{piece}"), &path));
        assert!(m(&format!("/*{piece}"), &format!("{path}b")));
        assert!(t.elapsed().as_secs_f64() < 0.1);
    }

    #[test]
    fn four_hundred_stars_stay_linear() {
        let pattern = format!("/{}x$", "*a".repeat(400));
        let path = format!("/{}", "a".repeat(20_000));
        let t = std::time::Instant::now();
        assert!(!m(&pattern, &path));
        assert!(t.elapsed().as_secs_f64() < 0.1);
    }

    #[test]
    fn a_pattern_matches_as_its_compiled_rule_does() {
        let alphabet = b"/ab*$";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut word = |len: u64| -> Vec<u8> {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let n = (state % len) as usize;
            (0..n)
                .map(|k| alphabet[((state >> (k * 3 % 60)) % 5) as usize])
                .collect()
        };
        for _ in 0..50_000 {
            let pattern = word(9);
            let path: Vec<u8> = word(12)
                .into_iter()
                .filter(|&b| b != b'*' && b != b'$')
                .collect();
            for (wildcards, anchor) in [(true, true), (true, false), (false, false)] {
                let compiled = Rule::new(false, &pattern, 0, wildcards, anchor, false)
                    .is_some_and(|r| r.matches(&path));
                assert_eq!(
                    pattern_matches(&pattern, &path, wildcards, anchor),
                    compiled,
                    "{:?} {:?} {wildcards} {anchor}",
                    String::from_utf8_lossy(&pattern),
                    String::from_utf8_lossy(&path)
                );
            }
        }
    }
}
