//! Robot names: the product token a caller's name stands for, and the token a line names.
//!
//! RFC 9309 §2.2.1 matches a robot by its product token, letters, `-` and `_`.  Callers
//! often pass a whole User-Agent header (`mybot/1.0 (+http://example.org/bot)`), so the
//! token is what leads it.

use std::borrow::Cow;

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'-' || b == b'_'
}

fn is_py_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// The lower-cased product token a caller's name stands for; `*` for the star; None when the
/// name leads with no valid token (`AB42bot`, ``): such a robot matches no named group.
pub fn product_token(agent: &str) -> Option<Cow<'_, str>> {
    let name = agent.trim_matches(is_py_space);
    let end = name
        .find(|c: char| c == '/' || c == '(' || c == ';' || c.is_whitespace())
        .unwrap_or(name.len());
    let name = &name[..end];
    if name == "*" {
        return Some(Cow::Borrowed("*"));
    }
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return None;
    }
    Some(lower(name))
}

/// A name in lower case, borrowed when it already is.
pub(crate) fn lower(name: &str) -> Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// The token an agent line names: `*`, or its leading `[A-Za-z_-]` run, lower-cased.
pub fn agent_token(value: &[u8]) -> Vec<u8> {
    if value.first() == Some(&b'*')
        && value
            .get(1)
            .is_none_or(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
    {
        return b"*".to_vec();
    }
    let n = value.iter().take_while(|&&b| is_token_byte(b)).count();
    value[..n].to_ascii_lowercase()
}

/// A 1994 robot's name: the value up to any `/`, trimmed, lower-cased (`CyberMapper/2.1`).
pub fn name_1994(value: &[u8]) -> Vec<u8> {
    let end = value.iter().position(|&b| b == b'/').unwrap_or(value.len());
    crate::line::trim(&value[..end]).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert_eq!(
            product_token("mybot/1.0 (+http://x)").as_deref(),
            Some("mybot")
        );
        assert_eq!(
            product_token(" Googlebot-Image ").as_deref(),
            Some("googlebot-image")
        );
        assert_eq!(product_token("AB42bot"), None);
        assert_eq!(product_token(""), None);
        assert_eq!(product_token("*").as_deref(), Some("*"));
        assert_eq!(agent_token(b"FooBot/1.2"), b"foobot");
        assert_eq!(agent_token(b"* # all"), b"*");
        assert_eq!(agent_token(b"*bot"), b"");
        assert_eq!(name_1994(b"CyberMapper/2.1"), b"cybermapper");
    }
}
