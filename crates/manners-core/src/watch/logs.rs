//! One line of a server's access log, read: the formats real Gemini, Gopher and Web servers write
//! (what each writes is told in `src/manners/watch/logs.py`, with its samples), and a file's bytes
//! cut into lines.
//!
//! The parsers were Python regular expressions; these scanners read every line as those did (the
//! same matches, the same groups, Python's `\d` `\s` `\w` and `datetime.fromisoformat`), by hand
//! because a log is millions of lines and the engine takes no dependencies.  Text is borrowed from
//! the line whenever nothing in it had to change, so a typical line costs no allocation.

use std::borrow::Cow;

use super::{pyre, Hit, Parsed};

/// The log formats, by their `--format` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    Jetforce,
    MollyBrown,
    Agate,
    Gophernicus,
    Pygopherd,
    Combined,
}

impl Format {
    /// The format named `name` (`jetforce`, `molly-brown`, `agate`, `gophernicus`, `pygopherd`,
    /// `combined`).
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "jetforce" => Format::Jetforce,
            "molly-brown" => Format::MollyBrown,
            "agate" => Format::Agate,
            "gophernicus" => Format::Gophernicus,
            "pygopherd" => Format::Pygopherd,
            "combined" => Format::Combined,
            _ => return None,
        })
    }
}

/// `line` (its end of line removed) read as `format`.
pub fn parse(format: Format, line: &str) -> Parsed<'_> {
    match format {
        Format::Jetforce => parse_jetforce(line),
        Format::MollyBrown => parse_molly_brown(line),
        Format::Agate => parse_agate(line),
        Format::Gophernicus => parse_gophernicus(line),
        Format::Pygopherd => parse_pygopherd(line),
        Format::Combined => parse_combined(line),
    }
}

// --------------------------------------------------------------------------- scanning

/// The end of the run of characters from `from` that `keep` keeps.
fn run(s: &str, from: usize, keep: impl Fn(char) -> bool) -> usize {
    match s[from..].char_indices().find(|&(_, c)| !keep(c)) {
        Some((at, _)) => from + at,
        None => s.len(),
    }
}

/// The end of `\S*` from `from` (a token: no whitespace as Python's `re` has it).
fn token(s: &str, from: usize) -> usize {
    let bytes = s.as_bytes();
    let mut at = from;
    while let Some(&b) = bytes.get(at) {
        if b < 0x80 {
            if matches!(b, b'\t'..=b'\r' | 0x1c..=b' ') {
                return at;
            }
            at += 1;
        } else {
            match s[at..].chars().next() {
                Some(c) if !pyre::space(c) => at += c.len_utf8(),
                _ => return at,
            }
        }
    }
    at
}

/// The end of `\d*` from `from`.
fn digits(s: &str, from: usize) -> usize {
    run(s, from, |c| pyre::digit(c).is_some())
}

/// The end of `\S+` from `from` followed by `then`: None if the token is empty or not so followed.
fn token_then(s: &str, from: usize, then: &str) -> Option<usize> {
    let end = token(s, from);
    (end > from && s[end..].starts_with(then)).then_some(end)
}

/// Where `(?:[^"\\]|\\.)*` from `from` stops at a quote: the first quote no backslash escapes;
/// None when the line ends first.
fn quoted(s: &str, from: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut at = from;
    while let Some(&b) = bytes.get(at) {
        match b {
            b'"' => return Some(at),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
    None
}

/// The value of a run of decimal digits (any script's, as Python's `int` reads them).
fn number(text: &str) -> Option<u64> {
    text.chars().try_fold(0u64, |sum, c| {
        sum.checked_mul(10)?.checked_add(u64::from(pyre::digit(c)?))
    })
}

/// Python's `str.lower()`, borrowed when nothing changes.
fn lower(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        }
    } else {
        let lowered = text.to_lowercase();
        if lowered == text {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(lowered)
        }
    }
}

// --------------------------------------------------------------------------- shared pieces

/// Days from 1970-01-01 to the date (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Whether Python's `datetime` takes these fields.
fn real_time(year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64) -> bool {
    (1..=9999).contains(&year)
        && (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..60).contains(&second)
}

/// The characters of a text read one pattern piece at a time.
struct Reader<'a> {
    chars: std::str::Chars<'a>,
}

