//! Compiled rules and the longest-match search.
//!
//! Matching is linear: a pattern is split at its `*` into literal pieces, and each piece is
//! found leftmost.  For patterns whose only operator is `*`, leftmost placement is optimal,
//! so no backtracking is ever needed.
//!
//! A compiled rule is twelve bytes: where its pattern is (most often the value in the line
//! table, read as written), its length, its line and its flags.  A robot that asks many
//! questions of a file keeps its rules compiled, so they must cost less than the file.
//!
//! Many rules are indexed, so that a question costs about the same on a file of 20,000 rules
//! as on one of ten: by the piece before the first `*` (which must start the path), in order,
//! with a pointer from each to the longest other that is a prefix of it, so the pieces that
//! start a path are one binary search and a short walk away; and wildcard rules that share
//! that piece with many others (`/*a*1`, `/*a*2`, ...) by their rarest three or four bytes,
//! which the path must hold somewhere.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Longest first, Allow first, plain first, line order, the line's own rule first.
pub(crate) type Precedence = (Reverse<usize>, bool, bool, u32, bool);

const ALLOW: u8 = 1;
/// Its value is made only of plain characters: on a tie it goes first.
const PLAIN: u8 = 2;
/// Made from an `Allow: .../index.html` line, for `.../` (Google).
const EXTRA: u8 = 4;
/// The pattern is in the rules' own bytes, not in the line table's.
const OWN: u8 = 8;
/// It holds a `*` that is an operator.
const STAR: u8 = 16;
/// It ends in a `$` that is an operator.
const ANCHORED: u8 = 32;

/// One Allow or Disallow line, compiled for matching.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// Where the pattern starts, in the line table's bytes or (OWN) the rules' own.
    at: u32,
    /// Which rule line of its choice it came from: the line table's entry.
    ordinal: u32,
    /// Octets in the pattern: the longest match wins.  Lines are cut at 16,663 bytes and a
    /// value grows at most three times when escaped, so a pattern fits.
    len: u16,
    flags: u8,
}

/// A rule to compile: its pattern as its profile reads it (borrowed from the line table when
/// the profile reads it as written).
pub struct Source<'a> {
    pub allow: bool,
    pub pattern: std::borrow::Cow<'a, [u8]>,
    pub ordinal: u32,
    pub plain: bool,
    pub extra: bool,
}

impl Source<'_> {
    /// The precedence its rule would have, for a scan that compiles none.
    pub(crate) fn precedence(&self) -> Precedence {
        (
            Reverse(self.pattern.len()),
            !self.allow,
            !self.plain,
            self.ordinal,
            self.extra,
        )
    }
}

impl Rule {
    pub fn allow(&self) -> bool {
        self.flags & ALLOW != 0
    }

    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// Its precedence as one number, smaller first: longest, Allow, plain, line, own rule.
    fn key(&self) -> u64 {
        let not = |flag: u8| u64::from(self.flags & flag == 0);
        (u64::from(u16::MAX - self.len) << 40)
            | not(ALLOW) << 39
            | not(PLAIN) << 38
            | u64::from(self.ordinal) << 1
            | u64::from(self.flags & EXTRA != 0)
    }

    fn pattern<'a>(&self, table: &'a [u8], own: &'a [u8]) -> &'a [u8] {
        let bytes = if self.flags & OWN != 0 { own } else { table };
        &bytes[self.at as usize..self.at as usize + self.len as usize]
    }

    /// The piece before the first `*` operator (before an anchoring `$`): a path it matches
    /// starts with this.
    fn first_piece<'a>(&self, pattern: &'a [u8]) -> &'a [u8] {
        if self.flags & STAR != 0 {
            &pattern[..crate::table::find(pattern, [b'*']).unwrap_or(pattern.len())]
        } else if self.flags & ANCHORED != 0 {
            &pattern[..pattern.len() - 1]
        } else {
            pattern
        }
    }

    fn matches(&self, pattern: &[u8], path: &[u8]) -> bool {
        #[cfg(test)]
        tests::TRIED.with(|t| t.set(t.get() + 1));
        if self.flags & STAR != 0 {
            return pattern_matches(pattern, path, true, self.flags & ANCHORED != 0);
        }
        let body = self.first_piece(pattern);
        path.starts_with(body) && (self.flags & ANCHORED == 0 || path.len() == body.len())
    }
}

