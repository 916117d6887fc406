//! The line grammar: one line's key and value, and the field its key names.
//!
//! Google's (`robots.cc`): `#` starts a comment, ASCII white space is trimmed, the key ends
//! at the first `:`, and a missing colon is forgiven when a line has exactly two words.
//! Keys are classified by prefix, case-insensitively, with the typos Google accepts.  This
//! is the only line grammar in manners: groups, rules, fields and diagnostics all read it.

/// White space inside a line (an LF always ends one).
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | 0x0b | 0x0c | b'\r')
}

/// The field a line's key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    UserAgent = 0,
    VirtualAgent = 1,
    Allow = 2,
    Disallow = 3,
    Sitemap = 4,
    CrawlDelay = 5,
    RequestRate = 6,
    Check = 7,
    Unknown = 8,
    /// Not a `key: value` line, nor blank, nor only a comment: kept for diagnostics.
    Unparsable = 9,
    /// A usage preference: the attachment draft's rule (draft-ietf-aipref-attach, section
    /// "Robots Exclusion Protocol Content-Usage Rule"), read in `usage.rs`.
    ContentUsage = 10,
    /// Cloudflare's usage signals (draft-romm-aipref-contentsignals), read in `usage.rs`.
    ContentSignal = 11,
}

impl Kind {
    pub(crate) const ALL: [Kind; 12] = [
        Kind::UserAgent,
        Kind::VirtualAgent,
        Kind::Allow,
        Kind::Disallow,
        Kind::Sitemap,
        Kind::CrawlDelay,
        Kind::RequestRate,
        Kind::Check,
        Kind::Unknown,
        Kind::Unparsable,
        Kind::ContentUsage,
        Kind::ContentSignal,
    ];

    /// The name Python sees: `user-agent`, `allow`, `crawl-delay`, ...
    pub fn name(self) -> &'static str {
        match self {
            Kind::UserAgent => "user-agent",
            Kind::VirtualAgent => "virtual-agent",
            Kind::Allow => "allow",
            Kind::Disallow => "disallow",
            Kind::Sitemap => "sitemap",
            Kind::CrawlDelay => "crawl-delay",
            Kind::RequestRate => "request-rate",
            Kind::Check => "check",
            Kind::Unknown => "unknown",
            Kind::Unparsable => "unparsable",
            Kind::ContentUsage => "content-usage",
            Kind::ContentSignal => "content-signal",
        }
    }

    /// Spellings of the key a table can name without storing it: the canonical one, all
    /// lower case, and each word capitalised.  Any other spelling is stored as written.
    pub(crate) fn spellings(self) -> [&'static [u8]; 3] {
        match self {
            Kind::UserAgent => [b"User-agent", b"user-agent", b"User-Agent"],
            Kind::VirtualAgent => [b"Virtual-agent", b"virtual-agent", b"Virtual-Agent"],
            Kind::Allow => [b"Allow", b"allow", b"ALLOW"],
            Kind::Disallow => [b"Disallow", b"disallow", b"DISALLOW"],
            Kind::Sitemap => [b"Sitemap", b"sitemap", b"SiteMap"],
            Kind::CrawlDelay => [b"Crawl-delay", b"crawl-delay", b"Crawl-Delay"],
            Kind::RequestRate => [b"Request-rate", b"request-rate", b"Request-Rate"],
            Kind::Check => [b"Check", b"check", b"CHECK"],
            Kind::ContentUsage => [b"Content-Usage", b"content-usage", b"Content-usage"],
            Kind::ContentSignal => [b"Content-Signal", b"content-signal", b"Content-signal"],
            Kind::Unknown | Kind::Unparsable => [b"", b"", b""],
        }
    }

    pub fn is_rule(self) -> bool {
        matches!(self, Kind::Allow | Kind::Disallow)
    }

    /// Content-Usage and Content-Signal: usage preferences.  For verdicts they never end a
    /// run of agent lines (an unknown line never did, and verdicts stay as they were); for
    /// usage preferences they do, as the attachment draft's grammar has them
    /// (`RobotsTxt::usage_groups`).
    pub fn is_usage(self) -> bool {
        matches!(self, Kind::ContentUsage | Kind::ContentSignal)
    }

    /// Crawl-delay, Request-rate and Check: the fields that may end a run of agent lines.
    pub fn is_field(self) -> bool {
        matches!(self, Kind::CrawlDelay | Kind::RequestRate | Kind::Check)
    }
}

