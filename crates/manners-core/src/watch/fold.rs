//! The fold of `manners watch`: requests in, in log order, per-client sums out.
//!
//! What `src/manners/watch/judge.py` says a request counts for is decided here, one request
//! at a time, without Python: which client made it (an address or block, with its product
//! token on the Web), which robots.txt versions it could have been reading, whether every one
//! of them forbids it, how close it came to the requests before it at the same host, and
//! whether it waited after being told to slow down.  The state is per client and per host
//! (a few numbers, the last few times, the first few examples), so memory grows with clients,
//! never with lines; strings a log repeats (addresses, tokens, hosts, file names) are kept
//! once.  Python turns [`Fold::clients`] into the report; the judging rules themselves are
//! told in judge.py's docstring.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Hit;
use crate::agents::product_token;
use crate::line::Kind as LineKind;
use crate::target::url_path;
use crate::{fields, RobotsTxt};

/// RFC 9309 §2.4: a cached robots.txt should not be used longer than 24 hours.
pub const DAY: f64 = 86400.0;
/// Seconds given back to every logged span: the logs write whole seconds.
pub const TOLERANCE: f64 = 1.0;
/// The last requests to a host kept to judge pacing.
pub const NEIGHBOURS: usize = 8;
/// Seconds assumed asked by a 44, 429 or 503 (manners' crawler waits this after a 44 it cannot read).
pub const SLOW_DOWN_WAIT: f64 = 10.0;
/// Offending requests kept of each kind.
pub const EXAMPLES: usize = 3;
/// A person reads: more than `Kind::person_requests` requests within this many seconds is a
/// robot's pace.
pub const PERSON_SECONDS: f64 = 60.0;
/// The Gemini companion spec's virtual agents, in order.
pub const ROLES: [&str; 4] = ["archiver", "indexer", "researcher", "webproxy"];

/// The kind of site a request was made to: what its robots.txt is read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Web = 0,
    Gemini = 1,
    Gopher = 2,
}

impl Kind {
    /// The kind of a Hit's scheme (anything but gemini and gopher is read as the Web).
    pub fn of(scheme: &str) -> Kind {
        match scheme {
            "gemini" => Kind::Gemini,
            "gopher" => Kind::Gopher,
            _ => Kind::Web,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Web => "web",
            Kind::Gemini => "gemini",
            Kind::Gopher => "gopher",
        }
    }

    /// More than this many requests within `PERSON_SECONDS` is no person's pace (more on the
    /// Web, where a browser asks for a page's images and styles at once).
    pub fn person_requests(self) -> usize {
        match self {
            Kind::Web => 120,
            Kind::Gemini | Kind::Gopher => 20,
        }
    }

    /// Statuses that tell a client to slow down.
    fn slows_down(self, status: &str) -> bool {
        match self {
            Kind::Gemini => status == "44",
            Kind::Web => status == "429" || status == "503",
            Kind::Gopher => false,
        }
    }

    /// The port a host named without it is at.
    fn default_port(self) -> Option<&'static str> {
        match self {
            Kind::Gemini => Some(":1965"),
            Kind::Gopher => Some(":70"),
            Kind::Web => None,
        }
    }
}

/// Prefix lengths that make one client of an IPv4 and of an IPv6 block (`--group`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Grouping {
    pub v4: u8,
    pub v6: u8,
}

impl Default for Grouping {
    fn default() -> Grouping {
        Grouping { v4: 32, v6: 128 }
    }
}

