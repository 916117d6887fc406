//! The values of Crawl-delay, Request-rate and Check lines, read as Python reads numbers.

/// Seconds from a Crawl-delay or Check value: a finite number >= 0, as Python's `float()`
/// reads it (ASCII digits; `_` only between digits).
pub fn number(value: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(value)
        .ok()?
        .trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
    let cleaned;
    let s = if s.contains('_') {
        let b = s.as_bytes();
        let ok = b.iter().enumerate().all(|(i, &c)| {
            c != b'_'
                || (i > 0
                    && b[i - 1].is_ascii_digit()
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        });
        if !ok {
            return None;
        }
        cleaned = s.replace('_', "");
        cleaned.as_str()
    } else {
        s
    };
    let lower = s.to_ascii_lowercase();
    let digits = lower.trim_start_matches(['+', '-']);
    if digits.starts_with("inf") || digits.starts_with("nan") {
        return None;
    }
    let n: f64 = s.parse().ok()?;
    (n.is_finite() && n >= 0.0).then_some(n)
}

fn is_re_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// (requests, seconds) from a Request-rate value such as `1/5`, `1/5s` or `10 / 1.5 m`.
pub fn rate(value: &[u8]) -> Option<(u64, f64)> {
    let mut i = 0;
    let skip = |i: &mut usize| {
        while *i < value.len() && is_re_space(value[*i]) {
            *i += 1;
        }
    };
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < value.len() && value[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    skip(&mut i);
    let a = i;
    if digits(&mut i) == 0 {
        return None;
    }
    let requests = std::str::from_utf8(&value[a..i])
        .ok()?
        .parse::<u64>()
        .unwrap_or(u64::MAX);
    skip(&mut i);
    if value.get(i) != Some(&b'/') {
        return None;
    }
    i += 1;
    skip(&mut i);
    let b = i;
    if digits(&mut i) == 0 {
        return None;
    }
    if value.get(i) == Some(&b'.') && value.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        digits(&mut i);
    }
    let seconds: f64 = std::str::from_utf8(&value[b..i]).ok()?.parse().ok()?;
    skip(&mut i);
    let unit = match value.get(i).map(u8::to_ascii_lowercase) {
        Some(b's') => 1.0,
        Some(b'm') => 60.0,
        Some(b'h') => 3600.0,
        Some(b'd') => 86400.0,
        _ => 0.0,
    };
    if unit > 0.0 {
        i += 1;
    }
    skip(&mut i);
    (i == value.len() && requests > 0)
        .then_some((requests, seconds * if unit > 0.0 { unit } else { 1.0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(number(b"2.5"), Some(2.5));
        assert_eq!(number(b"1_0"), Some(10.0));
        assert_eq!(number(b"1__0"), None);
        assert_eq!(number(b"-1"), None);
        assert_eq!(number(b"inf"), None);
        assert_eq!(number(b"1e3"), Some(1000.0));
        assert_eq!(number(b"ten"), None);
    }

    #[test]
    fn rates() {
        assert_eq!(rate(b"1/5"), Some((1, 5.0)));
        assert_eq!(rate(b" 10 / 1.5 m "), Some((10, 90.0)));
        assert_eq!(rate(b"0/5"), None);
        assert_eq!(rate(b"1/5x"), None);
        assert_eq!(rate(b"1/.5"), None);
    }
}