const USER_AGENT_KEYS: [&[u8]; 3] = [b"user-agent", b"useragent", b"user agent"];
const DISALLOW_KEYS: [&[u8]; 6] = [
    b"disallow",
    b"dissallow",
    b"dissalow",
    b"disalow",
    b"diasllow",
    b"disallaw",
];
const SITEMAP_KEYS: [&[u8]; 2] = [b"sitemap", b"site-map"];
/// Fields outside Google's parser: matched whole, with common spellings.  The usage
/// preference fields are spelled only as their drafts have them, in any case (RFC 9309's
/// ABNF strings are case-insensitive; the attachment draft, "Processing Content-Usage
/// Rules", ignores SP and HTAB around the label and the colon, as the line grammar does).
pub const OTHER_KEYS: [(&[u8], Kind); 9] = [
    (b"crawl-delay", Kind::CrawlDelay),
    (b"crawldelay", Kind::CrawlDelay),
    (b"crawl_delay", Kind::CrawlDelay),
    (b"request-rate", Kind::RequestRate),
    (b"requestrate", Kind::RequestRate),
    (b"request_rate", Kind::RequestRate),
    (b"check", Kind::Check),
    (b"content-usage", Kind::ContentUsage),
    (b"content-signal", Kind::ContentSignal),
];

fn starts_with_ci(key: &[u8], prefix: &[u8]) -> bool {
    key.len() >= prefix.len() && key[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The field a key names, with Google's prefix and typo rules.
pub fn classify(key: &[u8]) -> Kind {
    let any = |keys: &[&[u8]]| keys.iter().any(|p| starts_with_ci(key, p));
    // by first letter, in the order Google tests the prefixes
    let first = key.first().map(u8::to_ascii_lowercase);
    let kind = match first {
        Some(b'u') if any(&USER_AGENT_KEYS) => Kind::UserAgent,
        Some(b'a') if starts_with_ci(key, b"allow") => Kind::Allow,
        Some(b'd') if any(&DISALLOW_KEYS) => Kind::Disallow,
        Some(b's') if any(&SITEMAP_KEYS) => Kind::Sitemap,
        Some(b'v') if starts_with_ci(key, b"virtual-agent") => Kind::VirtualAgent,
        _ => Kind::Unknown,
    };
    // the other keys begin with 'c' or 'r': most unknown keys need no look at them
    if kind != Kind::Unknown || !matches!(first, Some(b'c' | b'r')) {
        return kind;
    }
    OTHER_KEYS
        .iter()
        .find(|(k, _)| key.eq_ignore_ascii_case(k))
        .map_or(Kind::Unknown, |&(_, kind)| kind)
}

/// One line split: its key and value, trimmed, and whether the colon was missing.
#[derive(Debug, PartialEq, Eq)]
pub struct Split<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub missing_colon: bool,
}

pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if !is_space(*first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !is_space(*last) {
            break;
        }
        s = rest;
    }
    s
}

/// Key and value of one line (without its line end); None for blank, comment-only and
/// unparsable lines, and for a line whose key is empty.
pub fn split_line(line: &[u8]) -> Option<Split<'_>> {
    let start = line
        .iter()
        .position(|&b| !matches!(b, b' ' | b'\t' | 0x0b | 0x0c))
        .unwrap_or(line.len());
    let rest = &line[start..];
    // "key: value": the key runs to the first colon, if no '#' comes first.
    if let Some(colon) = crate::table::find(rest, [b':', b'#']) {
        if rest[colon] == b':' {
            let key = trim(&rest[..colon]);
            let after = &rest[colon + 1..];
            let end = crate::table::find(after, [b'#']).unwrap_or(after.len());
            return (!key.is_empty()).then(|| Split {
                key,
                value: trim(&after[..end]),
                missing_colon: false,
            });
        }
    }
    two_words(rest)
}