/// The client an address belongs to: the address itself (IPv4-mapped IPv6 as IPv4, an IPv6
/// zone dropped), or its block (`192.0.2.0/24`, `2001:db8::/64`) when grouped, written as
/// Python's `ipaddress` writes them.  What is no IP address (a host name some servers log) is
/// its own client, as logged.
pub fn client_of(address: &str, grouping: Grouping) -> String {
    let Some(ip) = ip_of(address) else {
        return address.to_string();
    };
    match ip {
        IpAddr::V4(v4) => {
            let bits = grouping.v4.min(32);
            if bits == 32 {
                return v4.to_string();
            }
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            format!("{}/{bits}", Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let bits = grouping.v6.min(128);
            if bits == 128 {
                return v6.to_string();
            }
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            format!("{}/{bits}", Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

/// An address as Python's `ipaddress.ip_address` reads it (IPv6 with a zone too), an
/// IPv4-mapped IPv6 one as IPv4.
fn ip_of(address: &str) -> Option<IpAddr> {
    if let Ok(v4) = address.parse::<Ipv4Addr>() {
        return Some(IpAddr::V4(v4));
    }
    let bare = match address.split_once('%') {
        Some((_, zone)) if zone.is_empty() || zone.contains('%') => return None,
        Some((bare, _)) => bare,
        None => address,
    };
    let v6 = bare.parse::<Ipv6Addr>().ok()?;
    Some(match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    })
}

/// Whether a request asks for robots.txt.
fn is_robots(target: &str, kind: Kind) -> bool {
    if kind == Kind::Gopher {
        return matches!(target, "robots.txt" | "/robots.txt" | "0/robots.txt");
    }
    let path = if target.contains("://") {
        match url_path(target.as_bytes()) {
            Ok(p) => p,
            Err(_) => return false,
        }
    } else {
        std::borrow::Cow::Borrowed(target.as_bytes())
    };
    let end = path.iter().position(|&b| b == b'?').unwrap_or(path.len());
    &path[..end] == b"/robots.txt"
}

/// A host as the pacing counts it: lower-cased, its kind's default port dropped.
fn host_name(host: Option<&str>, kind: Kind) -> std::borrow::Cow<'_, str> {
    let host = host.unwrap_or("");
    let mut name: std::borrow::Cow<'_, str> = if host.chars().any(char::is_uppercase) {
        std::borrow::Cow::Owned(host.to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(host)
    };
    let cut = match kind.default_port() {
        Some(port) if name.ends_with(port) => Some(name.len() - port.len()),
        Some(_) => None,
        None if name.ends_with(":80") || name.ends_with(":443") => name.rfind(':'),
        None => None,
    };
    if let Some(cut) = cut {
        name = match name {
            std::borrow::Cow::Borrowed(s) => std::borrow::Cow::Borrowed(&s[..cut]),
            std::borrow::Cow::Owned(mut s) => {
                s.truncate(cut);
                std::borrow::Cow::Owned(s)
            }
        };
    }
    name
}

/// One robots.txt as it stood, read as each kind reads it.
pub struct Version {
    /// When it came into force; None: from the start.
    pub since: Option<f64>,
    /// Versions of one label are one in a breach's key (the report names a version by its
    /// moment as shown: two moments shown alike are one).
    pub label: u32,
    /// Read under rfc9309, gemini and gopher (by `Kind` as index).
    pub robots: [RobotsTxt; 3],
}

/// What one version says, found once: the agents each reading has a group for, and whether a
/// Request-rate with a window of the day makes its spacing depend on the minute.
struct Said {
    /// User-agent names by kind (lower-cased tokens).
    agents: [Vec<Box<str>>; 3],
    /// User-agent and virtual-agent names by kind.
    named: [Vec<Box<str>>; 3],
    /// Bit i: ROLES[i] is named under the Gemini profile.
    roles: u8,
    windowed: bool,
}

impl Said {
    fn of(robots: &[RobotsTxt; 3]) -> Said {
        let names = |r: &RobotsTxt, kinds: &[LineKind]| -> Vec<Box<str>> {
            let profile = r.fields_profile(false);
            let grouping = r.groups(profile);
            let mut out: Vec<Box<str>> = Vec::new();
            for g in &grouping.groups {
                for &kind in kinds {
                    for n in r.group_names(grouping, g, kind, profile.records_1994) {
                        let n: Box<str> = String::from_utf8_lossy(&n).into();
                        if !out.contains(&n) {
                            out.push(n);
                        }
                    }
                }
            }
            out
        };
        let agents = [0, 1, 2].map(|k| names(&robots[k], &[LineKind::UserAgent]));
        let named =
            [0, 1, 2].map(|k| names(&robots[k], &[LineKind::UserAgent, LineKind::VirtualAgent]));
        let mut roles = 0;
        for (i, role) in ROLES.iter().enumerate() {
            if named[Kind::Gemini as usize].iter().any(|n| &**n == *role) {
                roles |= 1 << i;
            }
        }
        let t = robots[0].table();
        let windowed = t.entries(0, t.len()).any(|(_, _, kind, value)| {
            kind == LineKind::RequestRate && fields::rate(value).is_some_and(|r| r.window.is_some())
        });
        Said {
            agents,
            named,
            roles,
            windowed,
        }
    }
}

/// One offending request: where the log has it, what was asked, and when.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Example<'a> {
    pub file: u32,
    pub line: u64,
    pub target: &'a str,
    pub when: Option<f64>,
}

/// An example as kept: its target in [`Examples::text`].
#[derive(Clone, Debug, PartialEq)]
struct Kept {
    file: u32,
    length: u32,
    line: u64,
    start: usize,
    when: Option<f64>,
}

/// Every example kept, in one place (a tally holds their numbers): no allocation of its own
/// for each.
#[derive(Default)]
struct Examples {
    kept: Vec<Kept>,
    text: String,
}

impl Examples {
    fn get(&self, i: u32) -> Example<'_> {
        let k = &self.kept[i as usize];
        Example {
            file: k.file,
            line: k.line,
            target: &self.text[k.start..k.start + k.length as usize],
            when: k.when,
        }
    }
}

/// Requests of one kind, and the first few of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub requests: u64,
    /// The first EXAMPLES requests', numbers in [`Examples`].
    examples: [u32; EXAMPLES],
}

