//! Usage preferences: what a file says robots may do with what they fetch, beside whether
//! they may fetch it.
//!
//! Two kinds of line say it.  `Content-Usage` is the IETF AI Preferences working group's
//! rule (draft-ietf-aipref-attach-05, "Robots Exclusion Protocol Content-Usage Rule", which
//! "Updates: 9309"): a rule inside a group, optionally scoped to a path, whose value is a
//! statement of preference in the working group's vocabulary (draft-ietf-aipref-vocab-08).
//! `Content-Signal` is Cloudflare's (draft-romm-aipref-contentsignals-00): the draft gives
//! its categories and labels only ("Usage Category Labels"); sites write it as a rule in a
//! group with `yes`/`no` values (`Content-Signal: search=yes, ai-train=no`), and it is read
//! here exactly as a Content-Usage rule is, with those two words for `y` and `n`.
//!
//! The categories are data ([`AIPREF`], [`CONTENT_SIGNALS`]): the next revision of a draft
//! changes a table, not code.  Values are RFC 9651 dictionaries, parsed here in full (no
//! crate), so that what the drafts call malformed is told apart from what they ignore.

use crate::line::Kind;

/// What a statement says of one category of use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pref {
    /// Allowed (`y`; `yes` for Content-Signal).
    Yes,
    /// Disallowed (`n`; `no`).
    No,
    /// Not said, or said in a way that is neither (vocab, "Processing Algorithm": "the
    /// preference for that category is unknown").  Unknown is not a default: the vocabulary
    /// "takes no position on what default might be assigned" ("Applying Statements of
    /// Preference").
    Unstated,
}

impl Pref {
    pub fn name(self) -> &'static str {
        match self {
            Pref::Yes => "yes",
            Pref::No => "no",
            Pref::Unstated => "unstated",
        }
    }
}

/// One category of use: its label in a statement, its name, where it is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Category {
    pub label: &'static str,
    pub title: &'static str,
    pub section: &'static str,
    /// The category an unstated preference falls back to.  The vocabulary's earlier
    /// revisions nested categories (a preference for a parent applied to each child left
    /// unstated); -08 has three flat categories and none falls back.
    pub parent: Option<usize>,
}

/// A vocabulary: the field that carries it, its categories, and its words for allow and
/// disallow (Tokens, vocab "Preference Labels").
#[derive(Debug, PartialEq, Eq)]
pub struct Vocabulary {
    pub field: Kind,
    pub draft: &'static str,
    pub categories: &'static [Category],
    pub yes: &'static [u8],
    pub no: &'static [u8],
}

/// The most categories a vocabulary may have: a statement is a fixed array of this many.
pub const MAX_CATEGORIES: usize = 8;

/// The working group's vocabulary, draft-ietf-aipref-vocab-08 (2026-09-14), "Usage
/// Category Labels": three flat categories; one left unstated stays unknown.
pub static AIPREF: Vocabulary = Vocabulary {
    field: Kind::ContentUsage,
    draft: "draft-ietf-aipref-vocab-08",
    categories: &[
        Category {
            label: "train-ai",
            title: "AI Training",
            section: "AI Model Training",
            parent: None,
        },
        Category {
            label: "ai-use",
            title: "AI Use",
            section: "AI Use",
            parent: None,
        },
        Category {
            label: "search",
            title: "Search",
            section: "Search",
            parent: None,
        },
    ],
    yes: b"y",
    no: b"n",
};

/// Cloudflare's Content Signals, draft-romm-aipref-contentsignals-00, "Usage Category
/// Labels", each `yes` or `no`.
pub static CONTENT_SIGNALS: Vocabulary = Vocabulary {
    field: Kind::ContentSignal,
    draft: "draft-romm-aipref-contentsignals-00",
    categories: &[
        Category {
            label: "search",
            title: "Search",
            section: "Search",
            parent: None,
        },
        Category {
            label: "ai-input",
            title: "AI Input",
            section: "AI Input",
            parent: None,
        },
        Category {
            label: "ai-train",
            title: "AI Training",
            section: "AI Training",
            parent: None,
        },
    ],
    yes: b"yes",
    no: b"no",
};

/// Both vocabularies, in the order answers give them.
pub static VOCABULARIES: [&Vocabulary; 2] = [&AIPREF, &CONTENT_SIGNALS];