impl Reader<'_> {
    /// `n` decimal digits (`\d{n}`), their value.
    fn digits(&mut self, n: usize) -> Option<i64> {
        (0..n).try_fold(0i64, |sum, _| {
            Some(sum * 10 + i64::from(pyre::digit(self.chars.next()?)?))
        })
    }

    fn char(&mut self, want: char) -> Option<()> {
        (self.chars.next()? == want).then_some(())
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `29/Nov/2026:11:14:13 +0000` (Common Log Format) as epoch seconds; None if not one.
fn clf_time(text: &str) -> Option<f64> {
    if let Some(when) = clf_time_ascii(text.as_bytes()) {
        return when;
    }
    let mut r = Reader {
        chars: text.chars(),
    };
    let day = r.digits(2)?;
    r.char('/')?;
    let name = [r.chars.next()?, r.chars.next()?, r.chars.next()?];
    let month = MONTHS.iter().position(|m| m.chars().eq(name))? as i64 + 1;
    r.char('/')?;
    let year = r.digits(4)?;
    r.char(':')?;
    let hour = r.digits(2)?;
    r.char(':')?;
    let minute = r.digits(2)?;
    r.char(':')?;
    let second = r.digits(2)?;
    r.char(' ')?;
    let sign = match r.chars.next()? {
        '+' => 1,
        '-' => -1,
        _ => return None,
    };
    let offset = sign * (r.digits(2)? * 60 + r.digits(2)?) * 60;
    if r.chars.next().is_some() || !real_time(year, month, day, hour, minute, second) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some((days * 86_400 + hour * 3600 + minute * 60 + second - offset) as f64)
}

/// [`clf_time`] of a stamp of 26 bytes, byte by byte (the usual line): Some(None) when it is not
/// one (a stamp of 26 bytes that are not all ASCII has too few characters to be one); None to
/// read it character by character.
fn clf_time_ascii(text: &[u8]) -> Option<Option<f64>> {
    let shape = b"00/Mon/0000:00:00:00 +0000";
    if text.len() != shape.len() {
        return None;
    }
    let mut value = [0i64; 7];
    let mut field = 0;
    for (i, (&b, &want)) in text.iter().zip(shape).enumerate() {
        match want {
            b'0' if b.is_ascii_digit() => value[field] = value[field] * 10 + i64::from(b - b'0'),
            b'0' => return Some(None),
            b'M' | b'o' | b'n' | b'+' => {}
            _ if b == want => {}
            _ => return Some(None),
        }
        if matches!(i, 1 | 10 | 13 | 16 | 19 | 23) {
            field += 1;
        }
    }
    let Some(month) = MONTHS.iter().position(|m| m.as_bytes() == &text[3..6]) else {
        return Some(None);
    };
    let sign = match text[21] {
        b'+' => 1,
        b'-' => -1,
        _ => return Some(None),
    };
    let [day, year, hour, minute, second, oh, om] = value;
    let month = month as i64 + 1;
    if !real_time(year, month, day, hour, minute, second) {
        return Some(None);
    }
    let offset = sign * (oh * 60 + om) * 60;
    let days = days_from_civil(year, month, day);
    Some(Some(
        (days * 86_400 + hour * 3600 + minute * 60 + second - offset) as f64,
    ))
}

/// The date and time of day `days` (from 1970-01-01) falls on: (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `n` ASCII digits at `*at` of `bytes` (CPython's `parse_digits`: the string's end reads as NUL).
fn ascii_digits(bytes: &[u8], at: &mut usize, n: usize) -> Option<i64> {
    let mut value = 0;
    for _ in 0..n {
        let b = bytes.get(*at).copied().unwrap_or(0);
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(b - b'0');
        *at += 1;
    }
    Some(value)
}

/// Where the date of an ISO 8601 text ends (CPython 3.11's `_find_isoformat_datetime_separator`).
fn iso_separator(bytes: &[u8]) -> Option<usize> {
    let len = bytes.len();
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    if len == 7 {
        return Some(7);
    }
    if at(4) == b'-' {
        if at(5) != b'W' {
            return Some(10);
        }
        if len < 8 {
            return None;
        }
        if len > 8 && at(8) == b'-' {
            if len == 9 {
                return None;
            }
            return Some(if len > 10 && at(10).is_ascii_digit() {
                8
            } else {
                10
            });
        }
        return Some(8);
    }
    if at(4) != b'W' {
        return Some(8);
    }
    let mut idx = 7;
    while idx < len && at(idx).is_ascii_digit() {
        idx += 1;
    }
    Some(if idx < 9 {
        idx
    } else if idx % 2 == 0 {
        7
    } else {
        8
    })
}

/// The date of an ISO 8601 text whose date part is `len` bytes (CPython 3.11's
/// `parse_isoformat_date`): (year, month, day), not yet checked to be a real date.
fn iso_date(bytes: &[u8], len: usize) -> Option<(i64, i64, i64)> {
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let mut p = 0;
    let year = ascii_digits(bytes, &mut p, 4)?;
    let dashes = at(p) == b'-';
    if dashes {
        p += 1;
    }
    if at(p) == b'W' {
        p += 1;
        let week = ascii_digits(bytes, &mut p, 2)?;
        let weekday = if p < len {
            if dashes {
                if at(p) != b'-' {
                    return None;
                }
                p += 1;
            }
            ascii_digits(bytes, &mut p, 1)?
        } else {
            1
        };
        return iso_week_date(year, week, weekday);
    }
    let month = ascii_digits(bytes, &mut p, 2)?;
    if dashes {
        if at(p) != b'-' {
            return None;
        }
        p += 1;
    }
    let day = ascii_digits(bytes, &mut p, 2)?;
    Some((year, month, day))
}

/// An ISO week date as (year, month, day) (CPython's `iso_to_ymd`); None when out of range (a year
/// 0 is: CPython gets no real date from it either).
fn iso_week_date(year: i64, week: i64, weekday: i64) -> Option<(i64, i64, i64)> {
    if year < 1 {
        return None;
    }
    let first = days_from_civil(year, 1, 1);
    let first_weekday = (first + 3).rem_euclid(7); // Monday 0: 1970-01-01 was a Thursday
    if !(1..53).contains(&week)
        && !(week == 53 && (first_weekday == 3 || (first_weekday == 2 && leap(year))))
    {
        return None;
    }
    if !(1..8).contains(&weekday) {
        return None;
    }
    let monday = first - first_weekday + if first_weekday > 3 { 7 } else { 0 };
    Some(civil_from_days(monday + (week - 1) * 7 + weekday - 1))
}

/// `[HH[:?MM[:?SS[.ffffff]]]]` from `start` to `end` (CPython 3.11's `parse_hh_mm_ss_ff`):
/// ([hour, minute, second, microsecond], whether text follows); None when malformed.
fn iso_clock(bytes: &[u8], start: usize, end: usize) -> Option<([i64; 4], bool)> {
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let mut fields = [0i64; 4];
    let mut p = start;
    let mut colons = true;
    for (i, field) in fields.iter_mut().take(3).enumerate() {
        *field = ascii_digits(bytes, &mut p, 2)?;
        let c = at(p);
        p += 1;
        if i == 0 {
            colons = c == b':';
        }
        if p >= end {
            return Some((fields, c != 0));
        } else if colons && c == b':' {
            continue;
        } else if c == b'.' || c == b',' {
            break;
        } else if !colons {
            p -= 1;
        } else {
            return None;
        }
    }
    let n = (end - p).min(6);
    let fraction = ascii_digits(bytes, &mut p, n)?;
    fields[3] = if n == 0 {
        0
    } else {
        fraction * 10i64.pow(6 - n as u32)
    };
    while at(p).is_ascii_digit() {
        p += 1;
    }
    Some((fields, at(p) != 0))
}

/// `us` microseconds as seconds, rounded as Python divides integers (correctly).
fn seconds(us: i64) -> f64 {
    const MILLION: u128 = 1_000_000;
    if us.unsigned_abs() < 1 << 53 {
        return us as f64 / 1e6; // both exact: one rounding
    }
    let a = u128::from(us.unsigned_abs());
    let bits = 128 - (a / MILLION).leading_zeros();
    let shift = 54 - bits; // the quotient gets 54 bits
    let scaled = a << shift;
    let (q, r) = (scaled / MILLION, scaled % MILLION);
    let mut m = q >> 1;
    if q & 1 == 1 && (r != 0 || m & 1 == 1) {
        m += 1;
    }
    let value = m as f64 * 2f64.powi(1 - shift as i32);
    if us < 0 {
        -value
    } else {
        value
    }
}

/// `2026-11-29T11:14:34Z` (RFC 3339; fractions and offsets too) as epoch seconds: what Python
/// 3.11's `datetime.fromisoformat` reads (its quirks too), None if it reads no time or one
/// without an offset (a local time names no instant).
fn iso_time(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    text.chars().nth(6)?; // shorter than any date and time
    let separator = iso_separator(bytes)?;
    let (year, month, day) = iso_date(bytes, separator)?;
    if len <= separator {
        return None; // a date alone: no offset
    }
    let start = separator
        + match at(separator) {
            b if b & 0x80 == 0 => 1,
            b if b & 0xf0 == 0xe0 => 3,
            b if b & 0xf0 == 0xf0 => 4,
            _ => 2,
        };
    let mut zone = start;
    loop {
        if matches!(at(zone), b'Z' | b'+' | b'-') {
            break;
        }
        zone += 1;
        if zone >= len {
            break;
        }
    }
    let ([hour, minute, second, micro], _) = iso_clock(bytes, start, zone)?;
    if zone == len {
        return None; // no offset
    }
    let offset = if at(zone) == b'Z' {
        if at(zone + 1) != 0 {
            return None;
        }
        0
    } else {
        let sign = if at(zone) == b'-' { -1 } else { 1 };
        let ([h, m, s, us], more) = iso_clock(bytes, zone + 1, len)?;
        if more {
            return None;
        }
        let whole = sign * (h * 3600 + m * 60 + s);
        let offset = if whole == 0 {
            0
        } else {
            whole * 1_000_000 + sign * us
        };
        if offset.abs() >= 86_400_000_000 {
            return None;
        }
        offset
    };
    if !real_time(year, month, day, hour, minute, second) {
        return None;
    }
    let local = (days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
        * 1_000_000
        + micro;
    Some(seconds(local - offset))
}

/// nginx's and Apache's escapes undone: `\xHH` is a byte (several make UTF-8), `\"`, `\\` and
/// Apache's `\n` `\t` ... their characters; bytes that are not UTF-8 become U+FFFD.
fn unescape_web(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b == b'\\' {
            let next = bytes.get(at + 1).copied().unwrap_or(0);
            let byte = match next {
                b'x' => match (
                    bytes.get(at + 2).and_then(|&h| hex(h)),
                    bytes.get(at + 3).and_then(|&h| hex(h)),
                ) {
                    (Some(high), Some(low)) => {
                        out.push(high << 4 | low);
                        at += 4;
                        continue;
                    }
                    _ => None,
                },
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                b'b' => Some(0x08),
                b'v' => Some(0x0b),
                _ => None,
            };
            if let Some(byte) = byte {
                out.push(byte);
                at += 2;
                continue;
            }
        }
        out.push(b);
        at += 1;
    }
    match String::from_utf8(out) {
        Ok(text) => Cow::Owned(text),
        Err(error) => Cow::Owned(String::from_utf8_lossy(error.as_bytes()).into_owned()),
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Rust's `char::escape_default` undone (agate): `\u{1b}`, `\t`, `\"` ...; a `\u{...}` that is no
/// character becomes U+FFFD.
fn unescape_rust(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let simple = match after.as_bytes().first() {
            Some(b't') => Some('\t'),
            Some(b'r') => Some('\r'),
            Some(b'n') => Some('\n'),
            Some(b'0') => Some('\0'),
            Some(b'\'') => Some('\''),
            Some(b'"') => Some('"'),
            Some(b'\\') => Some('\\'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            rest = &after[1..];
            continue;
        }
        if let Some(code) = after.strip_prefix("u{") {
            let n = code
                .bytes()
                .take(7)
                .take_while(u8::is_ascii_hexdigit)
                .count();
            if (1..=6).contains(&n) && code.as_bytes().get(n) == Some(&b'}') {
                let value = u32::from_str_radix(&code[..n], 16).unwrap_or(u32::MAX);
                out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
                rest = &code[n + 1..];
                continue;
            }
        }
        out.push('\\');
        rest = after;
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The `host` or `host:port` of an absolute URL, lower-cased, without user information.
fn authority(url: &str) -> Option<Cow<'_, str>> {
    let at = url.find("://")?;
    if at == 0 {
        return None;
    }
    let rest = &url[at + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = match authority.rfind('@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    let authority = lower(authority);
    (!authority.is_empty()).then_some(authority)
}

/// A client address as logged, brackets of an IPv6 one removed; None for `-` or nothing.
fn address(text: &str) -> Option<Cow<'_, str>> {
    if text.is_empty() || text == "-" {
        return None;
    }
    Some(Cow::Borrowed(
        match text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            Some(inner) => inner,
            None => text,
        },
    ))
}

/// Bytes as logged: digits, else None (`-`, `-1`).
fn size(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    number(text)
}

// --------------------------------------------------------------------------- Gemini

/// Whether `line` is one of jetforce's own lines at its start (its banner).
fn jetforce_noise(line: &str) -> bool {
    const STARTS: [&str; 9] = [
        "Generating ad-hoc certificate",
        "You are now riding on",
        "An Experimental Gemini Server",
        "Listening on ",
        "https://github.com/michael-lazar/jetforce",
        "Server hostname is ",
        "Root directory: ",
        "TLS Certificate",
        "TLS Private",
    ];
    STARTS.iter().any(|start| line.starts_with(start))
        || (line.len() >= 20
            && line
                .bytes()
                .all(|b| matches!(b, b'_' | b'/' | b'\\' | b' ')))
}

/// jetforce: `CLIENT [TIME] "URL" STATUS "META" SIZE`, the URL raw (quotes and all).
fn parse_jetforce(line: &str) -> Parsed<'_> {
    let Some(hit) = jetforce_hit(line) else {
        return if jetforce_noise(line) {
            Parsed::Noise
        } else {
            Parsed::Unread
        };
    };
    hit.map_or(Parsed::Unread, Parsed::Hit)
}

/// A jetforce request line: None if the pattern does not match, Some(None) if its time is no time.
fn jetforce_hit(line: &str) -> Option<Option<Hit<'_>>> {
    let client_end = token_then(line, 0, " [")?;
    let t_start = client_end + 2;
    let t_end = t_start + line[t_start..].find(']')?;
    let url_start = t_end + 1;
    line[url_start..].starts_with(" \"").then_some(())?;
    let url_start = url_start + 2;
    // from the end: SIZE, then the meta's closing quote, then its opening one (the last quote no
    // backslash escapes before it), then STATUS and the URL's closing quote
    let size_start = line.len()
        - line
            .chars()
            .rev()
            .take_while(|&c| pyre::digit(c).is_some())
            .map(char::len_utf8)
            .sum::<usize>();
    if size_start == line.len() || !line[..size_start].ends_with("\" ") {
        return None;
    }
    let meta_end = size_start - 2;
    if escaped(line.as_bytes(), meta_end) {
        return None;
    }
    let meta_open = (url_start..meta_end)
        .rev()
        .find(|&i| line.as_bytes()[i] == b'"' && !escaped(line.as_bytes(), i))?;
    if !line[..meta_open].ends_with(' ') {
        return None;
    }
    let status_end = meta_open - 1;
    let status_start = status_end
        - line[..status_end]
            .chars()
            .rev()
            .take_while(|&c| pyre::digit(c).is_some())
            .map(char::len_utf8)
            .sum::<usize>();
    if status_start == status_end
        || !line[..status_start].ends_with("\" ")
        || status_start - 2 < url_start
    {
        return None;
    }
    let url = &line[url_start..status_start - 2];
    let Some(when) = clf_time(&line[t_start..t_end]) else {
        return Some(None);
    };
    Some(Some(Hit {
        when: Some(when),
        client: address(&line[..client_end]),
        scheme: "gemini",
        host: authority(url),
        target: Cow::Borrowed(url),
        status: Some(&line[status_start..status_end]),
        agent: None,
        size: size(&line[size_start..]),
    }))
}

/// Whether the byte at `at` follows an odd run of backslashes (is escaped).
fn escaped(bytes: &[u8], at: usize) -> bool {
    bytes[..at]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count()
        % 2
        == 1
}

/// molly-brown: `TIME<TAB>CLIENT<TAB>STATUS<TAB>URL`.
fn parse_molly_brown(line: &str) -> Parsed<'_> {
    let mut r = Reader {
        chars: line.chars(),
    };
    let dated = (|| {
        r.digits(4)?;
        r.char('-')?;
        r.digits(2)?;
        r.char('-')?;
        r.digits(2)?;
        r.char('T')
    })();
    if dated.is_none() {
        return Parsed::Unread;
    }
    let after_t = line.len() - r.chars.as_str().len();
    let Some(t_end) = line.find('\t') else {
        return Parsed::Unread;
    };
    if t_end <= after_t {
        return Parsed::Unread;
    }
    let client_start = t_end + 1;
    let Some(client_end) = line[client_start..].find('\t').map(|i| client_start + i) else {
        return Parsed::Unread;
    };
    let status_start = client_end + 1;
    let status_end = digits(line, status_start);
    if status_end == status_start || !line[status_end..].starts_with('\t') {
        return Parsed::Unread;
    }
    let Some(when) = iso_time(&line[..t_end]) else {
        return Parsed::Unread;
    };
    let url = &line[status_end + 1..];
    let status = &line[status_start..status_end];
    if url == "-" && status == "40" {
        return Parsed::Noise; // a connection closed before it sent a request
    }
    Parsed::Hit(Hit {
        when: Some(when),
        client: address(&line[client_start..client_end]),
        scheme: "gemini",
        host: authority(url),
        target: Cow::Borrowed(url),
        status: Some(status),
        agent: None,
        size: None,
    })
}

/// The end of env_logger's prefix as agate writes it (`[TIME LEVEL agate...] `) and its TIME.
fn agate_prefix(line: &str) -> Option<(usize, &str)> {
    line.starts_with('[').then_some(())?;
    let t_end = token_then(line, 1, " ")?;
    let level = run(line, t_end, |c| c == ' ');
    let level_end = run(line, level, |c| c.is_ascii_uppercase());
    if level_end == level {
        return None;
    }
    let name = run(line, level_end, |c| c == ' ');
    if name == level_end || !line[name..].starts_with("agate") {
        return None;
    }
    let close = name + line[name..].find(']')?;
    line[close..]
        .starts_with("] ")
        .then_some((close + 2, &line[1..t_end]))
}

/// agate after its prefix: `LOCAL CLIENT "REQUEST" STATUS "META"[ error:...]`: (client, request,
/// status).
fn agate_request(line: &str, from: usize) -> Option<(&str, &str, &str)> {
    let local_end = token_then(line, from, " ")?;
    let client_end = token_then(line, local_end + 1, " \"")?;
    let req_start = client_end + 2;
    let req_end = quoted(line, req_start)?;
    let rest = &line[req_end..];
    let rest = rest.strip_prefix("\" ")?;
    let mut status = rest.char_indices();
    let two = match (status.next(), status.next(), status.next()) {
        (Some((_, a)), Some((_, b)), Some((at, ' ')))
            if pyre::digit(a).is_some() && pyre::digit(b).is_some() =>
        {
            at
        }
        _ => return None,
    };
    let meta = rest[two..].strip_prefix(" \"")?;
    // the meta is greedy: its closing quote is the last one that ends the line or is followed by
    // " error:"
    let ends = meta.ends_with('"')
        || meta
            .match_indices('"')
            .any(|(at, _)| meta[at + 1..].starts_with(" error:"));
    ends.then_some((
        &line[local_end + 1..client_end],
        &line[req_start..req_end],
        &rest[..two],
    ))
}

/// agate (env_logger): `[TIME LEVEL agate] LOCAL CLIENT "REQUEST" STATUS "META"`.
fn parse_agate(line: &str) -> Parsed<'_> {
    let prefix = agate_prefix(line);
    let matched = prefix
        .and_then(|(end, t)| agate_request(line, end).map(|m| (Some(t), m)))
        .or_else(|| agate_request(line, 0).map(|m| (None, m)));
    let Some((t, (client, request, status))) = matched else {
        return if prefix.is_some() {
            Parsed::Noise
        } else {
            Parsed::Unread
        };
    };
    if status == "00" || status == "01" {
        return Parsed::Noise; // a connection that never made a request
    }
    let target = unescape_rust(request);
    let host = match &target {
        Cow::Borrowed(url) => authority(url),
        Cow::Owned(url) => authority(url).map(|host| Cow::Owned(host.into_owned())),
    };
    Parsed::Hit(Hit {
        when: t.and_then(iso_time),
        client: address(client),
        scheme: "gemini",
        host,
        target,
        status: Some(status),
        agent: None,
        size: None,
    })
}

