//! What a target is matched as: a URL's path, normalised one way or another, or a selector.

use std::borrow::Cow;

use crate::table::find;

/// RFC 3986's unreserved and reserved characters without the pattern operators `*` and `$`
/// and the escape `%`: they mean themselves under every profile.
pub fn is_plain(b: u8) -> bool {
    PLAIN[b as usize]
}

const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric();
        b += 1;
    }
    let extra = b"-._~:/?[]@!&'()+,;=";
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
};

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn push_escape(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
}

/// The length of `scheme://` at the start of `s`, if it starts with one.
fn scheme_len(s: &[u8]) -> Option<usize> {
    if !s.first()?.is_ascii_alphabetic() {
        return None;
    }
    let n = 1 + s[1..]
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
        .count();
    s[n..].starts_with(b"://").then_some(n + 3)
}

/// What a target is matched as: one path, or for Gopher the selector and its typed form.
pub type Subjects<'a> = (Cow<'a, [u8]>, Option<Cow<'a, [u8]>>);

/// Neither a URL (`scheme://host/path`) nor a path starting with `/`.
#[derive(Debug, PartialEq, Eq)]
pub struct NotAPath;

/// Path and query of a URL (fragment dropped); a bare path is taken as a path.
pub fn url_path(target: &[u8]) -> Result<Cow<'_, [u8]>, NotAPath> {
    if let Some(n) = scheme_len(target) {
        let rest = &target[n..];
        let host = rest
            .iter()
            .position(|&b| matches!(b, b'/' | b'?' | b'#'))
            .unwrap_or(rest.len());
        let rest = &rest[host..];
        return Ok(with_slash(
            &rest[..find(rest, [b'#']).unwrap_or(rest.len())],
        ));
    }
    if target.first() != Some(&b'/') {
        return Err(NotAPath);
    }
    Ok(Cow::Borrowed(
        &target[..find(target, [b'#']).unwrap_or(target.len())],
    ))
}

/// RFC 9309 §2.2.2 via RFC 3986: one spelling for every octet sequence.
///
/// Bytes outside the reserved and unreserved sets are %-encoded; escapes of unreserved
/// characters are decoded; the hex of the other escapes is upper-cased.  In a URL a literal
/// `*` or `$` is encoded, so that only a pattern's own `%2A` and `%24` can match it; in a
/// pattern `*` is the wildcard and only a final `$` is the anchor.
pub fn normalise(s: &[u8], pattern: bool) -> Cow<'_, [u8]> {
    // most values are written as they are spelled: plain, with a pattern's '*' and final '$'
    let as_is = if pattern {
        let body = s.strip_suffix(b"$").unwrap_or(s);
        body.iter().all(|&b| is_plain(b) || b == b'*')
    } else {
        s.iter().all(|&b| is_plain(b))
    };
    if as_is {
        return Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        match b {
            b'%' => {
                if let (Some(h), Some(l)) = (
                    s.get(i + 1).and_then(|&c| hex_value(c)),
                    s.get(i + 2).and_then(|&c| hex_value(c)),
                ) {
                    let dec = h << 4 | l;
                    if is_unreserved(dec) {
                        out.push(dec);
                    } else {
                        push_escape(&mut out, dec);
                    }
                    i += 3;
                    continue;
                }
                out.extend_from_slice(b"%25");
            }
            b'*' if pattern => out.push(b'*'),
            b'$' if pattern && i == s.len() - 1 => out.push(b'$'),
            _ if is_plain(b) => out.push(b),
            _ => push_escape(&mut out, b),
        }
        i += 1;
    }
    Cow::Owned(out)
}

/// Google's MaybeEscapePattern: %-encode bytes >= 0x80, upper-case the hex of escapes.
pub fn google_escape(s: &[u8]) -> Cow<'_, [u8]> {
    if s.is_ascii() && !s.contains(&b'%') {
        return Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b == b'%'
            && s.len() > i + 2
            && s[i + 1].is_ascii_hexdigit()
            && s[i + 2].is_ascii_hexdigit()
        {
            out.extend_from_slice(&[
                b'%',
                s[i + 1].to_ascii_uppercase(),
                s[i + 2].to_ascii_uppercase(),
            ]);
            i += 3;
            continue;
        }
        if b >= 0x80 {
            push_escape(&mut out, b);
        } else {
            out.push(b);
        }
        i += 1;
    }
    Cow::Owned(out)
}

fn find_from(s: &[u8], start: usize, pred: impl Fn(u8) -> bool) -> Option<usize> {
    s.get(start..)?
        .iter()
        .position(|&b| pred(b))
        .map(|i| i + start)
}

fn find_sub(s: &[u8], needle: &[u8], start: usize) -> Option<usize> {
    s.get(start..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + start)
}

fn with_slash(path: &[u8]) -> Cow<'_, [u8]> {
    if path.first() == Some(&b'/') {
        Cow::Borrowed(path)
    } else {
        let mut p = Vec::with_capacity(path.len() + 1);
        p.push(b'/');
        p.extend_from_slice(path);
        Cow::Owned(p)
    }
}