/// "key value": exactly two words, then only white space or a comment (`rest` starts at
/// the first word; a colon in either word makes it no such line).
pub(crate) fn two_words(rest: &[u8]) -> Option<Split<'_>> {
    two_words_ending(rest, [b' ', b'\t', b':', b'#'])
}

/// The same for the part of a line before its first ':' or '#', when what follows is a
/// comment or the line's end: the words there end only at white space.
pub(crate) fn two_words_before_stop(head: &[u8]) -> Option<Split<'_>> {
    two_words_ending(head, [b' ', b'\t'])
}

fn two_words_ending<const N: usize>(rest: &[u8], ends: [u8; N]) -> Option<Split<'_>> {
    let word = |s: &[u8]| crate::table::find(s, ends).unwrap_or(s.len());
    let w1 = word(rest);
    if w1 == 0 {
        return None;
    }
    let gap = rest[w1..]
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    if gap == 0 {
        return None;
    }
    let second = &rest[w1 + gap..];
    let w2 = word(second);
    if w2 == 0 {
        return None;
    }
    let tail = &second[w2..];
    let ws = tail
        .iter()
        .take_while(|&&b| matches!(b, b' ' | b'\t' | 0x0b | 0x0c))
        .count();
    if ws < tail.len() && tail[ws] != b'#' {
        return None;
    }
    let key = trim(&rest[..w1]);
    (!key.is_empty()).then(|| Split {
        key,
        value: trim(&second[..w2]),
        missing_colon: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(line: &str) -> Option<(String, String, bool)> {
        split_line(line.as_bytes()).map(|s| {
            (
                String::from_utf8_lossy(s.key).into_owned(),
                String::from_utf8_lossy(s.value).into_owned(),
                s.missing_colon,
            )
        })
    }

    #[test]
    fn colon_and_two_word_forms() {
        assert_eq!(
            kv("  Disallow :  /a b  # c"),
            Some(("Disallow".into(), "/a b".into(), false))
        );
        assert_eq!(
            kv("disallow /a"),
            Some(("disallow".into(), "/a".into(), true))
        );
        assert_eq!(
            kv("disallow /a # c"),
            Some(("disallow".into(), "/a".into(), true))
        );
        assert_eq!(kv("user agent foo"), None);
        assert_eq!(kv("# only a comment"), None);
        assert_eq!(kv(": value"), None);
        assert_eq!(kv("a#b: c"), None);
        assert_eq!(kv(""), None);
    }

    #[test]
    fn keys_by_prefix_and_typo() {
        assert_eq!(classify(b"Disallowed"), Kind::Disallow);
        assert_eq!(classify(b"useragent"), Kind::UserAgent);
        assert_eq!(classify(b"user agent"), Kind::UserAgent);
        assert_eq!(classify(b"crawl_delay"), Kind::CrawlDelay);
        assert_eq!(classify(b"crawl-delays"), Kind::Unknown);
        assert_eq!(classify(b"CONTENT-usage"), Kind::ContentUsage);
        assert_eq!(classify(b"Content-Signal"), Kind::ContentSignal);
        // no spelling the drafts do not have: these stay unknown fields
        assert_eq!(classify(b"content_usage"), Kind::Unknown);
        assert_eq!(classify(b"content-usages"), Kind::Unknown);
        assert_eq!(classify(b"contentsignal"), Kind::Unknown);
        assert_eq!(classify(b"Virtual-agent"), Kind::VirtualAgent);
        assert_eq!(classify("\u{212a}ey".as_bytes()), Kind::Unknown);
        // classify looks at the other keys only for a key beginning with 'c' or 'r'
        for (key, kind) in OTHER_KEYS {
            assert_eq!(classify(&key.to_ascii_uppercase()), kind);
        }
    }
}