// --------------------------------------------------------------------------- Gopher

/// gophernicus: `CLIENT HOST - [TIME] "GET TYPESELECTOR HTTP/1.0" STATUS SIZE "REF" "Unknown gopher
/// client"`.
fn parse_gophernicus(line: &str) -> Parsed<'_> {
    const TAIL: &str = "\" \"Unknown gopher client\"";
    const PROTOCOL: &str = " HTTP/1.0\" ";
    let matched = (|| {
        let client_end = token_then(line, 0, " ")?;
        let host_end = token_then(line, client_end + 1, " - [")?;
        let t_start = host_end + 4;
        let t_end = t_start + line[t_start..].find(']')?;
        let rest = line[t_end..].strip_prefix("] \"GET ")?;
        let kind = rest.chars().next()?;
        let sel_start = line.len() - rest.len() + kind.len_utf8();
        let ref_end = line.len().checked_sub(TAIL.len())?;
        if !line.ends_with(TAIL) || ref_end < sel_start {
            return None;
        }
        // the selector is greedy: the last " HTTP/1.0\" " after which STATUS SIZE "REF... follows
        let mut end = ref_end;
        loop {
            let sel_end = sel_start + line[sel_start..end].rfind(PROTOCOL)?;
            end = sel_end + PROTOCOL.len() - 1;
            let status_start = sel_end + PROTOCOL.len();
            let status_end = digits(line, status_start);
            if status_end == status_start || !line[status_end..].starts_with(' ') {
                continue;
            }
            let size_start = status_end + 1;
            let signed = size_start + usize::from(line[size_start..].starts_with('-'));
            let size_end = digits(line, signed);
            if size_end == signed || !line[size_end..].starts_with(" \"") || size_end + 2 > ref_end
            {
                continue;
            }
            let hit = Hit {
                when: None,
                client: address(&line[..client_end]),
                scheme: "gopher",
                host: Some(lower(&line[client_end + 1..host_end])),
                target: Cow::Borrowed(&line[sel_start..sel_end]),
                status: Some(&line[status_start..status_end]),
                agent: None,
                size: size(&line[size_start..size_end]),
            };
            return Some((hit, &line[t_start..t_end]));
        }
    })();
    let Some((hit, t)) = matched else {
        return Parsed::Unread;
    };
    match clf_time(t) {
        Some(when) => Parsed::Hit(Hit {
            when: Some(when),
            ..hit
        }),
        None => Parsed::Unread,
    }
}

