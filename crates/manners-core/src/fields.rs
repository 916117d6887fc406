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

/// A Request-rate: `requests` every `seconds`, and the part of the day (UTC) it is given
/// for, when a window follows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    pub requests: u64,
    pub seconds: f64,
    /// Start and end, in minutes after midnight UTC, both within the window (`0100-0459`
    /// is 60 to 299); a window that passes midnight has its end before its start.
    pub window: Option<(u16, u16)>,
}

impl Rate {
    /// Seconds between requests it asks for.
    pub fn spacing(&self) -> f64 {
        self.seconds / self.requests as f64
    }

    /// Whether it applies at `minute` of the day (UTC).
    pub fn applies_at(&self, minute: u16) -> bool {
        match self.window {
            None => true,
            Some((start, end)) if start <= end => (start..=end).contains(&minute),
            Some((start, end)) => minute >= start || minute <= end,
        }
    }
}

/// A time of day written `HHMM` or `HMM` (`0600`, `930`), as minutes after midnight.
fn time_of_day(digits: &[u8]) -> Option<u16> {
    if !(3..=4).contains(&digits.len()) || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u16 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let (hours, minutes) = (n / 100, n % 100);
    (hours < 24 && minutes < 60).then_some(hours * 60 + minutes)
}

/// A Request-rate value such as `1/5`, `1/5s`, `10 / 1.5 m`, or one with a window of the
/// day after it, `1/10s 1820-1940` (the extended standard of 1996, which Protego reads).
pub fn rate(value: &[u8]) -> Option<Rate> {
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
    let window = if i < value.len() {
        // `HHMM-HHMM`, with white space around the '-' or none
        let start_at = i;
        digits(&mut i);
        let start = time_of_day(&value[start_at..i])?;
        skip(&mut i);
        if value.get(i) != Some(&b'-') {
            return None;
        }
        i += 1;
        skip(&mut i);
        let end_at = i;
        digits(&mut i);
        let end = time_of_day(&value[end_at..i])?;
        skip(&mut i);
        Some((start, end))
    } else {
        None
    };
    (i == value.len() && requests > 0).then_some(Rate {
        requests,
        seconds: seconds * if unit > 0.0 { unit } else { 1.0 },
        window,
    })
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

    fn pair(value: &[u8]) -> Option<(u64, f64)> {
        rate(value).map(|r| (r.requests, r.seconds))
    }

    #[test]
    fn rates() {
        assert_eq!(pair(b"1/5"), Some((1, 5.0)));
        assert_eq!(pair(b" 10 / 1.5 m "), Some((10, 90.0)));
        assert_eq!(pair(b"0/5"), None);
        assert_eq!(pair(b"1/5x"), None);
        assert_eq!(pair(b"1/.5"), None);
    }

    #[test]
    fn windows() {
        let r = rate(b"1/10s 1820-1940").unwrap();
        assert_eq!(
            (r.requests, r.seconds, r.window),
            (1, 10.0, Some((1100, 1180)))
        );
        assert_eq!(rate(b"1/10 0600-0845").unwrap().window, Some((360, 525)));
        assert_eq!(rate(b"1/20m 100 - 459").unwrap().window, Some((60, 299)));
        assert_eq!(rate(b"1/5").unwrap().window, None);
        for bad in [
            &b"1/5 2400-0100"[..],
            b"1/5 0160-0200",
            b"1/5 0100",
            b"1/5 01-02",
            b"1/5 0100-0200x",
        ] {
            assert_eq!(rate(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        let night = rate(b"1/5 2300-0559").unwrap();
        assert!(night.applies_at(23 * 60) && night.applies_at(5 * 60 + 59) && night.applies_at(0));
        assert!(!night.applies_at(6 * 60) && !night.applies_at(22 * 60 + 59));
        let day = rate(b"1/5 0600-0845").unwrap();
        assert!(day.applies_at(360) && day.applies_at(525) && !day.applies_at(526));
    }
}