/// Where `part` lies in `whole`, if it is a slice of it.
fn offset_in(whole: &[u8], part: &[u8]) -> Option<usize> {
    let (w, p) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    (p >= w && p + part.len() <= w + whole.len()).then(|| p - w)
}

/// Gram keys are three bytes in a word: spread them with one multiplication, not SipHash.
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
    fn write_u32(&mut self, n: u32) {
        self.0 = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type GramMap = HashMap<u32, (u32, u32), BuildHasherDefault<KeyHasher>>;

/// Three or four bytes as a key (three with a zero after them: a pattern holds no NUL, the
/// line table cuts lines there, so only a path could make a key collide, and a collision
/// only costs a rule tried for nothing).
fn gram(w: &[u8]) -> u32 {
    u32::from_le_bytes([w[0], w[1], w[2], w.get(3).copied().unwrap_or(0)])
}

/// The keys of every three and four bytes of `s`.
fn grams(s: &[u8]) -> impl Iterator<Item = u32> + '_ {
    s.windows(3).map(gram).chain(s.windows(4).map(gram))
}

/// Below this many rules a scan in precedence order is as fast as the index.
const INDEX_FROM: usize = 16;
/// Wildcard rules sharing their first piece with this many others are indexed by a gram.
const GRAM_FROM: usize = 8;
const NONE: u32 = u32::MAX;

/// The index of many rules.
#[derive(Debug, Default)]
struct Index {
    /// `rules[..prefixed]` are sorted by first piece, and among the same by precedence, last
    /// first; the rest are grouped by gram.
    prefixed: u32,
    /// For each of `rules[..prefixed]`: the last rule whose first piece is the longest
    /// proper prefix of its own (NONE: none is).
    up: Vec<u32>,
    /// Each gram's rules, a range of `rules[prefixed..]` in precedence order.
    grams: GramMap,
}

/// Rules, compiled: the first of them to match a path, in precedence order, decides.
#[derive(Debug, Default)]
pub struct Rules {
    /// In precedence order; with an index, in its order.
    rules: Vec<Rule>,
    /// Patterns that are not the line table's values as written.
    own: Vec<u8>,
    index: Option<Box<Index>>,
}