/// The end of a syslog prefix of pygopherd's lines (`TIME HOST pygopherd[PID]: `) and its time
/// when RFC 3339 (a BSD stamp has no year: no time).
fn syslog_prefix(line: &str) -> Option<(usize, Option<&str>)> {
    let mut r = Reader {
        chars: line.chars(),
    };
    let first = line.chars().next()?;
    let (stamp_end, iso) = if pyre::digit(first).is_some() {
        (|| {
            r.digits(4)?;
            r.char('-')?;
            r.digits(2)?;
            r.char('-')?;
            r.digits(2)?;
            r.char('T')
        })()?;
        let after_t = line.len() - r.chars.as_str().len();
        let end = token_then(line, after_t, " ")?;
        (end, true)
    } else {
        let upper = r.chars.next()?.is_ascii_uppercase();
        let lower = r.chars.next()?.is_ascii_lowercase() && r.chars.next()?.is_ascii_lowercase();
        r.char(' ')?;
        let day = r.chars.next()?;
        if !(upper && lower && (day == ' ' || pyre::digit(day).is_some())) {
            return None;
        }
        (|| {
            r.digits(1)?;
            r.char(' ')?;
            r.digits(2)?;
            r.char(':')?;
            r.digits(2)?;
            r.char(':')?;
            r.digits(2)?;
            r.char(' ')
        })()?;
        (line.len() - r.chars.as_str().len() - 1, false)
    };
    let host_end = token_then(line, stamp_end + 1, " pygopherd")?;
    let mut at = host_end + " pygopherd".len();
    if let Some(pid) = line[at..].strip_prefix('[') {
        let end = digits(pid, 0);
        if end > 0 && pid[end..].starts_with(']') {
            at += end + 2;
        }
    }
    line[at..]
        .starts_with(": ")
        .then_some((at + 2, iso.then(|| &line[..stamp_end])))
}

/// `CLIENT [PROTOCOL/HANDLER]` from `from`: (client, protocol, where the bracket ends).
fn pygopherd_head(line: &str, from: usize) -> Option<(&str, &str, usize)> {
    let client_end = token_then(line, from, " [")?;
    let proto_start = client_end + 2;
    let proto_end = run(line, proto_start, pyre::word);
    if proto_end == proto_start || !line[proto_end..].starts_with('/') {
        return None;
    }
    let handler_end = run(line, proto_end + 1, pyre::word);
    if handler_end == proto_end + 1 || !line[handler_end..].starts_with(']') {
        return None;
    }
    Some((
        &line[from..client_end],
        &line[proto_start..proto_end],
        handler_end + 1,
    ))
}

/// pygopherd after its syslog prefix: (client, protocol, selector).
fn pygopherd_request(line: &str, from: usize) -> Option<(&str, &str, &str)> {
    const MISSING: &str = " EXCEPTION FileNotFound: '";
    const NOT_THERE: &str = "' does not exist";
    let (client, protocol, end) = pygopherd_head(line, from)?;
    let rest = &line[end..];
    if let Some(selector) = rest.strip_prefix(": ") {
        return Some((client, protocol, selector));
    }
    let missing = rest.strip_prefix(MISSING)?;
    // greedy: the last "' does not exist" that ends the line or is followed by " (...)"
    missing
        .match_indices(NOT_THERE)
        .map(|(at, _)| at)
        .filter(|&at| {
            let after = &missing[at + NOT_THERE.len()..];
            after.is_empty()
                || (after.len() >= 3 && after.starts_with(" (") && after.ends_with(')'))
        })
        .last()
        .map(|at| (client, protocol, &missing[..at]))
}

/// Whether `line` (after a syslog prefix from `from`) is one of pygopherd's lines that record no
/// request.
fn pygopherd_noise_at(line: &str, from: usize) -> bool {
    const STARTS: [&str; 12] = [
        "Pygopherd starting",
        "mimetypes initialized",
        "Running.",
        "SIGTERM",
        "SIGHUP",
        "Terminating all",
        "Master application",
        "setpgrp()",
        "Chrooted to",
        "Supplemental group",
        "Switched to",
        "Application startup",
    ];
    let rest = &line[from..];
    STARTS.iter().any(|start| rest.starts_with(start))
        || pygopherd_head(line, from)
            .is_some_and(|(_, _, end)| line[end..].starts_with(" EXCEPTION "))
}

/// pygopherd: `[SYSLOG PREFIX ]CLIENT [PROTOCOL/HANDLER]: SELECTOR`, or its EXCEPTION line for a
/// selector it has no handler for.
fn parse_pygopherd(line: &str) -> Parsed<'_> {
    let prefix = syslog_prefix(line);
    let matched = prefix
        .and_then(|(end, iso)| pygopherd_request(line, end).map(|m| (iso, m)))
        .or_else(|| pygopherd_request(line, 0).map(|m| (None, m)));
    let Some((iso, (client, protocol, selector))) = matched else {
        let noise = prefix.is_some_and(|(end, _)| pygopherd_noise_at(line, end))
            || pygopherd_noise_at(line, 0);
        return if noise { Parsed::Noise } else { Parsed::Unread };
    };
    Parsed::Hit(Hit {
        when: iso.and_then(iso_time),
        client: address(if client == "unknown-address" {
            ""
        } else {
            client
        }),
        scheme: match protocol {
            "HTTPProtocol" => "http",
            "GeminiProtocol" => "gemini",
            "SpartanProtocol" => "spartan",
            _ => "gopher",
        },
        host: None,
        target: Cow::Borrowed(selector),
        status: None,
        agent: None,
        size: None,
    })
}

// --------------------------------------------------------------------------- Web

/// The parts of a combined (or common, or vhost_combined) line.
struct Combined<'a> {
    client: &'a str,
    t: &'a str,
    request: &'a str,
    status: &'a str,
    size: &'a str,
    agent: Option<&'a str>,
}

/// A combined line from `from` (after a virtual host, or the start).
fn combined_at(line: &str, from: usize) -> Option<Combined<'_>> {
    let client_end = token_then(line, from, " ")?;
    let ident_end = token_then(line, client_end + 1, " ")?;
    let user_end = token_then(line, ident_end + 1, " [")?;
    let t_start = user_end + 2;
    let t_end = t_start + line[t_start..].find(']')?;
    let req_start = t_end + 1;
    line[req_start..].starts_with(" \"").then_some(())?;
    let req_start = req_start + 2;
    let req_end = quoted(line, req_start)?;
    let status_start = req_end + 1;
    line[status_start..].starts_with(' ').then_some(())?;
    let status_start = status_start + 1;
    let status_end = if line[status_start..].starts_with('-') {
        status_start + 1
    } else {
        let mut r = Reader {
            chars: line[status_start..].chars(),
        };
        r.digits(3)?;
        line.len() - r.chars.as_str().len()
    };
    line[status_end..].starts_with(' ').then_some(())?;
    let size_start = status_end + 1;
    let size_end = if line[size_start..].starts_with('-') {
        size_start + 1
    } else {
        digits(line, size_start)
    };
    if size_end == size_start {
        return None;
    }
    let rest = &line[size_end..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    // ` "REF" "AGENT"` when it is there and what follows is the end or a space
    let agent = (|| {
        let ref_start = size_end + 2;
        rest.starts_with(" \"").then_some(())?;
        let ref_end = quoted(line, ref_start)?;
        line[ref_end..].starts_with("\" \"").then_some(())?;
        let ua_start = ref_end + 3;
        let ua_end = quoted(line, ua_start)?;
        let after = &line[ua_end + 1..];
        (after.is_empty() || after.starts_with(' ')).then_some(&line[ua_start..ua_end])
    })();
    Some(Combined {
        client: &line[from..client_end],
        t: &line[t_start..t_end],
        request: &line[req_start..req_end],
        status: &line[status_start..status_end],
        size: &line[size_start..size_end],
        agent,
    })
}