/// The vocabulary a line of `kind` speaks.
pub fn vocabulary(kind: Kind) -> Option<&'static Vocabulary> {
    VOCABULARIES.iter().copied().find(|v| v.field == kind)
}

/// A statement of preference: one value per category, in the vocabulary's order.
pub type Statement = [Pref; MAX_CATEGORIES];

/// Why a value is no dictionary, and where (a byte offset in the statement).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed {
    pub at: usize,
    pub why: &'static str,
}

/// A rule's value split as the attachment draft says ("Processing Content-Usage Rules"): a
/// value starting with '/' has a path, ending before the first SP or HTAB, and the rest
/// (after that white space: the ABNF's `1*WS`) is the statement; any other value is all
/// statement.  `(path, statement)`.
pub fn split_rule(value: &[u8]) -> (Option<&[u8]>, &[u8]) {
    if value.first() != Some(&b'/') {
        return (None, value);
    }
    let end = value
        .iter()
        .position(|&b| b == b' ' || b == b'\t')
        .unwrap_or(value.len());
    let rest = &value[end..];
    let ws = rest
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count();
    (Some(&value[..end]), &rest[ws..])
}

/// A statement read in a vocabulary (vocab, "Processing Algorithm"): the value parsed as an
/// RFC 9651 Dictionary; for each category, its label's value: the Token `yes` word allows,
/// the `no` word disallows, anything else (absent, not a Token, another Token) is unknown.
/// Parameters and unknown labels are ignored; a repeated label's last value counts (RFC
/// 9651 section 4.2.2).  A value that is no Dictionary leaves every category unknown ("If
/// the parsing of the Dictionary fails, preferences are unknown"): the error says why.
pub fn statement(value: &[u8], vocab: &Vocabulary) -> (Statement, Option<Malformed>) {
    let mut out = [Pref::Unstated; MAX_CATEGORIES];
    let members = match dictionary(value) {
        Ok(m) => m,
        Err(e) => return (out, Some(e)),
    };
    for (k, c) in vocab.categories.iter().enumerate() {
        // the last member with the label: a repeated key's value overwrites the first's
        let value = members
            .iter()
            .rev()
            .find(|(key, _)| *key == c.label.as_bytes());
        out[k] = match value {
            Some((_, Some(token))) if *token == vocab.yes => Pref::Yes,
            Some((_, Some(token))) if *token == vocab.no => Pref::No,
            _ => Pref::Unstated,
        };
    }
    for (k, c) in vocab.categories.iter().enumerate() {
        if let (Pref::Unstated, Some(parent)) = (out[k], c.parent) {
            out[k] = out[parent];
        }
    }
    (out, None)
}

/// Statements combined (vocab, "Combining Preferences"), one category: any disallow
/// disallows; else any allow allows; else unknown.  The index of the statement that decides.
pub fn combine(prefs: impl Iterator<Item = Pref>) -> (Pref, Option<usize>) {
    let mut best = (Pref::Unstated, None);
    for (i, p) in prefs.enumerate() {
        match (p, best.0) {
            (Pref::No, Pref::Yes | Pref::Unstated) | (Pref::Yes, Pref::Unstated) => {
                best = (p, Some(i))
            }
            _ => {}
        }
    }
    best
}

// -- RFC 9651 dictionaries --------------------------------------------------------------

/// A dictionary member: its key, and its value when that is a Token.
pub type Member<'a> = (&'a [u8], Option<&'a [u8]>);