impl Rules {
    /// Rules from their sources; `table` is the line table's bytes, where a borrowed
    /// pattern is found and not copied.
    pub fn new<'a>(
        sources: impl IntoIterator<Item = Source<'a>>,
        table: &[u8],
        wildcards: bool,
        anchor: bool,
    ) -> Rules {
        let mut own = Vec::new();
        let mut rules: Vec<Rule> = Vec::new();
        for s in sources {
            let p: &[u8] = &s.pattern;
            let Some(&last) = p.last() else {
                continue; // an empty pattern matches nothing
            };
            let len = u16::try_from(p.len()).unwrap_or(u16::MAX);
            let p = &p[..len as usize];
            let (at, place) = match offset_in(table, p) {
                Some(at) => (at, 0),
                None => {
                    own.extend_from_slice(p);
                    (own.len() - p.len(), OWN)
                }
            };
            let anchored = anchor && last == b'$';
            let body = if anchored { &p[..p.len() - 1] } else { p };
            let flag = |on: bool, flag: u8| if on { flag } else { 0 };
            rules.push(Rule {
                at: at as u32,
                ordinal: s.ordinal,
                len,
                flags: place
                    | flag(s.allow, ALLOW)
                    | flag(s.plain, PLAIN)
                    | flag(s.extra, EXTRA)
                    | flag(anchored, ANCHORED)
                    | flag(wildcards && body.contains(&b'*'), STAR),
            });
        }
        rules.sort_by_key(Rule::key);
        own.shrink_to_fit();
        let mut made = Rules {
            rules,
            own,
            index: None,
        };
        if made.rules.len() >= INDEX_FROM {
            made.index(table);
        }
        made.rules.shrink_to_fit();
        made
    }

    /// Index the rules (in precedence order now): the prefix part, then the gram part.
    fn index(&mut self, table: &[u8]) {
        let own = std::mem::take(&mut self.own);
        let firsts: Vec<&[u8]> = self
            .rules
            .iter()
            .map(|r| r.first_piece(r.pattern(table, &own)))
            .collect();
        // wildcard rules sharing a first piece with many others go by a gram, if they have one
        let mut sharing: HashMap<&[u8], usize> = HashMap::new();
        for (r, f) in self.rules.iter().zip(&firsts) {
            if r.flags & STAR != 0 {
                *sharing.entry(f).or_default() += 1;
            }
        }
        let grams_of = |r: &Rule| {
            let p = r.pattern(table, &own);
            let body = if r.flags & ANCHORED != 0 {
                &p[..p.len() - 1]
            } else {
                p
            };
            body.split(|&b| b == b'*')
                .flat_map(grams)
                .collect::<Vec<u32>>()
        };
        let mut by_gram: Vec<(u32, usize)> = Vec::new();
        let mut prefixed: Vec<usize> = Vec::new();
        let mut counts: HashMap<u32, u32, BuildHasherDefault<KeyHasher>> = HashMap::default();
        let mut candidates: Vec<(usize, Vec<u32>)> = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            let shared = r.flags & STAR != 0 && sharing[firsts[i]] >= GRAM_FROM;
            let grams = if shared { grams_of(r) } else { Vec::new() };
            if grams.is_empty() {
                prefixed.push(i);
            } else {
                for &g in &grams {
                    *counts.entry(g).or_default() += 1;
                }
                candidates.push((i, grams));
            }
        }
        for (i, grams) in candidates {
            let rarest = grams.into_iter().min_by_key(|g| counts[g]).unwrap_or(0);
            by_gram.push((rarest, i));
        }
        // the prefix part: by first piece, and among the same, best last
        prefixed.sort_by(|&a, &b| firsts[a].cmp(firsts[b]).then(b.cmp(&a)));
        let mut up = vec![NONE; prefixed.len()];
        // the groups whose pieces are prefixes of the one being read: (piece, its last rule)
        let mut chain: Vec<(&[u8], u32)> = Vec::new();
        let mut k = 0;
        while k < prefixed.len() {
            let piece = firsts[prefixed[k]];
            let mut end = k + 1;
            while end < prefixed.len() && firsts[prefixed[end]] == piece {
                end += 1;
            }
            while chain.last().is_some_and(|(p, _)| !piece.starts_with(p)) {
                chain.pop();
            }
            let parent = chain.last().map_or(NONE, |&(_, last)| last);
            up[k..end].fill(parent);
            chain.push((piece, end as u32 - 1));
            k = end;
        }
        by_gram.sort_unstable();
        let mut grams = GramMap::default();
        let base = prefixed.len() as u32;
        for (n, &(g, _)) in by_gram.iter().enumerate() {
            let at = base + n as u32;
            grams
                .entry(g)
                .and_modify(|r| r.1 = at + 1)
                .or_insert((at, at + 1));
        }
        drop(firsts);
        let order = prefixed
            .iter()
            .copied()
            .chain(by_gram.iter().map(|&(_, i)| i));
        self.rules = order.map(|i| self.rules[i]).collect();
        up.shrink_to_fit();
        grams.shrink_to_fit();
        self.own = own;
        self.index = Some(Box::new(Index {
            prefixed: base,
            up,
            grams,
        }));
    }

    /// The rule that decides for `path`, if any matches; `table` is the line table's bytes.
    pub fn first(&self, table: &[u8], path: &[u8]) -> Option<&Rule> {
        let own = &self.own;
        let Some(index) = &self.index else {
            return self
                .rules
                .iter()
                .find(|r| r.matches(r.pattern(table, own), path));
        };
        let (prefixed, by_gram) = self.rules.split_at(index.prefixed as usize);
        let mut best: Option<(u64, &Rule)> = None;
        let better = |r: &Rule, best: &Option<(u64, &Rule)>| best.is_none_or(|b| r.key() < b.0);
        // The first pieces that start the path are prefixes of the last piece not after it,
        // and so on its chain: those no longer than what it shares with the path.
        let piece = |r: &Rule| r.first_piece(r.pattern(table, own));
        let last = prefixed.partition_point(|r| piece(r) <= path);
        if let Some(mut k) = last.checked_sub(1) {
            let top = piece(&prefixed[k]);
            let shared = top.iter().zip(path).take_while(|(a, b)| a == b).count();
            loop {
                let first = piece(&prefixed[k]);
                if first.len() <= shared {
                    // this piece's rules, best first (they are sorted best last)
                    let mut j = k;
                    loop {
                        let r = &prefixed[j];
                        if !better(r, &best) {
                            break;
                        }
                        if r.matches(r.pattern(table, own), path) {
                            best = Some((r.key(), r));
                            break;
                        }
                        if j == 0 || piece(&prefixed[j - 1]) != first {
                            break;
                        }
                        j -= 1;
                    }
                }
                match index.up[k] {
                    NONE => break,
                    up => k = up as usize,
                }
            }
        }
        if !index.grams.is_empty() && path.len() >= 3 {
            let mut ranges: Vec<(u32, u32)> = grams(path)
                .filter_map(|g| index.grams.get(&g).copied())
                .collect();
            ranges.sort_unstable();
            ranges.dedup();
            let base = index.prefixed;
            for (from, to) in ranges {
                for r in &by_gram[(from - base) as usize..(to - base) as usize] {
                    if !better(r, &best) {
                        break;
                    }
                    if r.matches(r.pattern(table, own), path) {
                        best = Some((r.key(), r));
                        break;
                    }
                }
            }
        }
        best.map(|(_, r)| r)
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Heap bytes these rules own (the patterns in the line table are the table's).
    pub fn heap_size(&self) -> usize {
        self.rules.capacity() * std::mem::size_of::<Rule>()
            + self.own.capacity()
            + self.index.as_ref().map_or(0, |i| {
                std::mem::size_of::<Index>()
                    + i.up.capacity() * 4
                    + i.grams.capacity() * (std::mem::size_of::<(u32, (u32, u32))>() + 1)
            })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Rules a lookup tried to match: the index must keep it small.
        pub(super) static TRIED: Cell<usize> = const { Cell::new(0) };
    }

    fn source(allow: bool, pattern: &[u8], ordinal: u32) -> Source<'_> {
        Source {
            allow,
            pattern: std::borrow::Cow::Borrowed(pattern),
            ordinal,
            plain: pattern.iter().all(u8::is_ascii_alphanumeric),
            extra: false,
        }
    }

    /// One rule, compiled from a pattern in no table (so kept in its own bytes).
    fn compiled(pattern: &[u8], wildcards: bool, anchor: bool) -> Rules {
        Rules::new([source(false, pattern, 0)], b"", wildcards, anchor)
    }

    fn m(pattern: &str, path: &str) -> bool {
        compiled(pattern.as_bytes(), true, true)
            .first(b"", path.as_bytes())
            .is_some()
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
                let compiled = compiled(&pattern, wildcards, anchor)
                    .first(b"", &path)
                    .is_some();
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

    /// The decision of a scan of every rule, in precedence order, as written.
    fn scanned<'a>(sources: &[Source<'a>], path: &[u8]) -> Option<(bool, u32)> {
        sources
            .iter()
            .filter(|s| pattern_matches(&s.pattern, path, true, true))
            .min_by_key(|s| s.precedence())
            .map(|s| (s.allow, s.ordinal))
    }

    #[test]
    fn the_index_decides_as_a_scan_of_every_rule() {
        // many rules over few bytes, so that pieces nest, repeat and share grams; patterns
        // read from a table (borrowed) and from their own bytes
        let words: [&[u8]; 9] = [b"/", b"a", b"b", b"ab", b"*", b"$", b"/a", b"ba", b"aba"];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for round in 0..300 {
            let n = [3, 20, 200, 2_000][round % 4];
            let mut table = Vec::new();
            let mut spans = Vec::new();
            for _ in 0..n {
                let at = table.len();
                table.push(b'/');
                for _ in 0..next(7) {
                    table.extend_from_slice(words[next(9) as usize]);
                }
                spans.push((at, table.len()));
            }
            let sources: Vec<Source> = spans
                .iter()
                .enumerate()
                .map(|(i, &(a, b))| {
                    let mut s = source(next(3) == 0, &table[a..b], i as u32);
                    if i % 5 == 0 {
                        s.pattern = std::borrow::Cow::Owned(table[a..b].to_vec());
                    }
                    s
                })
                .collect();
            let rules = Rules::new(
                sources.iter().map(|s| Source {
                    pattern: s.pattern.clone(),
                    ..*s
                }),
                &table,
                true,
                true,
            );
            for _ in 0..200 {
                let mut path = b"/".to_vec();
                for _ in 0..next(8) {
                    path.extend_from_slice(words[next(4) as usize]);
                }
                let got = rules.first(&table, &path).map(|r| (r.allow(), r.ordinal()));
                assert_eq!(got, scanned(&sources, &path), "{n} rules, {path:?}");
            }
        }
    }

    #[test]
    fn a_path_tries_few_of_many_rules_sharing_a_prefix() {
        // docs.oracle.com: 19,094 of its 19,126 rules start with /html/
        let patterns: Vec<String> = (0..20_000)
            .map(|n| format!("/html/{}/page-{n}.html", n % 40))
            .chain(["/".into(), "/html/".into(), "/*.pdf$".into()])
            .collect();
        let table = patterns.concat().into_bytes();
        let mut at = 0;
        let rules = Rules::new(
            patterns.iter().enumerate().map(|(i, p)| {
                at += p.len();
                source(i % 3 == 0, &table[at - p.len()..at], i as u32)
            }),
            &table,
            true,
            true,
        );
        for (i, p) in patterns.iter().enumerate().take(20_000).step_by(97) {
            TRIED.with(|t| t.set(0));
            let path = format!("{p}?x=1");
            assert_eq!(
                rules.first(&table, path.as_bytes()).unwrap().ordinal(),
                i as u32
            );
            assert!(
                TRIED.with(Cell::get) <= 3,
                "{} rules tried",
                TRIED.with(Cell::get)
            );
        }
    }

    #[test]
    fn many_wildcard_rules_are_found_by_their_grams() {
        let table: Vec<u8> = (0..30_000)
            .flat_map(|n| format!("/*a*{n}").into_bytes())
            .collect();
        let mut spans = Vec::new();
        let mut at = 0;
        for n in 0..30_000 {
            let len = format!("/*a*{n}").len();
            spans.push((at, at + len));
            at += len;
        }
        let rules = Rules::new(
            spans
                .iter()
                .enumerate()
                .map(|(i, &(a, b))| source(false, &table[a..b], i as u32)),
            &table,
            true,
            true,
        );
        let index = rules.index.as_ref().unwrap();
        assert!(
            index.prefixed < 200,
            "{} rules scanned by prefix",
            index.prefixed
        );
        TRIED.with(|t| t.set(0));
        let hit = rules.first(&table, b"/xax12345").unwrap();
        assert_eq!(hit.ordinal(), 12345);
        assert!(
            TRIED.with(Cell::get) < 300,
            "{} rules tried",
            TRIED.with(Cell::get)
        );
    }
}