/// The end of a virtual host and port (`host:port `) at the start of `line`.
fn vhost(line: &str) -> Option<usize> {
    let end = token_then(line, 0, " ")?;
    let token = &line[..end];
    let colon = token.rfind(':')?;
    let port = &token[colon + 1..];
    (colon > 0 && !port.is_empty() && port.chars().all(|c| pyre::digit(c).is_some())).then_some(end)
}

/// nginx's and Apache's combined: `[VHOST:PORT ]CLIENT IDENT USER [TIME] "REQUEST" STATUS SIZE
/// "REFERRER" "AGENT"`, or common (without the last two).
fn parse_combined(line: &str) -> Parsed<'_> {
    let host_end = vhost(line);
    let matched = host_end
        .and_then(|end| combined_at(line, end + 1).map(|m| (Some(&line[..end]), m)))
        .or_else(|| combined_at(line, 0).map(|m| (None, m)));
    let Some((host, m)) = matched else {
        return Parsed::Unread;
    };
    let Some(when) = clf_time(m.t) else {
        return Parsed::Unread;
    };
    let request = unescape_web(m.request);
    let target = match request {
        Cow::Borrowed(request) => Cow::Borrowed(request_target(request)),
        Cow::Owned(request) => {
            let target = request_target(&request);
            if target.len() == request.len() {
                Cow::Owned(request)
            } else {
                Cow::Owned(target.to_owned())
            }
        }
    };
    Parsed::Hit(Hit {
        when: Some(when),
        client: address(m.client),
        scheme: "web",
        host: host.map(lower),
        target,
        status: (m.status != "-").then_some(m.status),
        agent: m.agent.filter(|&agent| agent != "-").map(unescape_web),
        size: size(m.size),
    })
}

/// `METHOD TARGET PROTOCOL`'s target; the whole request when it is not three words.
fn request_target(request: &str) -> &str {
    let mut words = request.split(' ');
    match (words.next(), words.next(), words.next(), words.next()) {
        (Some(_), Some(target), Some(_), None) => target,
        _ => request,
    }
}

// --------------------------------------------------------------------------- lines

/// Bytes in a line; a longer one is not kept (nginx's longest is 8 KiB).
pub const MAX_LINE: usize = 16 * 1024;

/// One line of a file, its end of line (LF or CRLF) removed.
#[derive(Clone, Debug, PartialEq)]
pub enum Line<'a> {
    /// Its text, bytes that are not UTF-8 replaced by U+FFFD.
    Text(Cow<'a, str>),
    /// A line longer than [`MAX_LINE`] bytes, unread.
    Overlong,
}

/// A file's bytes cut into lines, chunk by chunk: feed it each chunk ([`Splitter::lines`]); the
/// bytes of a line not yet ended are not consumed, for the caller to give again at the start of
/// the next chunk (never more than [`MAX_LINE`] of them: an overlong line's rest is skipped here).
#[derive(Clone, Debug, Default)]
pub struct Splitter {
    /// Lines met so far.
    number: u64,
    /// Inside an overlong line: its rest is skipped to its line feed.
    skipping: bool,
}

impl Splitter {
    pub fn new() -> Splitter {
        Splitter::default()
    }

    /// Lines met so far (the number of the last line yielded).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The lines `chunk` ends, each with its number from 1; at the end of the file (`end`) its
    /// last line too, ended or not.  Ask the iterator how many bytes it consumed when done.
    pub fn lines<'s, 'c>(&'s mut self, chunk: &'c [u8], end: bool) -> Lines<'s, 'c> {
        Lines {
            splitter: self,
            chunk,
            end,
            at: 0,
        }
    }
}

/// The lines of one chunk (see [`Splitter::lines`]).
#[derive(Debug)]
pub struct Lines<'s, 'c> {
    splitter: &'s mut Splitter,
    chunk: &'c [u8],
    end: bool,
    at: usize,
}

impl Lines<'_, '_> {
    /// Bytes of the chunk consumed: the lines yielded and any overlong rest skipped.  The rest
    /// starts a line that has not ended.
    pub fn consumed(&self) -> usize {
        self.at
    }
}

/// The first line feed in `bytes`, eight bytes at a time.
fn line_feed(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const FEEDS: u64 = ONES * b'\n' as u64;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        let x = u64::from_le_bytes(eight) ^ FEEDS;
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| at + i)
}