impl Tally {
    fn add(&mut self, hit: &Hit<'_>, file: u32, line: u64, examples: &mut Examples) {
        if self.requests < EXAMPLES as u64 {
            let target = &*hit.target;
            // a target past 4 GiB is kept cut (no log line is that long)
            let length = target.len().min(u32::MAX as usize);
            let target = &target[..target.floor_char_boundary(length)];
            self.examples[self.requests as usize] = examples.kept.len() as u32;
            examples.kept.push(Kept {
                file,
                length: target.len() as u32,
                line,
                start: examples.text.len(),
                when: hit.when,
            });
            examples.text.push_str(target);
        }
        self.requests += 1;
    }

    /// How many examples it holds.
    fn kept(&self) -> usize {
        self.requests.min(EXAMPLES as u64) as usize
    }
}

/// Whose reading forbade a breach's requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// The rules for `*`.
    Star,
    /// The rules for the client's product token (an index for [`Fold::token`]).
    Token(u32),
    /// A Gemini virtual agent's rules, as an index in [`ROLES`] (shown, not charged).
    Role(u8),
}

/// Requests one reading forbade, by one line of one version.
#[derive(Clone, Debug, PartialEq)]
pub struct Breach {
    pub reading: Reading,
    /// The deciding line of the version in force at the first of them.
    pub line: Option<u32>,
    /// That version (its index in the versions given; versions of one label are one).
    pub version: u32,
    label: u32,
    pub tally: Tally,
}

/// A client's requests to one host, as far as pacing and slowing down go.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Host {
    /// An index for [`Fold::host`].
    pub name: u32,
    /// The last NEIGHBOURS times, sorted (one more while a request is judged).
    times: [f64; NEIGHBOURS + 1],
    kept: u8,
    pub requests: u64,
    pub asked: f64,
    pub shortest: Option<f64>,
    pub closer: Tally,
    /// When it was last told to slow down, until its next request.
    slowed_at: Option<f64>,
    pub told: u64,
    pub waited: u64,
    pub ignored: Tally,
}

/// One client's sums.
#[derive(Clone, Debug, PartialEq)]
pub struct Client {
    /// An index for [`Fold::address`].
    pub address: u32,
    /// An index for [`Fold::token`]; None: no token, or Gemini and Gopher.
    pub token: Option<u32>,
    pub kind: Kind,
    pub requests: u64,
    pub timed: u64,
    pub first: Option<f64>,
    pub last: Option<f64>,
    /// The last few times, until it has outpaced a person (then None).
    pace: Option<std::collections::VecDeque<f64>>,
    pub outpaced: bool,
    pub robots_fetches: u64,
    pub robots_first: bool,
    /// Its last successful robots.txt fetch, and the version in force then.
    fetched_at: Option<f64>,
    fetched_version: Option<u32>,
    pub stale: u64,
    pub charged: u64,
    /// Requests no known version covered.
    pub unjudged: u64,
    /// "disallowed" ones (Star and Token) and "role" ones, as first made.
    pub breaches: Vec<Breach>,
    /// Each breach's line and reading as one number, to find it among many at once.
    breach_keys: Vec<u64>,
    /// Bit i: the versions it was judged by have rules for ROLES[i] (Gemini).
    pub roles: u8,
    /// In the order first asked.
    pub hosts: Vec<Host>,
}

impl Client {
    fn new(address: u32, token: Option<u32>, kind: Kind) -> Client {
        Client {
            address,
            token,
            kind,
            requests: 0,
            timed: 0,
            first: None,
            last: None,
            pace: Some(std::collections::VecDeque::with_capacity(
                kind.person_requests() + 1,
            )),
            outpaced: false,
            robots_fetches: 0,
            robots_first: false,
            fetched_at: None,
            fetched_version: None,
            stale: 0,
            charged: 0,
            unjudged: 0,
            breaches: Vec::new(),
            breach_keys: Vec::new(),
            roles: 0,
            hosts: Vec::new(),
        }
    }

    /// Count a request's time against a person's pace.
    fn pace(&mut self, when: Option<f64>) {
        let (Some(times), Some(when)) = (self.pace.as_mut(), when) else {
            return;
        };
        let limit = self.kind.person_requests();
        if times.len() > limit {
            times.pop_front();
        }
        times.push_back(when);
        if times.len() > limit && (when - times[0]).abs() <= PERSON_SECONDS {
            self.outpaced = true;
            self.pace = None;
        }
    }
}

/// Strings a log repeats, kept once each.
#[derive(Default)]
struct Names {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }
}

/// A text of at most 15 bytes as a number (its bytes, then its length).
fn packed(text: &str) -> Option<u128> {
    let b = text.as_bytes();
    if b.len() > 15 {
        return None;
    }
    let mut bytes = [0u8; 16];
    bytes[..b.len()].copy_from_slice(b);
    bytes[15] = b.len() as u8;
    Some(u128::from_le_bytes(bytes))
}

/// Addresses told apart (a log repeats its clients): each read once.  Cleared when full, as
/// grouped addresses may outnumber clients.
const ADDRESSES: usize = 1 << 20;

