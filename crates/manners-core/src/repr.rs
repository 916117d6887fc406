//! Python's `repr` of a string, for reasons that quote a path as Python users read it.

/// `repr(bytes.decode("utf-8", "surrogateescape"))`, as CPython writes it.
pub fn py_repr(s: &[u8]) -> String {
    let mut chars: Vec<Result<char, u8>> = Vec::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(v) => {
                chars.extend(v.chars().map(Ok));
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                chars.extend(
                    std::str::from_utf8(good)
                        .unwrap_or_default()
                        .chars()
                        .map(Ok),
                );
                let n = e.error_len().unwrap_or(bad.len());
                chars.extend(bad[..n].iter().map(|&b| Err(b)));
                rest = &bad[n..];
            }
        }
    }
    let has = |q: char| chars.contains(&Ok(q));
    let quote = if has('\'') && !has('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in chars {
        match c {
            Err(b) => out.push_str(&format!("\\udc{b:02x}")),
            Ok(c) if c == quote || c == '\\' => {
                out.push('\\');
                out.push(c);
            }
            Ok('\t') => out.push_str("\\t"),
            Ok('\n') => out.push_str("\\n"),
            Ok('\r') => out.push_str("\\r"),
            Ok(c) if !printable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            Ok(c) => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable` for one character: not a control, format, separator (but the
/// space), private-use or surrogate character.
fn printable(c: char) -> bool {
    let n = c as u32;
    if c.is_ascii() {
        return (0x20..0x7f).contains(&n);
    }
    !(c.is_whitespace()
        || c.is_control()
        || n == 0xad
        || (0x600..=0x605).contains(&n)
        || n == 0x61c
        || n == 0x6dd
        || n == 0x70f
        || n == 0x180e
        || (0x200b..=0x200f).contains(&n)
        || (0x2028..=0x202e).contains(&n)
        || (0x2060..=0x206f).contains(&n)
        || (0xe000..=0xf8ff).contains(&n)
        || n == 0xfeff
        || (0xfff9..=0xfffb).contains(&n)
        || n >= 0xf0000)
}

#[cfg(test)]
mod tests {
    use super::py_repr;

    #[test]
    fn like_python() {
        assert_eq!(py_repr(b"/a"), "'/a'");
        assert_eq!(py_repr(b"it's"), "\"it's\"");
        assert_eq!(py_repr(b"a\tb\x01\\"), "'a\\tb\\x01\\\\'");
        assert_eq!(py_repr(b"\xff"), "'\\udcff'");
        assert_eq!(py_repr("/a\u{2002}/é".as_bytes()), "'/a\\u2002/é'");
    }
}