impl<'c> Iterator for Lines<'_, 'c> {
    type Item = (u64, Line<'c>);

    fn next(&mut self) -> Option<(u64, Line<'c>)> {
        let chunk: &'c [u8] = self.chunk;
        loop {
            let rest = &chunk[self.at..];
            if self.splitter.skipping {
                match line_feed(rest) {
                    Some(i) => {
                        self.at += i + 1;
                        self.splitter.skipping = false;
                    }
                    None => {
                        self.at = chunk.len();
                        return None;
                    }
                }
                continue;
            }
            if rest.is_empty() {
                return None;
            }
            let window = &rest[..rest.len().min(MAX_LINE + 1)];
            let line = match line_feed(window) {
                Some(i) => {
                    self.at += i + 1;
                    let raw = &rest[..i];
                    raw.strip_suffix(b"\r").unwrap_or(raw)
                }
                None if window.len() > MAX_LINE => {
                    // longer than any line kept, ended or not: skip to its end
                    self.at += window.len();
                    self.splitter.skipping = true;
                    self.splitter.number += 1;
                    return Some((self.splitter.number, Line::Overlong));
                }
                None if self.end => {
                    self.at = chunk.len();
                    rest
                }
                None => return None,
            };
            self.splitter.number += 1;
            let text = match std::str::from_utf8(line) {
                Ok(text) => Cow::Borrowed(text), // the usual line: checked fast, not copied
                Err(_) => String::from_utf8_lossy(line),
            };
            return Some((self.splitter.number, Line::Text(text)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 29/Nov/2026:11:13:57 +0000
    const T: f64 = 1_795_950_837.0;

    fn hit(format: Format, line: &str) -> Hit<'_> {
        match parse(format, line) {
            Parsed::Hit(hit) => hit,
            other => panic!("{format:?} {line:?}: {other:?}"),
        }
    }

    fn fields<'a>(
        hit: &'a Hit<'_>,
    ) -> (
        Option<f64>,
        Option<&'a str>,
        &'a str,
        Option<&'a str>,
        &'a str,
    ) {
        (
            hit.when,
            hit.client.as_deref(),
            hit.scheme,
            hit.host.as_deref(),
            &hit.target,
        )
    }

    #[test]
    fn jetforce_lines() {
        let line = "::ffff:127.0.0.1 [29/Nov/2026:11:13:57 +0000] \"gemini://localhost/robots.txt\" 20 \"text/plain\" 49";
        let first = hit(Format::Jetforce, line);
        assert_eq!(
            first,
            Hit {
                when: Some(T),
                client: Some(Cow::Borrowed("::ffff:127.0.0.1")),
                scheme: "gemini",
                host: Some(Cow::Borrowed("localhost")),
                target: Cow::Borrowed("gemini://localhost/robots.txt"),
                status: Some("20"),
                agent: None,
                size: Some(49),
            }
        );
        assert!(
            matches!(first.target, Cow::Borrowed(_))
                && matches!(first.host, Some(Cow::Borrowed(_)))
        );
        let raw = "::ffff:127.0.0.1 [29/Nov/2026:11:13:57 +0000] \"gemini://localhost/nope\x1b]0;x\x07 \"q\" 51 \"Not Found\" 14";
        assert_eq!(
            hit(Format::Jetforce, raw).target,
            "gemini://localhost/nope\x1b]0;x\x07 \"q"
        ); // quote and all
        let six = "::1 [29/Nov/2026:11:13:58 +0000] \"gemini://localhost/robots.txt\" 20 \"text/plain\" 49";
        assert_eq!(hit(Format::Jetforce, six).client.as_deref(), Some("::1"));
        let garbage = hit(
            Format::Jetforce,
            "127.0.0.1 [29/Nov/2026:12:13:57 +0100] \"garbage\" 59 \"Invalid URL\" 16",
        );
        assert_eq!(
            (garbage.when, garbage.host, &*garbage.target, garbage.status),
            (Some(T), None, "garbage", Some("59"))
        );
        // the meta's escaped quotes; the URL's last quote before them
        let meta = hit(
            Format::Jetforce,
            "h [29/Nov/2026:11:13:57 +0000] \"a\" 1 \"b\" 2\" 20 \"m \\\" \\\\\" 5",
        );
        assert_eq!(
            (&*meta.target, meta.status, meta.size),
            ("a\" 1 \"b\" 2", Some("20"), Some(5))
        );
        for noise in [
            "Listening on 0.0.0.0:1965",
            "TLS Certificate File: x",
            "  ____/ /  __/ /_/ __/ /_/ /",
            "\\/\\/\\/\\/\\/\\/\\/\\/\\/\\/",
        ] {
            assert_eq!(parse(Format::Jetforce, noise), Parsed::Noise, "{noise:?}");
        }
        for unread in [
            "___",
            "127.0.0.1 [31/Feb/2026:11:13:57 +0000] \"x\" 20 \"m\" 1", // no such day: not noise either
            "127.0.0.1 [29/Nov/2026:11:13:57 +0000] \"x\" 20 \"m\\\" 1",
            "127.0.0.1 [29/Nov/2026:11:13:57 +0000] \"x\" 20 \"m\" 1 ",
            "127.0.0.1\t[29/Nov/2026:11:13:57 +0000] \"x\" 20 \"m\" 1",
        ] {
            assert_eq!(
                parse(Format::Jetforce, unread),
                Parsed::Unread,
                "{unread:?}"
            );
        }
        // digits of any script, as Python's \d and int read them
        assert_eq!(
            hit(
                Format::Jetforce,
                "h [29/Nov/2026:11:13:57 +0000] \"x\" ٢٠ \"m\" ٤٩"
            )
            .size,
            Some(49)
        );
    }

    #[test]
    fn molly_brown_lines() {
        let first = hit(
            Format::MollyBrown,
            "2026-11-29T11:13:57Z\t127.0.0.1\t20\tgemini://localhost/robots.txt",
        );
        assert_eq!(
            fields(&first),
            (
                Some(T),
                Some("127.0.0.1"),
                "gemini",
                Some("localhost"),
                "gemini://localhost/robots.txt"
            )
        );
        assert_eq!((first.status, first.size), (Some("20"), None));
        assert_eq!(
            hit(Format::MollyBrown, "2026-11-29T11:13:57Z\t127.0.0.1\t59\t-").target,
            "-"
        );
        assert_eq!(
            parse(Format::MollyBrown, "2026-11-29T11:13:57Z\t127.0.0.1\t40\t-"),
            Parsed::Noise
        );
        let six = hit(
            Format::MollyBrown,
            "2026-11-29T11:13:58Z\t[::1]\t20\tgemini://LocalHost:1965/robots.txt",
        );
        assert_eq!(
            (six.client.as_deref(), six.host.as_deref(), six.when),
            (Some("::1"), Some("localhost:1965"), Some(T + 1.0))
        );
        let tabs = hit(
            Format::MollyBrown,
            "2026-11-29T11:13:57+01:00\t\t20\ta\tb\nc",
        );
        assert_eq!(
            (tabs.when, tabs.client, &*tabs.target),
            (Some(T - 3600.0), None, "a\tb\nc")
        );
        for unread in [
            "2026-11-29T11:13:57\t127.0.0.1\t20\tgemini://localhost/", // no offset: no instant
            "2026-11-29T\t127.0.0.1\t20\tx",
            "2026-11-29T11:13:57Z\t127.0.0.1\t2x\tx",
            "2026-11-29T11:13:57Z\t127.0.0.1\t20",
            "2026-02-30T11:13:57Z\t127.0.0.1\t20\tx",
        ] {
            assert_eq!(
                parse(Format::MollyBrown, unread),
                Parsed::Unread,
                "{unread:?}"
            );
        }
    }

    #[test]
    fn agate_lines() {
        let prefix = "[2026-11-29T11:13:57Z INFO  agate] ";
        assert_eq!(
            parse(
                Format::Agate,
                &format!("{prefix}Started listener on 127.0.0.1:19652")
            ),
            Parsed::Noise
        );
        let first = format!(
            "{prefix}127.0.0.1:19652 127.0.0.1 \"gemini://localhost/robots.txt\" 20 \"text/plain\""
        );
        let hit1 = hit(Format::Agate, &first);
        assert_eq!(
            fields(&hit1),
            (
                Some(T),
                Some("127.0.0.1"),
                "gemini",
                Some("localhost"),
                "gemini://localhost/robots.txt"
            )
        );
        assert_eq!((hit1.status, hit1.size), (Some("20"), None));
        let escaped = format!("{prefix}127.0.0.1:19652 127.0.0.1 \"gemini://localhost/nope\\u{{1b}}]0;x\\u{{7}} \\\"q\\\\\" 53 \"Proxy request refused\"");
        assert_eq!(
            hit(Format::Agate, &escaped).target,
            "gemini://localhost/nope\x1b]0;x\x07 \"q\\"
        );
        let six = "[2026-11-29T11:13:58Z INFO  agate] [::1]:19652 ::1 \"gemini://localhost/caf\\u{e9}\\t\" 51 \"Not found\"";
        let six = hit(Format::Agate, six);
        assert_eq!(
            (six.client.as_deref(), &*six.target, six.status),
            (Some("::1"), "gemini://localhost/café\t", Some("51"))
        );
        let no_ip = format!("{prefix}127.0.0.1:19652 - \"\" 59 \"Non-UTF-8 request\"");
        let no_ip = hit(Format::Agate, &no_ip);
        assert_eq!(
            (no_ip.client, &*no_ip.target, no_ip.status),
            (None, "", Some("59"))
        );
        let handshake = "[2026-11-29T11:13:58Z WARN  agate] 127.0.0.1:19652 127.0.0.1 \"\" 00 \"TLS error\" error:received corrupt message";
        assert_eq!(parse(Format::Agate, handshake), Parsed::Noise); // a failed handshake is no request
        let bare = hit(Format::Agate, &first[prefix.len()..]); // without env_logger's prefix: no time
        assert_eq!(
            (bare.when, &*bare.target),
            (None, "gemini://localhost/robots.txt")
        );
        let odd = format!("{prefix}l c \"\\u{{110000}}\\u{{d800}}\\u{{1234567}}\\x\\0\" 20 \"a\" \"b\" error: x\"");
        let odd = hit(Format::Agate, &odd);
        assert_eq!(odd.target, "\u{fffd}\u{fffd}\\u{1234567}\\x\0");
        assert_eq!(
            parse(Format::Agate, "[x INFO agate] nothing"),
            Parsed::Noise
        );
        assert_eq!(parse(Format::Agate, "l c \"r\" 200 \"m\""), Parsed::Unread);
    }

    #[test]
    fn gophernicus_lines() {
        let line = "127.0.0.1 localhost:17071 - [29/Nov/2026:11:13:57 +0000] \"GET 0/robots.txt HTTP/1.0\" 200 34 \"\" \"Unknown gopher client\"";
        let first = hit(Format::Gophernicus, line);
        assert_eq!(
            fields(&first),
            (
                Some(T),
                Some("127.0.0.1"),
                "gopher",
                Some("localhost:17071"),
                "/robots.txt"
            )
        );
        assert_eq!((first.status, first.size), (Some("200"), Some(34)));
        let raw = "127.0.0.1 LocalHost:17071 - [29/Nov/2026:11:13:57 +0000] \"GET 0/nope\x1b]0;x\x07 \"q HTTP/1.0\" 404 0 \"\" \"Unknown gopher client\"";
        let raw = hit(Format::Gophernicus, raw);
        assert_eq!(
            (&*raw.target, raw.host.as_deref()),
            ("/nope\x1b]0;x\x07 \"q", Some("localhost:17071"))
        );
        let six = "::1 localhost:17070 - [29/Nov/2026:11:13:58 +0000] \"GET 1/ HTTP/1.0\" 200 4096 \"\" \"Unknown gopher client\"";
        let six = hit(Format::Gophernicus, six);
        assert_eq!(
            (six.client.as_deref(), &*six.target, six.size),
            (Some("::1"), "/", Some(4096))
        );
        // the selector is greedy; a negative size is none
        let greedy = "h l - [29/Nov/2026:11:13:57 +0000] \"GET 1a HTTP/1.0\" 2 b HTTP/1.0\" 200 -1 \"x\" \"Unknown gopher client\"";
        let greedy = hit(Format::Gophernicus, greedy);
        assert_eq!((&*greedy.target, greedy.size), ("a HTTP/1.0\" 2 b", None));
        assert_eq!(
            parse(Format::Gophernicus, &line[..line.len() - 1]),
            Parsed::Unread
        );
    }

    #[test]
    fn pygopherd_lines() {
        assert_eq!(
            parse(
                Format::Pygopherd,
                "Pygopherd starting, using configuration file /tmp/x/pygopherd.conf"
            ),
            Parsed::Noise
        );
        let first = hit(
            Format::Pygopherd,
            "127.0.0.1 [GopherProtocol/FileHandler]: /robots.txt",
        );
        assert_eq!(
            fields(&first),
            (None, Some("127.0.0.1"), "gopher", None, "/robots.txt")
        );
        assert_eq!(
            (first.status, first.agent.as_deref(), first.size),
            (None, None, None)
        );
        let missing = "127.0.0.1 [GopherProtocol/None] EXCEPTION FileNotFound: '/nope\x1b]0;x\x07 \"q' does not exist (no handler found)";
        assert_eq!(
            hit(Format::Pygopherd, missing).target,
            "/nope\x1b]0;x\x07 \"q"
        );
        let broken =
            "127.0.0.1 [GopherProtocol/None] EXCEPTION BrokenPipeError: [Errno 32] Broken pipe";
        assert_eq!(parse(Format::Pygopherd, broken), Parsed::Noise);
        assert_eq!(
            hit(
                Format::Pygopherd,
                "127.0.0.1 [HTTPProtocol/FileHandler]: /index.txt"
            )
            .scheme,
            "http"
        );
        let logged = hit(Format::Pygopherd, "2026-11-29T11:13:57.000000+00:00 gopher pygopherd[812]: 127.0.0.1 [GopherProtocol/FileHandler]: /robots.txt");
        assert_eq!((logged.when, &*logged.target), (Some(T), "/robots.txt")); // through syslog: a time
        let bsd = hit(Format::Pygopherd, "Nov 29 11:13:57 gopher pygopherd[812]: 127.0.0.1 [GopherProtocol/FileHandler]: /robots.txt");
        assert_eq!(bsd.when, None); // no year in it: no time, not a guess
        let unknown = hit(
            Format::Pygopherd,
            "unknown-address [GeminiProtocol/X]: ' does not exist",
        );
        assert_eq!((unknown.client, unknown.scheme), (None, "gemini"));
        // \w is Unicode's letters and digits, not its combining marks
        assert!(matches!(
            parse(Format::Pygopherd, "c [Pé/Ж٢]: x"),
            Parsed::Hit(_)
        ));
        assert_eq!(
            parse(Format::Pygopherd, "c [P\u{345}/X]: x"),
            Parsed::Unread
        );
        assert_eq!(
            parse(
                Format::Pygopherd,
                "c [P/X] EXCEPTION FileNotFound: 'x' does not exist (x"
            ),
            Parsed::Noise
        );
    }

    #[test]
    fn combined_lines() {
        let line = "127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] \"GET /robots.txt HTTP/1.1\" 200 34 \"-\" \"Foo/1.0 (+http://x)\"";
        let first = hit(Format::Combined, line);
        assert_eq!(
            fields(&first),
            (Some(T), Some("127.0.0.1"), "web", None, "/robots.txt")
        );
        assert_eq!(
            (first.status, first.agent.as_deref(), first.size),
            (Some("200"), Some("Foo/1.0 (+http://x)"), Some(34))
        );
        assert!(
            matches!(first.target, Cow::Borrowed(_))
                && matches!(first.agent, Some(Cow::Borrowed(_)))
        );
        let evil = "127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] \"GET /%1B%5B31m/caf\\xC3\\xA9?a=\\x22b\\x22 HTTP/1.1\" 404 153 \"http://r/\\x22x\" \"Evil\\x1B[31m\\x22bot\\xFF\\x5C \\xC3\\xA9\"";
        let evil = hit(Format::Combined, evil);
        assert_eq!(evil.target, "/%1B%5B31m/café?a=\"b\"");
        assert_eq!(evil.agent.as_deref(), Some("Evil\x1b[31m\"bot\u{fffd}\\ é"));
        let tls = hit(Format::Combined, "127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] \"\\x16\\x03\\x01\\x00\\x05hello\" 400 157 \"-\" \"-\"");
        assert_eq!(
            (&*tls.target, tls.agent),
            ("\x16\x03\x01\x00\x05hello", None)
        ); // not HTTP: as sent
        let six = hit(
            Format::Combined,
            "::1 - - [29/Nov/2026:11:13:58 +0000] \"GET / HTTP/1.0\" 403 153 \"-\" \"-\"",
        );
        assert_eq!(
            (six.client.as_deref(), six.agent, six.status, six.host),
            (Some("::1"), None, Some("403"), None)
        );
    }

    #[test]
    fn apache_variants() {
        let line = "www.Example.org:443 2001:db8::7 - - [29/Nov/2026:11:13:57 +0000] \"GET /a\\\"b\\\\c HTTP/1.1\" 304 - \"-\" \"Bot/2 \\\"x\\\"\"";
        let hit1 = hit(Format::Combined, line);
        assert_eq!(
            (
                hit1.host.as_deref(),
                hit1.client.as_deref(),
                &*hit1.target,
                hit1.size,
                hit1.agent.as_deref()
            ),
            (
                Some("www.example.org:443"),
                Some("2001:db8::7"),
                "/a\"b\\c",
                None,
                Some("Bot/2 \"x\"")
            )
        );
        let common = hit(
            Format::Combined,
            "10.0.0.1 - alice [29/Nov/2026:11:13:57 +0000] \"GET /x HTTP/1.0\" 200 5",
        );
        assert_eq!(
            (&*common.target, common.agent, common.when),
            ("/x", None, Some(T))
        );
        // what follows the agent, or a referrer without an agent, is passed over
        let more = hit(
            Format::Combined,
            "h - - [29/Nov/2026:11:13:57 +0000] \"GET /x HTTP/1.0\" - - \"r\" \"a\" 0.003 \"x",
        );
        assert_eq!(
            (more.agent.as_deref(), more.status, more.size),
            (Some("a"), None, None)
        );
        let half = hit(
            Format::Combined,
            "h - - [29/Nov/2026:11:13:57 +0000] \"GET /x HTTP/1.0\" 200 5 \"r\"x \"a\"",
        );
        assert_eq!(half.agent, None);
        assert_eq!(
            parse(
                Format::Combined,
                "h - - [29/Nov/2026:11:13:57 +0000] \"GET /x HTTP/1.0\" 200 5x"
            ),
            Parsed::Unread
        );
        assert_eq!(
            parse(
                Format::Combined,
                "h - - [29/Nov/2026:11:13:57 +0000] \"GET /x HTTP/1.0\" 20 5"
            ),
            Parsed::Unread
        );
        // Apache's \n \t \v \b and a lone or unknown escape; bytes that make no UTF-8
        let escapes = hit(
            Format::Combined,
            "h - - [29/Nov/2026:11:13:57 +0000] \"\\n\\r\\t\\v\\b\\q\\xZ1\\xE2\\x82\" 200 5",
        );
        assert_eq!(escapes.target, "\n\r\t\x0b\x08\\q\\xZ1\u{fffd}");
    }

    #[test]
    fn lines_no_format_reads() {
        let formats = [
            Format::Jetforce,
            Format::MollyBrown,
            Format::Agate,
            Format::Gophernicus,
            Format::Pygopherd,
            Format::Combined,
        ];
        for line in [
            "",
            "hello",
            "127.0.0.1 - - [31/Feb/2026:11:13:57 +0000] \"GET / HTTP/1.1\" 200 3 \"-\" \"-\"",
            "127.0.0.1 - - [29/Nov/2026:11:13:57 +0000] \"GET / HTTP/1.1", // truncated
            "2026-11-29T11:13:57\t127.0.0.1\t20\tgemini://localhost/",     // no offset: no instant
        ] {
            for format in formats {
                assert_eq!(parse(format, line), Parsed::Unread, "{format:?} {line:?}");
            }
        }
    }

    #[test]
    fn common_log_times() {
        assert_eq!(clf_time("29/Nov/2026:11:13:57 +0000"), Some(T));
        assert_eq!(clf_time("29/Nov/2026:12:43:57 +0130"), Some(T));
        assert_eq!(
            clf_time("29/Nov/2026:11:13:57 -9999"),
            Some(T + 99.0 * 3600.0 + 99.0 * 60.0)
        );
        assert_eq!(
            clf_time("29/Feb/2024:00:00:00 +0000"),
            Some(1_709_164_800.0)
        );
        assert_eq!(
            clf_time("01/Jan/0001:00:00:00 +0000"),
            Some(-62_135_596_800.0)
        );
        assert_eq!(clf_time("٢٩/Nov/2026:11:13:57 +0000"), Some(T));
        for bad in [
            "29/Feb/2026:00:00:00 +0000",
            "31/Apr/2026:00:00:00 +0000",
            "00/Nov/2026:11:13:57 +0000",
            "29/Nov/0000:11:13:57 +0000",
            "29/Nov/2026:24:13:57 +0000",
            "29/Nov/2026:11:60:57 +0000",
            "29/Nov/2026:11:13:60 +0000",
            "29/nov/2026:11:13:57 +0000",
            "29/Foo/2026:11:13:57 +0000",
            "29/Nov/2026:11:13:57 +000",
            "29/Nov/2026:11:13:57 +0000 ",
            "29/Nov/2026:11:13:57 0000",
            "29/Nov/2026:11:13:57",
            "",
        ] {
            assert_eq!(clf_time(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn iso_times_as_python_reads_them() {
        // values from Python 3.11's datetime.fromisoformat(...).timestamp()
        for (text, when) in [
            ("2026-11-29T11:13:57Z", T),
            ("2026-11-29T11:13:57+00:00:00.5", T), // an offset of whole seconds 0 is UTC
            ("2026-11-29T11:13:57.Z", T),
            ("2026-11-29T11:13:57Z\0x", T), // a NUL ends the text, as in C
            ("2026-11-29T11:13:57+01:00\0", T - 3600.0),
            ("2026-11-29T11Z", 1_795_950_000.0),
            ("2026-11-29é11:13Z", 1_795_950_780.0),
            ("2026-W48-7T11:13:57Z", T),
            ("2026W487T11Z", 1_795_950_000.0),
            ("2026-W53-1T11:13:57Z", 1_798_456_437.0),
            ("2020-W53-7T00:00Z", 1_609_632_000.0),
            ("2026-11-29T11:13:57+00:99", 1_795_944_897.0),
            ("2026-11-29T11:13:57+23:59:59.999999", 1_795_864_437.000_001),
            ("2026-11-29T11:13:57,5+01", 1_795_947_237.5),
            ("0001-01-01T00:00:00+01:00", -62_135_600_400.0),
            ("9999-12-31T23:59:59.999999-23:59", 253_402_387_140.0),
            ("2026-11-29T11:13:57.1234567Z", 1_795_950_837.123_456),
            ("2026-11-29T1113Z", 1_795_950_780.0),
            ("2026-11-29T11:13:57+0100", T - 3600.0),
            ("2026-11-29T11:13:57.000000+00:00", T),
        ] {
            assert_eq!(iso_time(text), Some(when), "{text:?}");
        }
        for bad in [
            "2026-11-29T",
            "2026-11-29TZ",
            "2026-11-29T24:00Z",
            "2026-11-29T11:13:57.12a4Z",
            "2026-11-29T11:13:57+01:00:",
            "2026-11-29T11:13:57+24:00",
            "2026-11-29T11:13:57",
            "2026-11-29",
            "2026-02-29T11:13:57Z",
            "2025-W53-1T11:13:57Z",
            "9999-W52-7T00:00Z", // in the year 10000
            "0000-W01-1T00:00Z",
            "٢٠٢٦-11-29T11:13:57Z",
            "2026-11-29T11:13:57z",
            "",
        ] {
            assert_eq!(iso_time(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn pieces() {
        assert_eq!(
            authority("gemini://User@Host:1965/p?q#f").as_deref(),
            Some("host:1965")
        );
        assert_eq!(authority("http://a@b@C?x").as_deref(), Some("c"));
        assert_eq!(authority("://host/"), None);
        assert_eq!(authority("gemini:///path"), None);
        assert_eq!(authority("/robots.txt"), None);
        assert_eq!(authority("gemini://İ/").as_deref(), Some("i\u{307}"));
        assert_eq!(address("[::1]").as_deref(), Some("::1"));
        assert_eq!(address("[]").as_deref(), Some(""));
        assert_eq!((address("-"), address("")), (None, None));
        assert_eq!(address("[").as_deref(), Some("["));
        assert_eq!(
            (size("12"), size("-"), size("-1"), size("")),
            (Some(12), None, None, None)
        );
        assert!(matches!(unescape_web("plain"), Cow::Borrowed("plain")));
        assert_eq!(unescape_web("\\\\x41\\x41\\"), "\\x41A\\");
        assert_eq!(
            unescape_web("\\xED\\xA0\\x80\\xC0\\x80"),
            "\u{fffd}".repeat(5)
        );
        assert!(matches!(unescape_rust("plain"), Cow::Borrowed("plain")));
        assert_eq!(
            unescape_rust("\\\\u{41}\\u{41}\\'\\u{}\\"),
            "\\u{41}A'\\u{}\\"
        );
    }

    fn split(
        splitter: &mut Splitter,
        chunk: &[u8],
        end: bool,
    ) -> (Vec<(u64, Option<String>)>, usize) {
        let mut lines = splitter.lines(chunk, end);
        let got = lines
            .by_ref()
            .map(|(n, line)| match line {
                Line::Text(text) => (n, Some(text.into_owned())),
                Line::Overlong => (n, None),
            })
            .collect();
        (got, lines.consumed())
    }

    /// `data` split as a reader would, `size` bytes read at a time.
    fn split_by(data: &[u8], size: usize) -> Vec<(u64, Option<String>)> {
        let mut splitter = Splitter::new();
        let mut kept: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            let next = (at + size).min(data.len());
            kept.extend_from_slice(&data[at..next]);
            at = next;
            let end = at == data.len();
            let (got, consumed) = split(&mut splitter, &kept, end);
            out.extend(got);
            kept.drain(..consumed);
            assert!(kept.len() <= MAX_LINE, "kept {}", kept.len());
            if end {
                assert!(kept.is_empty());
                return out;
            }
        }
    }

    #[test]
    fn lines_as_python_cuts_them() {
        let mut data = b"one\r\ntwo\n\nthree\r\r\n\xff\xfe\xc3\n".to_vec();
        data.extend(vec![b'y'; MAX_LINE * 3]);
        data.extend(b"\nfour\n");
        data.extend(vec![b'z'; MAX_LINE]);
        data.extend(b"\n");
        data.extend(vec![b'z'; MAX_LINE - 1]);
        data.extend(b"\r\n");
        data.extend(vec![b'z'; MAX_LINE]);
        data.extend(b"\r\n"); // its carriage return makes it one byte too long
        data.extend(vec![b'w'; MAX_LINE + 1]);
        data.extend(b"\nlast\r");
        let want = vec![
            (1, Some("one".to_owned())),
            (2, Some("two".to_owned())),
            (3, Some(String::new())),
            (4, Some("three\r".to_owned())),
            (5, Some("\u{fffd}\u{fffd}\u{fffd}".to_owned())),
            (6, None),
            (7, Some("four".to_owned())),
            (8, Some("z".repeat(MAX_LINE))),
            (9, Some("z".repeat(MAX_LINE - 1))),
            (10, None),
            (11, None),
            (12, Some("last\r".to_owned())), // the file's end is no end of line: kept whole
        ];
        for size in [
            1,
            2,
            3,
            7,
            64,
            4096,
            MAX_LINE - 1,
            MAX_LINE,
            MAX_LINE + 1,
            MAX_LINE + 2,
            1 << 20,
        ] {
            assert_eq!(split_by(&data, size), want, "chunks of {size}");
        }
        // a file that ends inside an overlong line, or right after a line feed
        assert_eq!(split_by(&vec![b'z'; MAX_LINE * 3], 1000), vec![(1, None)]);
        assert_eq!(
            split_by(&vec![b'z'; MAX_LINE + 1], 1 << 20),
            vec![(1, None)]
        );
        assert_eq!(
            split_by(&vec![b'z'; MAX_LINE], 1 << 20),
            vec![(1, Some("z".repeat(MAX_LINE)))]
        );
        assert_eq!(split_by(b"a\n", 1), vec![(1, Some("a".to_owned()))]);
        assert_eq!(split_by(b"", 1), vec![]);
        // a line split inside a UTF-8 character is whole when given again
        assert_eq!(
            split_by("é\nü".as_bytes(), 1),
            vec![(1, Some("é".to_owned())), (2, Some("ü".to_owned()))]
        );
    }

    #[test]
    fn lines_borrow_and_stop_early() {
        let mut splitter = Splitter::new();
        let mut lines = splitter.lines(b"a\nb\nc", false);
        assert!(matches!(
            lines.next(),
            Some((1, Line::Text(Cow::Borrowed("a"))))
        ));
        assert_eq!(lines.consumed(), 2);
        assert!(lines.next().is_some());
        assert_eq!((lines.next(), lines.consumed()), (None, 4));
        assert_eq!(splitter.number(), 2);
        for n in 0..=17 {
            let bytes = vec![b'\n'; n];
            assert_eq!(line_feed(&bytes[..n]), (n > 0).then_some(0));
            let mut bytes = vec![b'a'; n + 1];
            bytes[n] = b'\n';
            assert_eq!(line_feed(&bytes), Some(n));
            assert_eq!(line_feed(&bytes[..n]), None);
        }
        assert_eq!(
            line_feed(&[0x8a, 0x0b, 0x09, 0xff, 0x8a, 0x8a, 0x8a, 0x8a, 0x8a, b'\n']),
            Some(9)
        );
    }

    /// Lines a second on a large combined log: `MANNERS_WATCH_LOG=/tmp/wb/access.log cargo test
    /// --release -p manners-core parse_speed -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn parse_speed() {
        let path =
            std::env::var("MANNERS_WATCH_LOG").unwrap_or_else(|_| "/tmp/wb/access.log".to_owned());
        let data = std::fs::read(&path).expect("the log");
        let start = std::time::Instant::now();
        let (mut lines, mut hits) = (0u64, 0u64);
        let mut splitter = Splitter::new();
        for (_, line) in splitter.lines(&data, true) {
            lines += 1;
            if let Line::Text(text) = line {
                if let Parsed::Hit(hit) = parse(Format::Combined, &text) {
                    hits += u64::from(hit.size.is_some());
                }
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "{lines} lines ({hits} hits) split and parsed in {seconds:.3} s: {:.0} lines/s",
            lines as f64 / seconds
        );
        let start = std::time::Instant::now();
        let mut splitter = Splitter::new();
        let count = splitter.lines(&data, true).count();
        println!(
            "split alone: {:.0} lines/s",
            count as f64 / start.elapsed().as_secs_f64()
        );
        assert_eq!(count as u64, lines);
    }
}