/// The fold: [`Fold::feed`] each request in log order, then read [`Fold::clients`].
pub struct Fold {
    versions: Vec<Version>,
    said: Vec<Said>,
    /// The moments the dated versions came into force, in order, and how many undated come first.
    starts: Vec<f64>,
    offset: usize,
    grouping: Grouping,
    slow_down_wait: f64,
    addresses: HashMap<Box<str>, u32>,
    clients_of: Names,
    tokens: Names,
    /// Per token, per version: 0 not known yet, else 1 | 2 when the Web reading has a
    /// User-agent group for it | 4 when it names it at all.
    token_said: Vec<Vec<u8>>,
    hosts: Names,
    by_key: HashMap<(u32, Option<u32>, Kind), u32>,
    /// The same from an address as logged, when it is short enough to be a key by itself
    /// (an IPv4 address is): one look-up a request, no string to compare.
    by_short: HashMap<(u128, Option<u32>, Kind), u32>,
    /// (client, host) -> the host's index in the client's.
    host_of: HashMap<(u32, u32), u32>,
    clients: Vec<Client>,
    unattributed: u64,
    /// Spacings asked: (version, kind, agent, minute of the day or -1) -> seconds.
    spacings: HashMap<(u32, Kind, Option<u32>, i16), f64>,
    readings: Vec<u32>,
    examples: Examples,
}

impl Fold {
    /// A fold reading by `versions`, given in order: the undated one (at most one) first, then
    /// the dated ones by their moment (two never share one).
    pub fn new(versions: Vec<Version>, grouping: Grouping, slow_down_wait: f64) -> Fold {
        let offset = versions.iter().take_while(|v| v.since.is_none()).count();
        let starts: Vec<f64> = versions[offset..].iter().filter_map(|v| v.since).collect();
        debug_assert_eq!(offset + starts.len(), versions.len());
        debug_assert!(starts.windows(2).all(|w| w[0] < w[1]));
        Fold {
            said: versions.iter().map(|v| Said::of(&v.robots)).collect(),
            versions,
            starts,
            offset,
            grouping,
            slow_down_wait,
            addresses: HashMap::new(),
            clients_of: Names::default(),
            tokens: Names::default(),
            token_said: Vec::new(),
            hosts: Names::default(),
            by_key: HashMap::new(),
            by_short: HashMap::new(),
            host_of: HashMap::new(),
            clients: Vec::new(),
            unattributed: 0,
            spacings: HashMap::new(),
            readings: Vec::new(),
            examples: Examples::default(),
        }
    }

    /// Every client so far, in the order first seen.
    pub fn clients(&self) -> &[Client] {
        &self.clients
    }

    /// Requests logged without a client address.
    pub fn unattributed(&self) -> u64 {
        self.unattributed
    }

    pub fn address(&self, id: u32) -> &str {
        &self.clients_of.names[id as usize]
    }

    pub fn token(&self, id: u32) -> &str {
        &self.tokens.names[id as usize]
    }