/// An RFC 9651 Dictionary (section 4.2.2), as preferences need it: each member's key, and
/// its value when that is a Token (a Boolean, number, String, Byte Sequence, Date, Display
/// String or Inner List is None).  Parameters are checked and dropped.  Keys are kept in
/// order with repeats; a reader takes the last.
pub fn dictionary(input: &[u8]) -> Result<Vec<Member<'_>>, Malformed> {
    let mut p = Parser { s: input, i: 0 };
    p.skip_sp();
    let mut out = Vec::new();
    while !p.done() {
        let key = p.key()?;
        let value = if p.eat(b'=') {
            if p.peek() == Some(b'(') {
                p.inner_list()?;
                None
            } else {
                let token = p.bare_item()?;
                p.parameters()?;
                token
            }
        } else {
            p.parameters()?; // a key alone is the Boolean true
            None
        };
        out.push((key, value));
        p.skip_ows();
        if p.done() {
            return Ok(out);
        }
        if !p.eat(b',') {
            return Err(p.fail("a ',' or the end was expected after a member"));
        }
        p.skip_ows();
        if p.done() {
            return Err(p.fail("a member was expected after the ','"));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl<'a> Parser<'a> {
    fn done(&self) -> bool {
        self.i >= self.s.len()
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }
    fn next(&mut self) -> Option<u8> {
        let b = self.peek();
        self.i += usize::from(b.is_some());
        b
    }
    fn fail(&self, why: &'static str) -> Malformed {
        Malformed { at: self.i, why }
    }
    fn skip_sp(&mut self) {
        while self.eat(b' ') {}
    }
    fn skip_ows(&mut self) {
        while self.eat(b' ') || self.eat(b'\t') {}
    }

    /// Section 4.2.3.3: lcalpha or '*', then lcalpha, DIGIT, '_', '-', '.', '*'.
    fn key(&mut self) -> Result<&'a [u8], Malformed> {
        let start = self.i;
        match self.peek() {
            Some(b'a'..=b'z' | b'*') => self.i += 1,
            _ => return Err(self.fail("a key must start with a lowercase letter or '*'")),
        }
        while let Some(b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*') = self.peek() {
            self.i += 1;
        }
        Ok(&self.s[start..self.i])
    }

    /// Section 4.2.3.2: `;key` or `;key=bare-item`, repeated.
    fn parameters(&mut self) -> Result<(), Malformed> {
        while self.eat(b';') {
            self.skip_sp();
            self.key()?;
            if self.eat(b'=') {
                self.bare_item()?;
            }
        }
        Ok(())
    }

    /// Section 4.2.1.2: `(item item ...)` and its parameters.
    fn inner_list(&mut self) -> Result<(), Malformed> {
        self.i += 1; // '('
        loop {
            self.skip_sp();
            if self.done() {
                return Err(self.fail("an inner list has no ')'"));
            }
            if self.eat(b')') {
                return self.parameters();
            }
            self.bare_item()?;
            self.parameters()?;
            if !matches!(self.peek(), Some(b' ' | b')')) {
                return Err(self.fail("a ' ' or ')' was expected in an inner list"));
            }
        }
    }

    /// Section 4.2.3.1: a bare item; the Token's bytes when it is one.
    fn bare_item(&mut self) -> Result<Option<&'a [u8]>, Malformed> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number(false).map(|_| None),
            Some(b'"') => self.string().map(|_| None),
            Some(b'*' | b'A'..=b'Z' | b'a'..=b'z') => Ok(Some(self.token())),
            Some(b':') => self.byte_sequence().map(|_| None),
            Some(b'?') => {
                self.i += 1;
                match self.next() {
                    Some(b'0' | b'1') => Ok(None),
                    _ => Err(self.fail("a Boolean is ?0 or ?1")),
                }
            }
            Some(b'@') => {
                self.i += 1;
                self.number(true).map(|_| None)
            }
            Some(b'%') => self.display_string().map(|_| None),
            _ => Err(self.fail("no value of any Structured Field type starts here")),
        }
    }

    /// Section 4.2.4: an Integer (up to 15 digits) or a Decimal (up to 12 and 3 digits);
    /// `integer`: only an Integer will do (a Date, section 4.2.9).
    fn number(&mut self, integer: bool) -> Result<(), Malformed> {
        self.eat(b'-');
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return Err(self.fail("a number needs a digit"));
        }
        let (mut digits, mut point) = (0, None);
        loop {
            match self.peek() {
                Some(b'0'..=b'9') => digits += 1,
                Some(b'.') if point.is_none() && !integer => {
                    if digits > 12 {
                        return Err(self.fail("a Decimal has at most 12 digits before its '.'"));
                    }
                    point = Some(digits);
                }
                _ => break,
            }
            self.i += 1;
            if digits > 15 {
                return Err(self.fail("a number has too many digits"));
            }
        }
        match point {
            Some(p) if digits == p => Err(self.fail("a Decimal cannot end with '.'")),
            Some(p) if digits - p > 3 => Err(self.fail("a Decimal has at most 3 decimal digits")),
            _ => Ok(()),
        }
    }

    /// Section 4.2.5: printable ASCII between quotes; '\' escapes only '"' and '\'.
    fn string(&mut self) -> Result<(), Malformed> {
        self.i += 1;
        loop {
            match self.next() {
                None => return Err(self.fail("a String has no closing '\"'")),
                Some(b'\\') => match self.next() {
                    Some(b'"' | b'\\') => {}
                    _ => return Err(self.fail("'\\' in a String escapes only '\"' or '\\'")),
                },
                Some(b'"') => return Ok(()),
                Some(0x20..=0x7e) => {}
                Some(_) => return Err(self.fail("a String holds printable ASCII only")),
            }
        }
    }

    /// Section 4.2.6: ALPHA or '*', then tchar, ':' or '/'.
    fn token(&mut self) -> &'a [u8] {
        let start = self.i;
        self.i += 1;
        while self
            .peek()
            .is_some_and(|b| is_tchar(b) || b == b':' || b == b'/')
        {
            self.i += 1;
        }
        &self.s[start..self.i]
    }

    /// Section 4.2.7: base64 between colons.
    fn byte_sequence(&mut self) -> Result<(), Malformed> {
        self.i += 1;
        loop {
            match self.next() {
                None => return Err(self.fail("a Byte Sequence has no closing ':'")),
                Some(b':') => return Ok(()),
                Some(b) if b.is_ascii_alphanumeric() || b"+/=".contains(&b) => {}
                Some(_) => return Err(self.fail("a Byte Sequence holds base64 only")),
            }
        }
    }

    /// Section 4.2.10: `%"..."`, with `%xx` escapes (lowercase hex) of UTF-8.
    fn display_string(&mut self) -> Result<(), Malformed> {
        self.i += 1;
        if !self.eat(b'"') {
            return Err(self.fail("a Display String starts with %\""));
        }
        let mut bytes = Vec::new();
        loop {
            match self.next() {
                None => return Err(self.fail("a Display String has no closing '\"'")),
                Some(b'%') => {
                    let hex = |b: Option<u8>| match b {
                        Some(d @ b'0'..=b'9') => Some(d - b'0'),
                        Some(d @ b'a'..=b'f') => Some(d - b'a' + 10),
                        _ => None,
                    };
                    match (hex(self.next()), hex(self.next())) {
                        (Some(h), Some(l)) => bytes.push(h << 4 | l),
                        _ => return Err(self.fail("'%' in a Display String takes two hex digits")),
                    }
                }
                Some(b'"') => {
                    return match std::str::from_utf8(&bytes) {
                        Ok(_) => Ok(()),
                        Err(_) => Err(self.fail("a Display String is not UTF-8")),
                    }
                }
                Some(b @ 0x20..=0x7e) => bytes.push(b),
                Some(_) => return Err(self.fail("a Display String holds printable ASCII only")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: &str, vocab: &Vocabulary) -> Vec<&'static str> {
        let (s, _) = statement(value.as_bytes(), vocab);
        s[..vocab.categories.len()]
            .iter()
            .map(|p| p.name())
            .collect()
    }

    #[test]
    fn vocab_format_example() {
        // vocab "Exemplary Serialization Format"
        assert_eq!(
            read("train-ai=y, search=n", &AIPREF),
            ["yes", "unstated", "no"]
        );
        assert_eq!(read("ai-use=n", &AIPREF), ["unstated", "no", "unstated"]);
        assert_eq!(read("", &AIPREF), ["unstated"; 3]);
    }

    #[test]
    fn attach_header_field_value() {
        // attach "HTTP Content-Usage Header Field": a statement alone, no path; field
        // lines combined with a comma (RFC 9651 section 4.2) read as one dictionary
        assert_eq!(read("train-ai=n", &AIPREF), ["no", "unstated", "unstated"]);
        assert_eq!(
            read("train-ai=n, search=y, train-ai=y", &AIPREF),
            ["yes", "unstated", "yes"]
        );
        let (s, bad) = statement(b"/x train-ai=n", &AIPREF);
        assert!(bad.is_some() && s.iter().all(|p| *p == Pref::Unstated));
    }

    #[test]
    fn vocab_multiple_preferences_and_parameters() {
        // vocab "Multiple Preferences": the last of a repeated key counts, and a Boolean
        // or String is no Token
        assert_eq!(
            read("train-ai=y, train-ai, search=n, search=\"n\"", &AIPREF),
            ["unstated"; 3]
        );
        // vocab "Preference Parameters"
        assert_eq!(read("train-ai;allow=n, train-ai=y", &AIPREF)[0], "yes");
        // unknown, as the draft says; to RFC 9651 the final ';' (no key after it) makes the
        // whole value malformed, which leaves it unknown too
        assert_eq!(
            read("train-ai;has;parameters=\"?\";", &AIPREF)[0],
            "unstated"
        );
        let (_, bad) = statement(b"train-ai;has;parameters=\"?\";", &AIPREF);
        assert!(bad.is_some(), "a trailing ';' is no parameter");
        assert_eq!(
            read("train-ai;has;parameters=\"?\"", &AIPREF)[0],
            "unstated"
        );
        assert_eq!(read("train-ai=y;why=\"x\";n=1.5", &AIPREF)[0], "yes");
        // unknown labels and other tokens are ignored
        assert_eq!(
            read("foo=n, train-ai=yes, search=y", &AIPREF),
            ["unstated", "unstated", "yes"]
        );
    }

    #[test]
    fn malformed_values_leave_everything_unknown() {
        for bad in [
            "Train-AI=n",
            "train-ai=n,",
            "train-ai=n search=n",
            "train-ai=\"n",
            "train-ai=(n y",
            "train-ai=n;",
            "train-ai=1.2345",
            "train-ai=?2",
            "train-ai=:ab$:",
            "train-ai=%\"%ZZ\"",
            "=n",
            "train-ai=n, , search=n",
            "train-ai=\u{e9}",
        ] {
            let (s, why) = statement(bad.as_bytes(), &AIPREF);
            assert_eq!(s, [Pref::Unstated; MAX_CATEGORIES], "{bad}");
            assert!(why.is_some(), "{bad}");
        }
        for good in [
            "train-ai=n , search=y",
            "train-ai=n,\tsearch=y",
            "train-ai=(a b);p, search=y",
            "train-ai=@1700000000, search=y",
            "train-ai=%\"caf%c3%a9\", search=y",
            "train-ai=:aGVsbG8=:, search=y",
            "train-ai=-12.5, search=y",
            "*x=1, search=y",
        ] {
            let (s, why) = statement(good.as_bytes(), &AIPREF);
            assert_eq!((s[2], why), (Pref::Yes, None), "{good}");
        }
    }

    #[test]
    fn content_signals_say_yes_and_no() {
        assert_eq!(
            read("search=yes, ai-train=no", &CONTENT_SIGNALS),
            ["yes", "unstated", "no"]
        );
        assert_eq!(
            read("search=y,ai-input=no", &CONTENT_SIGNALS),
            ["unstated", "no", "unstated"]
        );
    }

    #[test]
    fn a_child_falls_back_to_its_parent_when_a_vocabulary_nests() {
        static NESTED: Vocabulary = Vocabulary {
            field: Kind::ContentUsage,
            draft: "a nested revision",
            categories: &[
                Category {
                    label: "tdm",
                    title: "Automated Processing",
                    section: "",
                    parent: None,
                },
                Category {
                    label: "train-ai",
                    title: "AI Training",
                    section: "",
                    parent: Some(0),
                },
            ],
            yes: b"y",
            no: b"n",
        };
        assert_eq!(read("tdm=n", &NESTED), ["no", "no"]);
        assert_eq!(read("tdm=n, train-ai=y", &NESTED), ["no", "yes"]);
    }

    #[test]
    fn rules_split_into_path_and_statement() {
        fn s(v: &str) -> (Option<&[u8]>, &[u8]) {
            split_rule(v.as_bytes())
        }
        assert_eq!(s("train-ai=n"), (None, &b"train-ai=n"[..]));
        assert_eq!(
            s("/ai-ok/ train-ai=y"),
            (Some(&b"/ai-ok/"[..]), &b"train-ai=y"[..])
        );
        assert_eq!(
            s("/a\t \ttrain-ai=y"),
            (Some(&b"/a"[..]), &b"train-ai=y"[..])
        );
        assert_eq!(s("/a"), (Some(&b"/a"[..]), &b""[..]));
        assert_eq!(s("*x train-ai=y"), (None, &b"*x train-ai=y"[..]));
    }

    #[test]
    fn combining_takes_the_most_restrictive() {
        use Pref::*;
        assert_eq!(combine([Yes, No, Yes].into_iter()), (No, Some(1)));
        assert_eq!(combine([Unstated, Yes].into_iter()), (Yes, Some(1)));
        assert_eq!(combine([Unstated].into_iter()), (Unstated, None));
    }
}