/// Google's GetPathParamsQuery, byte for byte.
///
/// The URL is taken as given, as `robots.cc` takes it: escapes are not decoded (`/%7Euser`
/// is not `/~user`), octets beyond ASCII are not encoded (the caller %-encodes a URL), and an
/// empty query is kept (`/page?`), as Google's conformance suite (non-ascii-paths) expects.
/// Its PyPI binding, fast-robotstxt 1.1.0, parses the URL with ada and decodes escapes when
/// matching, and reads those three otherwise: `manners diff` says where (admin/diff.py).
pub fn google_path(url: &[u8]) -> Cow<'_, [u8]> {
    let search_start = if url.starts_with(b"//") { 2 } else { 0 };
    let early_path = find_from(url, search_start, |b| matches!(b, b'/' | b'?' | b';'));
    let protocol_end = match find_sub(url, b"://", search_start) {
        Some(p) if early_path.is_none_or(|e| e >= p) => p + 3,
        _ => search_start,
    };
    let Some(path_start) = find_from(url, protocol_end, |b| matches!(b, b'/' | b'?' | b';')) else {
        return Cow::Borrowed(b"/");
    };
    let hash = find_from(url, search_start, |b| b == b'#');
    if hash.is_some_and(|h| h < path_start) {
        return Cow::Borrowed(b"/");
    }
    with_slash(&url[path_start..hash.unwrap_or(url.len())])
}

fn percent_decode(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            if let (Some(h), Some(l)) = (
                s.get(i + 1).and_then(|&c| hex_value(c)),
                s.get(i + 2).and_then(|&c| hex_value(c)),
            ) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

/// What a Gopher robot checks: the selector, and for a URL also its typed form.
///
/// `gopher://host/1/private` names item type `1` and selector `/private` (RFC 4266);
/// servers write rules against either spelling.  A bare target is a raw selector.
pub fn gopher_selectors(target: &[u8]) -> Subjects<'_> {
    if crate::profile::scheme_of(target) != crate::profile::Scheme::Gopher {
        return (Cow::Borrowed(target), None);
    }
    let rest = &target[9..];
    let rest = &rest[..rest.iter().position(|&b| b == b'#').unwrap_or(rest.len())];
    let path = rest
        .iter()
        .position(|&b| b == b'/')
        .map_or(&rest[..0], |s| &rest[s + 1..]);
    if path.is_empty() {
        return (Cow::Borrowed(b""), Some(Cow::Borrowed(b"1")));
    }
    // the item type is one character, which may take more than one byte
    let type_len = match path[0] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xff => 4,
        _ => 1,
    }
    .min(path.len());
    let mut selector = percent_decode(&path[type_len..]);
    if let Some(tab) = selector.iter().position(|&b| b == b'\t') {
        selector.truncate(tab);
    }
    let mut typed = path[..type_len].to_vec();
    typed.extend_from_slice(&selector);
    (Cow::Owned(selector), Some(Cow::Owned(typed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(c: Cow<'_, [u8]>) -> String {
        String::from_utf8(c.into_owned()).unwrap()
    }

    #[test]
    fn paths() {
        assert_eq!(s(url_path(b"https://a.b/c?d#e").unwrap()), "/c?d");
        assert_eq!(s(url_path(b"https://a.b").unwrap()), "/");
        assert_eq!(s(url_path(b"https://a.b?q").unwrap()), "/?q");
        assert_eq!(url_path(b"a.b/c"), Err(NotAPath));
        assert_eq!(s(google_path(b"http://a.b/c;d?e#f")), "/c;d?e");
        assert_eq!(s(google_path(b"a.b")), "/");
        assert_eq!(s(google_path(b"//a.b/c")), "/c");
    }

    #[test]
    fn normalising() {
        assert_eq!(s(normalise(b"/a%7e%2f*$", false)), "/a~%2F%2A%24");
        assert_eq!(s(normalise(b"/a*$", true)), "/a*$");
        assert_eq!(s(normalise(b"/a$b", true)), "/a%24b");
        assert_eq!(s(normalise(b"/*a*?q=1$", true)), "/*a*?q=1$");
        assert_eq!(s(normalise(b"/a$*", true)), "/a%24*");
        assert_eq!(s(normalise(b"$$", true)), "%24$");
        assert_eq!(s(normalise(b"$", true)), "$");
        assert_eq!(s(normalise("/ü%".as_bytes(), true)), "/%C3%BC%25");
        assert_eq!(s(google_escape("/ü%2f".as_bytes())), "/%C3%BC%2F");
    }

    #[test]
    fn selectors() {
        let (a, b) = gopher_selectors(b"gopher://h:70/1/pri%76ate%09x#f");
        assert_eq!(
            (s(a), s(b.unwrap())),
            ("/private".into(), "1/private".into())
        );
        let (a, b) = gopher_selectors(b"gopher://h");
        assert_eq!((s(a), s(b.unwrap())), ("".into(), "1".into()));
        assert!(gopher_selectors(b"/about.txt").1.is_none());
    }
}