    /// The first few requests a tally counted.
    pub fn examples<'a>(&'a self, tally: &'a Tally) -> impl Iterator<Item = Example<'a>> + 'a {
        tally.examples[..tally.kept()]
            .iter()
            .map(|&i| self.examples.get(i))
    }

    pub fn host(&self, id: u32) -> &str {
        &self.hosts.names[id as usize]
    }

    pub fn versions(&self) -> &[Version] {
        &self.versions
    }

    pub fn slow_down_wait(&self) -> f64 {
        self.slow_down_wait
    }

    /// The index of the version in force at `when`; None when none is known then.
    pub fn at(&self, when: f64) -> Option<u32> {
        let found = self.starts.partition_point(|&s| s <= when);
        if found > 0 {
            Some((self.offset + found - 1) as u32)
        } else if self.offset > 0 {
            Some(0)
        } else {
            None
        }
    }

    /// Take one request into account: the `line`th of file `file` (numbers the caller gives,
    /// kept with examples).
    pub fn feed(&mut self, hit: &Hit<'_>, file: u32, line: u64) {
        let address = match hit.client.as_deref() {
            Some(a) if !a.is_empty() => a,
            _ => {
                self.unattributed += 1;
                return;
            }
        };
        let kind = Kind::of(hit.scheme);
        let token = match (kind, hit.agent.as_deref()) {
            (Kind::Web, Some(agent)) if !agent.is_empty() => {
                product_token(agent).map(|t| self.token_id(&t))
            }
            _ => None,
        };
        let c = match packed(address) {
            Some(p) => match self.by_short.get(&(p, token, kind)) {
                Some(&c) => c,
                None => {
                    let c = self.client_id(address, token, kind);
                    if self.by_short.len() >= ADDRESSES {
                        self.by_short.clear();
                    }
                    self.by_short.insert((p, token, kind), c);
                    c
                }
            },
            None => self.client_id(address, token, kind),
        };
        let when = hit.when;
        let host_id = {
            let name = host_name(hit.host.as_deref(), kind);
            self.hosts.id(&name)
        };
        let slow_down_wait = self.slow_down_wait;
        let in_force = when.and_then(|w| self.at(w));
        let client = &mut self.clients[c as usize];
        client.requests += 1;
        let robots = is_robots(&hit.target, kind);
        // its first request by time (a log's lines may be out of order), by line without times
        let earliest = match (when, client.first) {
            (Some(w), Some(f)) => w < f || (w == f && robots),
            _ => false,
        };
        if client.requests == 1 || earliest {
            client.robots_first = robots;
        }
        if let Some(w) = when {
            client.timed += 1;
            client.first = Some(client.first.map_or(w, |f| if w < f { w } else { f }));
            client.last = Some(client.last.map_or(w, |l| if w > l { w } else { l }));
        }
        client.pace(when);
        let h = match client.hosts.first() {
            Some(first) if first.name == host_id => 0,
            _ => *self
                .host_of
                .entry((c, host_id))
                .or_insert(client.hosts.len() as u32) as usize,
        };
        if h == client.hosts.len() {
            client.hosts.push(Host {
                name: host_id,
                ..Host::default()
            });
        }
        // slowed down: whether it comes soon after being told to, then whether it is told to
        let host = &mut client.hosts[h];
        if let (Some(at), Some(w)) = (host.slowed_at, when) {
            if w - at + TOLERANCE < slow_down_wait {
                host.ignored.add(hit, file, line, &mut self.examples);
            } else {
                host.waited += 1;
            }
            host.slowed_at = None;
        }
        if hit.status.is_some_and(|s| kind.slows_down(s)) {
            host.told += 1;
            host.slowed_at = when;
        }
        if robots {
            client.robots_fetches += 1;
            if hit.status.is_none_or(|s| s.starts_with('2') || s == "304") {
                client.fetched_at = when;
                client.fetched_version = in_force;
            }
            return;
        }
        if let (Some(w), Some(f)) = (when, client.fetched_at) {
            if w - f > DAY {
                client.stale += 1;
            }
        }
        let mut readings = std::mem::take(&mut self.readings);
        if self.read_by(c, when, &mut readings) {
            self.rules(c, hit, file, line, kind, token, &readings);
            if let Some(w) = when {
                self.pacing(c, h, hit, file, line, w, kind, token, &readings);
            }
        } else {
            self.clients[c as usize].unjudged += 1;
        }
        self.readings = readings;
    }

    /// The client an address (as logged), token and kind make, made the first time.
    fn client_id(&mut self, address: &str, token: Option<u32>, kind: Kind) -> u32 {
        let address = self.address_id(address);
        let next = self.clients.len() as u32;
        let c = *self.by_key.entry((address, token, kind)).or_insert(next);
        if c == next {
            self.clients.push(Client::new(address, token, kind));
        }
        c
    }

    fn address_id(&mut self, address: &str) -> u32 {
        if let Some(&id) = self.addresses.get(address) {
            return id;
        }
        let id = self.clients_of.id(&client_of(address, self.grouping));
        if self.addresses.len() >= ADDRESSES {
            self.addresses.clear();
        }
        self.addresses.insert(address.into(), id);
        id
    }

    fn token_id(&mut self, token: &str) -> u32 {
        let id = self.tokens.id(token);
        if id as usize == self.token_said.len() {
            self.token_said.push(vec![0; self.versions.len()]);
        }
        id
    }

    /// What version `v` says of token `t` on the Web: (whether a User-agent group names it,
    /// whether anything names it).
    fn token_said(&mut self, t: u32, v: u32) -> (bool, bool) {
        let mut said = self.token_said[t as usize][v as usize];
        if said == 0 {
            let name = &*self.tokens.names[t as usize];
            let of = &self.said[v as usize];
            let web = Kind::Web as usize;
            said =
                1 | if of.agents[web].iter().any(|n| &**n == name) {
                    2
                } else {
                    0
                } | if of.named[web].iter().any(|n| &**n == name) {
                    4
                } else {
                    0
                };
            self.token_said[t as usize][v as usize] = said;
        }
        (said & 2 != 0, said & 4 != 0)
    }

    /// The versions client `c` could have been reading at `when`, the one in force first;
    /// false when one of them is unknown (nothing can be charged).
    fn read_by(&self, c: u32, when: Option<f64>, readings: &mut Vec<u32>) -> bool {
        readings.clear();
        let Some(w) = when else {
            readings.extend(0..self.versions.len() as u32);
            return true;
        };
        let Some(now) = self.at(w) else {
            return false;
        };
        readings.push(now);
        let client = &self.clients[c as usize];
        match client.fetched_at {
            Some(f) if (0.0..=DAY).contains(&(w - f)) && client.fetched_version != Some(now) => {
                match client.fetched_version {
                    Some(v) => {
                        readings.push(v);
                        true
                    }
                    None => false,
                }
            }
            _ => true,
        }
    }

    /// The agent a version's decisions are asked for: the token when a User-agent group names
    /// it, else `*` (whose choice is the same).
    fn agent_for(&mut self, token: Option<u32>, v: u32) -> Option<u32> {
        token.filter(|&t| self.token_said(t, v).0)
    }

    fn agent_name(&self, agent: Option<u32>) -> &str {
        agent.map_or("*", |t| &self.tokens.names[t as usize])
    }

    /// Whether version `v`, read as `kind`, forbids `target` to `agent` (acting as `role`):
    /// Some(the deciding line) when it does.  A target that names no path is allowed (no rule
    /// applies).
    fn forbidding(
        &self,
        v: u32,
        kind: Kind,
        agent: Option<u32>,
        role: Option<u8>,
        target: &str,
    ) -> Option<Option<u32>> {
        let robots = &self.versions[v as usize].robots[kind as usize];
        let roles: &[&str] = match role {
            Some(r) => std::slice::from_ref(&ROLES[r as usize]),
            None => &[],
        };
        match robots.forbidding(target.as_bytes(), self.agent_name(agent), roles) {
            Ok(Some(line)) => Some(Some(line)),
            Ok(None) | Err(_) => None,
        }
    }

    /// Whether every reading forbids `target` to the client (as `role`): Some(the deciding
    /// line of the first) when it does.
    fn forbidden(
        &mut self,
        readings: &[u32],
        kind: Kind,
        token: Option<u32>,
        role: Option<u8>,
        target: &str,
    ) -> Option<Option<u32>> {
        let mut first = None;
        for &v in readings {
            let agent = self.agent_for(token, v);
            let line = self.forbidding(v, kind, agent, role, target)?;
            first.get_or_insert(line);
        }
        first
    }

    #[allow(clippy::too_many_arguments)]
    fn rules(
        &mut self,
        c: u32,
        hit: &Hit<'_>,
        file: u32,
        line: u64,
        kind: Kind,
        token: Option<u32>,
        readings: &[u32],
    ) {
        let target: &str = &hit.target;
        let first = readings[0];
        let label = self.versions[first as usize].label;
        if let Some(deciding) = self.forbidden(readings, kind, token, None, target) {
            let reading = match token {
                Some(t) if self.token_said(t, first).1 && self.token(t) != "*" => Reading::Token(t),
                _ => Reading::Star,
            };
            let client = &mut self.clients[c as usize];
            client.charged += 1;
            tally(
                client,
                &mut self.examples,
                reading,
                deciding,
                first,
                label,
                hit,
                file,
                line,
            );
            return;
        }
        if kind != Kind::Gemini {
            return;
        }
        let present = readings
            .iter()
            .fold(0u8, |m, &v| m | self.said[v as usize].roles);
        self.clients[c as usize].roles |= present;
        for r in 0..ROLES.len() as u8 {
            if present & (1 << r) == 0 {
                continue;
            }
            if let Some(deciding) = self.forbidden(readings, kind, token, Some(r), target) {
                let client = &mut self.clients[c as usize];
                tally(
                    client,
                    &mut self.examples,
                    Reading::Role(r),
                    deciding,
                    first,
                    label,
                    hit,
                    file,
                    line,
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn pacing(
        &mut self,
        c: u32,
        h: usize,
        hit: &Hit<'_>,
        file: u32,
        line: u64,
        when: f64,
        kind: Kind,
        token: Option<u32>,
        readings: &[u32],
    ) {
        let mut spacing = f64::INFINITY;
        for (i, &v) in readings.iter().enumerate() {
            let s = self.spacing(v, kind, token, when);
            if i == 0 || s < spacing {
                spacing = s;
            }
        }
        let host = &mut self.clients[c as usize].hosts[h];
        host.requests += 1;
        if spacing > host.asked {
            host.asked = spacing;
        }
        let kept = host.kept as usize;
        let at = host.times[..kept].partition_point(|&t| t <= when);
        for &neighbour in &host.times[at.saturating_sub(1)..(at + 1).min(kept)] {
            let gap = (when - neighbour).abs();
            host.shortest = Some(host.shortest.map_or(gap, |s| if gap < s { gap } else { s }));
        }
        host.times.copy_within(at..kept, at + 1);
        host.times[at] = when;
        let kept = kept + 1;
        if spacing > 0.0 {
            let close = host.times[..kept].iter().enumerate().any(|(i, &other)| {
                i != at && (when - other).abs() + TOLERANCE < i.abs_diff(at) as f64 * spacing
            });
            if close {
                host.closer.add(hit, file, line, &mut self.examples);
            }
        }
        if kept > NEIGHBOURS {
            host.times.copy_within(1..kept, 0);
            host.kept = (kept - 1) as u8;
        } else {
            host.kept = kept as u8;
        }
    }

    /// The spacing version `v` asks of a client at `when` (`RobotsTxt::asked_spacing`; only a
    /// Request-rate given for a window of the day makes it depend on the minute).
    fn spacing(&mut self, v: u32, kind: Kind, token: Option<u32>, when: f64) -> f64 {
        let agent = self.agent_for(token, v);
        let minute = if self.said[v as usize].windowed {
            (when / 60.0).floor().rem_euclid(1440.0) as i16
        } else {
            -1
        };
        let key = (v, kind, agent, minute);
        if let Some(&found) = self.spacings.get(&key) {
            return found;
        }
        let robots = &self.versions[v as usize].robots[kind as usize];
        let profile = robots.fields_profile(false);
        let found =
            robots.asked_spacing(self.agent_name(agent), &[], profile, Some(minute_of(when)));
        self.spacings.insert(key, found);
        found
    }
}

/// The minute of the day (UTC) Python's `datetime.fromtimestamp(when, UTC)` falls in: the
/// moment rounded to the microsecond, half to even.
fn minute_of(when: f64) -> u16 {
    let mut seconds = when.floor();
    if ((when - seconds) * 1e6).round_ties_even() >= 1e6 {
        seconds += 1.0;
    }
    (seconds / 60.0).floor().rem_euclid(1440.0) as u16
}

/// Count a forbidden request under its key: the reading, the deciding line and the version's
/// label.
#[allow(clippy::too_many_arguments)]
fn tally(
    client: &mut Client,
    examples: &mut Examples,
    reading: Reading,
    line: Option<u32>,
    version: u32,
    label: u32,
    hit: &Hit<'_>,
    file: u32,
    at: u64,
) {
    let code = match reading {
        Reading::Star => 0,
        Reading::Role(r) => 1 + u64::from(r),
        Reading::Token(t) => 5 + u64::from(t),
    };
    // a token's id past 2^32 - 5 would share a key: the breach found is checked
    let key = u64::from(line.unwrap_or(0)) << 32 | (code & 0xffff_ffff);
    let found = client
        .breach_keys
        .iter()
        .enumerate()
        .filter(|&(_, &k)| k == key)
        .map(|(i, _)| i)
        .find(|&i| {
            let b = &client.breaches[i];
            b.label == label && b.reading == reading && b.line == line
        });
    let i = found.unwrap_or_else(|| {
        client.breaches.push(Breach {
            reading,
            line,
            version,
            label,
            tally: Tally::default(),
        });
        client.breach_keys.push(key);
        client.breaches.len() - 1
    });
    client.breaches[i].tally.add(hit, file, at, examples);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;
    use std::borrow::Cow;
    use std::sync::Arc;

    fn version(text: &str, since: Option<f64>, label: u32) -> Version {
        let read = |p: Profile| RobotsTxt::parse_text(text, Some(Arc::new(p)), None);
        Version {
            since,
            label,
            robots: [
                read(Profile::rfc9309()),
                read(Profile::gemini()),
                read(Profile::gopher()),
            ],
        }
    }

    fn hit<'a>(
        when: Option<f64>,
        client: &'a str,
        scheme: &'static str,
        target: &'a str,
        status: Option<&'a str>,
        agent: Option<&'a str>,
    ) -> Hit<'a> {
        Hit {
            when,
            client: Some(Cow::Borrowed(client)),
            scheme,
            host: Some(Cow::Borrowed("example.org")),
            target: Cow::Borrowed(target),
            status,
            agent: agent.map(Cow::Borrowed),
            size: None,
        }
    }

    #[test]
    fn clients_as_python_writes_them() {
        let g = Grouping::default();
        assert_eq!(client_of("192.0.2.7", g), "192.0.2.7");
        assert_eq!(client_of("::ffff:192.0.2.7", g), "192.0.2.7");
        assert_eq!(client_of("fe80::1%eth0", g), "fe80::1");
        assert_eq!(client_of("fe80::1%", g), "fe80::1%");
        assert_eq!(client_of("example.org", g), "example.org");
        assert_eq!(client_of("010.0.0.1", g), "010.0.0.1");
        let g = Grouping { v4: 24, v6: 64 };
        assert_eq!(client_of("192.0.2.7", g), "192.0.2.0/24");
        assert_eq!(client_of("2001:db8::2:1", g), "2001:db8::/64");
        assert_eq!(client_of("2001:db8:0:1::1", g), "2001:db8:0:1::/64");
        let g = Grouping { v4: 0, v6: 0 };
        assert_eq!(client_of("192.0.2.7", g), "0.0.0.0/0");
        assert_eq!(client_of("2001:db8::1", g), "::/0");
    }

    #[test]
    fn robots_and_hosts() {
        assert!(is_robots("/robots.txt?x=1", Kind::Web));
        assert!(is_robots("gemini://h/robots.txt", Kind::Gemini));
        assert!(!is_robots("/robots.txt", Kind::Gopher) || is_robots("0/robots.txt", Kind::Gopher));
        assert!(!is_robots("/robots.txtx", Kind::Web));
        assert_eq!(host_name(Some("Example.org:443"), Kind::Web), "example.org");
        assert_eq!(host_name(Some("h:1965"), Kind::Gemini), "h");
        assert_eq!(host_name(Some("h:80"), Kind::Gemini), "h:80");
        assert_eq!(host_name(None, Kind::Web), "");
        assert_eq!(minute_of(59.9999996), 1);
        assert_eq!(minute_of(-1.0), 1439);
    }

    #[test]
    fn charges_what_every_reading_forbids() {
        let v = vec![
            version("User-agent: *\nDisallow: /a\n", None, 0),
            version(
                "User-agent: *\nDisallow: /b\nCrawl-delay: 5\n",
                Some(1000.0),
                1,
            ),
        ];
        let mut fold = Fold::new(v, Grouping::default(), SLOW_DOWN_WAIT);
        let ua = Some("MyBot/1.0");
        fold.feed(
            &hit(
                Some(10.0),
                "192.0.2.1",
                "https",
                "/robots.txt",
                Some("200"),
                ua,
            ),
            0,
            1,
        );
        fold.feed(
            &hit(Some(20.0), "192.0.2.1", "https", "/a", Some("200"), ua),
            0,
            2,
        );
        // after the edit, within a day of its fetch: the old version allows /b
        fold.feed(
            &hit(Some(1010.0), "192.0.2.1", "https", "/b", Some("200"), ua),
            0,
            3,
        );
        fold.feed(
            &hit(Some(1012.0), "192.0.2.1", "https", "/c", Some("200"), ua),
            0,
            4,
        );
        fold.feed(&hit(None, "", "https", "/c", None, ua), 0, 5);
        let c = &fold.clients()[0];
        assert_eq!(fold.address(c.address), "192.0.2.1");
        assert_eq!(fold.token(c.token.unwrap()), "mybot");
        assert_eq!((c.requests, c.charged, c.robots_fetches), (4, 1, 1));
        assert!(c.robots_first);
        assert_eq!(c.breaches.len(), 1);
        assert_eq!(
            (c.breaches[0].reading, c.breaches[0].line),
            (Reading::Star, Some(2))
        );
        let first = fold.examples(&c.breaches[0].tally).next().unwrap();
        assert_eq!(
            (first.target, first.line, first.when),
            ("/a", 2, Some(20.0))
        );
        // pacing: the old version asks nothing, so the smaller spacing is 0
        assert_eq!(c.hosts[0].requests, 3);
        assert_eq!(c.hosts[0].asked, 0.0);
        assert_eq!(c.hosts[0].shortest, Some(2.0));
        assert_eq!(fold.unattributed(), 1);
    }

    #[test]
    fn pacing_and_slowing_down() {
        let v = vec![version(
            "User-agent: *\nCrawl-delay: 1\nDisallow: /x\n",
            None,
            0,
        )];
        let mut fold = Fold::new(v, Grouping::default(), SLOW_DOWN_WAIT);
        for (i, (when, status)) in [
            (0.0, "20"),
            (0.0, "20"),
            (0.0, "44"),
            (3.0, "20"),
            (4.0, "44"),
            (20.0, "20"),
        ]
        .into_iter()
        .enumerate()
        {
            fold.feed(
                &hit(
                    Some(when),
                    "2001:db8::1",
                    "gemini",
                    "/p",
                    Some(status),
                    None,
                ),
                1,
                i as u64,
            );
        }
        let c = &fold.clients()[0];
        let h = &c.hosts[0];
        assert_eq!(
            (h.requests, h.told, h.waited, h.ignored.requests),
            (6, 2, 1, 1)
        );
        assert_eq!(h.closer.requests, 1); // the third in one second breaks a Crawl-delay of 1
        assert_eq!(h.shortest, Some(0.0));
        assert_eq!(h.asked, 1.0);
    }

    #[test]
    fn gemini_roles_are_shown() {
        let v = vec![version(
            "User-agent: *\nDisallow: /s\n\nUser-agent: archiver\nDisallow: /a\n",
            None,
            0,
        )];
        let mut fold = Fold::new(v, Grouping::default(), SLOW_DOWN_WAIT);
        fold.feed(
            &hit(Some(1.0), "192.0.2.9", "gemini", "/a/1", Some("20"), None),
            0,
            1,
        );
        fold.feed(
            &hit(Some(100.0), "192.0.2.9", "gemini", "/s/1", Some("20"), None),
            0,
            2,
        );
        let c = &fold.clients()[0];
        assert_eq!(c.charged, 1);
        assert_eq!(c.roles, 1);
        let readings: Vec<Reading> = c.breaches.iter().map(|b| b.reading).collect();
        assert_eq!(readings, [Reading::Role(0), Reading::Star]);
    }

    #[test]
    fn person_pace() {
        let v = vec![version("", None, 0)];
        let mut fold = Fold::new(v, Grouping::default(), SLOW_DOWN_WAIT);
        for i in 0..21 {
            fold.feed(
                &hit(Some(i as f64 * 4.0), "192.0.2.2", "gopher", "/", None, None),
                0,
                i,
            );
        }
        assert!(!fold.clients()[0].outpaced); // 21 requests within 80 s: a person's
        for i in 0..20 {
            fold.feed(
                &hit(Some(1000.0), "192.0.2.2", "gopher", "/", None, None),
                0,
                30 + i,
            );
        }
        assert!(!fold.clients()[0].outpaced);
        fold.feed(
            &hit(Some(1000.0), "192.0.2.2", "gopher", "/", None, None),
            0,
            50,
        );
        assert!(fold.clients()[0].outpaced);
    }
}
