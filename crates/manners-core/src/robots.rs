//! One parsed file answering for any robot under any profile.
//!
//! Work is done on demand and kept: the line table is read once; groups are delimited the
//! first time a profile asks; the rules that apply to a robot are compiled the first time it
//! asks, and kept for its next question.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::agents::{agent_token, lower, name_1994, product_token};

use crate::fields;
use crate::line::Kind;
use crate::profile::{scheme_of, Preamble, Profile, Roles, Scheme, Target};
use crate::repr::py_repr;
use crate::rule::{pattern_matches, Precedence, Rule, Rules, Source};
use crate::table::{Table, SINCE_FIELD, SINCE_RULE};
use crate::target::{
    google_escape, google_path, gopher_selectors, is_plain, normalise, url_path, NotAPath, Subjects,
};
use crate::usage::{combine, split_rule, statement, Pref, Statement, VOCABULARIES};

/// Entries `from..to` of the line table.
pub type Span = (usize, usize);

/// A run of agent lines and every line up to the next group.
#[derive(Debug)]
pub struct Group {
    /// Its agent lines (User-agent and, when they count, Virtual-agent): `Groups::agents[from..to]`.
    members: (u32, u32),
    pub span: Span,
    /// Its first and last line.
    pub lines: (u32, u32),
}

/// The groups as a profile delimits them, and where the first begins.
#[derive(Debug)]
pub struct Groups {
    /// Entries of every group's agent lines, group after group.
    agents: Vec<u32>,
    /// Where each of those lines is kept in the line table, to read its value at once.
    starts: Vec<u32>,
    pub groups: Vec<Group>,
    pub first: usize,
}

impl Groups {
    /// Entries of a group's agent lines.
    pub fn members(&self, g: &Group) -> impl Iterator<Item = usize> + '_ {
        self.agents[g.members.0 as usize..g.members.1 as usize]
            .iter()
            .map(|&i| i as usize)
    }

    /// A group's agent lines with their values.
    pub fn agent_values<'t>(
        &'t self,
        g: &Group,
        t: &'t Table,
    ) -> impl Iterator<Item = (usize, Kind, &'t [u8])> + 't {
        let (from, to) = (g.members.0 as usize, g.members.1 as usize);
        self.agents[from..to]
            .iter()
            .zip(&self.starts[from..to])
            .map(|(&i, &start)| {
                (
                    i as usize,
                    t.kind(i as usize),
                    t.value_at(i as usize, start),
                )
            })
    }
}

/// Whether an agent line's value names `token` (lower case): "*", or its leading [A-Za-z_-] run.
fn names_token(value: &[u8], token: &[u8]) -> bool {
    if token == b"*" {
        return agent_token_is_star(value);
    }
    let n = value
        .iter()
        .take_while(|&&b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
        .count();
    n == token.len()
        && n > 0
        && value[..n].eq_ignore_ascii_case(token)
        && !agent_token_is_star(value)
}

fn agent_token_is_star(value: &[u8]) -> bool {
    value.first() == Some(&b'*')
        && value
            .get(1)
            .is_none_or(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// The rules of the groups chosen for one robot.
#[derive(Debug)]
pub struct Choice {
    /// Whose rules these are, for reasons: `user-agent googlebot`.
    pub label: Cow<'static, str>,
    /// Each span, with its first and last line.
    pub groups: Vec<(Span, (u32, u32))>,
    rules: OnceLock<Rules>,
    /// Asked before: worth compiling.
    asked: AtomicBool,
    /// Its Content-Usage and Content-Signal rules, read the first time usage is asked.
    usage: OnceLock<Vec<UsageRule>>,
}

impl Choice {
    fn new(label: impl Into<Cow<'static, str>>, groups: Vec<(Span, (u32, u32))>) -> Choice {
        Choice {
            label: label.into(),
            groups,
            rules: OnceLock::new(),
            asked: AtomicBool::new(false),
            usage: OnceLock::new(),
        }
    }
}

/// A Content-Usage or Content-Signal rule, read: which vocabulary, its path pattern as the
/// profile reads Allow and Disallow patterns (None: no path, so every path), its line, and
/// its statement.
#[derive(Debug)]
struct UsageRule {
    vocabulary: usize,
    pattern: Option<Vec<u8>>,
    line: u32,
    statement: Statement,
}

/// What a file prefers be done with what a robot fetches from a target.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    /// The robot may fetch the target.  Preferences apply only to what may be fetched
    /// (attach, "Content-Usage Rule Semantics": "no preferences are implied for resources
    /// that are disallowed"): when it may not, every category is unstated.
    pub allowed: bool,
    /// The profile reads usage preferences (rfc9309, google); under the others every
    /// category is unstated.
    pub read: bool,
    pub profile: String,
    /// For each vocabulary of `usage::VOCABULARIES`, each of its categories in order: the
    /// preference and the line that says it (None when unstated).
    pub vocabularies: Vec<Vec<(Pref, Option<u32>)>>,
}

/// A deciding rule: Allow?, and the entry of its line.
#[derive(Clone, Copy, Debug)]
struct Hit {
    allow: bool,
    entry: u32,
}

impl Hit {
    fn of(rule: &Rule) -> Hit {
        Hit {
            allow: rule.allow(),
            entry: rule.ordinal(),
        }
    }
}

/// Whose rules decide for one robot: a target is allowed only if every choice allows it.
#[derive(Debug)]
pub struct Policy {
    pub choices: Vec<Choice>,
    /// Why everything is allowed, when there is no choice.
    pub reason: &'static str,
}

/// Whether a robot may fetch a target, and the line that says so.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub allowed: bool,
    pub line: Option<u32>,
    /// The deciding rule: Allow?, and its value as written.
    pub rule: Option<(bool, Vec<u8>)>,
    pub reason: String,
    pub profile: String,
}

#[derive(Debug)]
struct PolicyKey {
    profile: Arc<Profile>,
    agent: String,
    roles: Vec<String>,
}

/// The name a robot is known by in a file: RFC 9309 names it by its product token
/// ("mybot/1.0 (+http://x)" is mybot); Google's parser compares the name as given (its
/// callers pass a token).  None: a name no group can name.
fn token_of<'a>(profile: &Profile, agent: &'a str) -> Option<Cow<'a, str>> {
    let token = if profile.exact_agent {
        Some(lower(agent))
    } else {
        product_token(agent)
    };
    token.filter(|t| !t.is_empty())
}

/// The policy of these choices; under a profile whose rules before any group bind everyone,
/// those rules join each choice (or are the only one).
fn with_preamble(
    profile: &Profile,
    preamble: Vec<(Span, (u32, u32))>,
    mut choices: Vec<Choice>,
) -> Policy {
    if profile.preamble == Preamble::Everyone && !preamble.is_empty() {
        for c in &mut choices {
            c.groups.splice(0..0, preamble.iter().copied());
        }
        if choices.is_empty() {
            choices.push(Choice::new("rules before any user-agent line", preamble));
        }
    }
    Policy {
        choices,
        reason: "no group applies to this robot: everything is allowed",
    }
}

/// The built-in profiles, shared by every file read without one.
fn builtin(scheme: Scheme) -> &'static Arc<Profile> {
    static PROFILES: OnceLock<[Arc<Profile>; 3]> = OnceLock::new();
    let p = PROFILES.get_or_init(|| {
        [
            Arc::new(Profile::rfc9309()),
            Arc::new(Profile::gemini()),
            Arc::new(Profile::gopher()),
        ]
    });
    match scheme {
        Scheme::Other => &p[0],
        Scheme::Gemini => &p[1],
        Scheme::Gopher => &p[2],
    }
}

/// A parsed robots.txt.
#[derive(Debug)]
pub struct RobotsTxt {
    table: Arc<Table>,
    profile: Option<Arc<Profile>>,
    groupings: [OnceLock<Box<Groups>>; 5],
    /// The groups as the attachment draft delimits them for usage preferences (a
    /// Content-Usage or Content-Signal line is a rule: it ends a run of agent lines), by
    /// `Profile::grouping` (records_1994 profiles use theirs).
    usage_groupings: [OnceLock<Box<Groups>>; 4],
    first_policy: OnceLock<Box<(PolicyKey, Policy)>>,
    policies: Mutex<Vec<(PolicyKey, Arc<Policy>)>>,
    /// Whose usage preferences apply to a robot, chosen from `usage_groupings`.
    usage_policies: Mutex<Vec<(PolicyKey, Arc<Policy>)>>,
}

/// A policy, borrowed from the file or shared with it.
pub enum PolicyRef<'a> {
    First(&'a Policy),
    Shared(Arc<Policy>),
}

impl std::ops::Deref for PolicyRef<'_> {
    type Target = Policy;
    fn deref(&self) -> &Policy {
        match self {
            PolicyRef::First(p) => p,
            PolicyRef::Shared(p) => p,
        }
    }
}

/// Roles as given: a robot's jobs, such as `indexer`.
pub type RoleList<'a> = &'a [&'a str];

impl RobotsTxt {
    /// Parse a file.  Never fails on content: anything at all parses.
    pub fn parse(
        data: &[u8],
        profile: Option<Arc<Profile>>,
        max_bytes: Option<usize>,
    ) -> RobotsTxt {
        RobotsTxt::with_table(Arc::new(Table::new(data, max_bytes)), profile)
    }

    /// Parse a file given as text (no need to check that it is UTF-8).
    pub fn parse_text(
        text: &str,
        profile: Option<Arc<Profile>>,
        max_bytes: Option<usize>,
    ) -> RobotsTxt {
        RobotsTxt::with_table(Arc::new(Table::of_text(text, max_bytes)), profile)
    }

    fn with_table(table: Arc<Table>, profile: Option<Arc<Profile>>) -> RobotsTxt {
        RobotsTxt {
            table,
            profile,
            groupings: Default::default(),
            usage_groupings: Default::default(),
            first_policy: OnceLock::new(),
            policies: Mutex::new(Vec::new()),
            usage_policies: Mutex::new(Vec::new()),
        }
    }

    /// The same file read under another profile, sharing its line table.
    pub fn reread(&self, profile: Option<Arc<Profile>>) -> RobotsTxt {
        RobotsTxt::with_table(Arc::clone(&self.table), profile)
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    pub fn profile(&self) -> Option<&Arc<Profile>> {
        self.profile.as_ref()
    }

    /// The profile a target is read under: the file's, else the one its scheme picks.
    pub fn profile_for(&self, target: &[u8]) -> &Arc<Profile> {
        self.profile
            .as_ref()
            .unwrap_or_else(|| builtin(scheme_of(target)))
    }

    /// The profile fields are read under when none is named: the file's, else gemini for a
    /// robot with roles, else rfc9309.
    pub fn fields_profile(&self, has_roles: bool) -> &Arc<Profile> {
        self.profile.as_ref().unwrap_or_else(|| {
            builtin(if has_roles {
                Scheme::Gemini
            } else {
                Scheme::Other
            })
        })
    }

    // -- decisions -----------------------------------------------------------------------

    /// May `agent`, acting as `roles`, fetch `target`?
    pub fn allowed(
        &self,
        target: &[u8],
        agent: &str,
        roles: RoleList<'_>,
    ) -> Result<bool, NotAPath> {
        Ok(self.forbidding_rule(target, agent, roles)?.is_none())
    }

    /// The line of the rule that forbids `agent`, acting as `roles`, to fetch `target` (the
    /// one `decide` gives); None when it may.  `allowed` with the line, without a reason.
    pub fn forbidding(
        &self,
        target: &[u8],
        agent: &str,
        roles: RoleList<'_>,
    ) -> Result<Option<u32>, NotAPath> {
        let rule = self.forbidding_rule(target, agent, roles)?;
        Ok(rule.map(|r| self.table.number(r.entry as usize)))
    }

    fn forbidding_rule(
        &self,
        target: &[u8],
        agent: &str,
        roles: RoleList<'_>,
    ) -> Result<Option<Hit>, NotAPath> {
        let profile = self.profile_for(target);
        let policy = self.policy(profile, agent, roles);
        if policy.choices.is_empty() {
            if matches!(profile.target, Target::Rfc3986 | Target::Plain) {
                url_path(target)?;
            }
            return Ok(None);
        }
        let (first, second) = subjects(profile, target)?;
        let paths = [Some(first.as_ref()), second.as_deref()];
        let paths = || paths.into_iter().flatten();
        if paths().any(|p| profile.always_allows(p)) {
            return Ok(None);
        }
        for path in paths() {
            for choice in &policy.choices {
                if let Some(rule) = self.first(profile, choice, path) {
                    if !rule.allow {
                        return Ok(Some(rule));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Like `allowed`, with the deciding rule, its line and the reason.
    pub fn decide(
        &self,
        target: &[u8],
        agent: &str,
        roles: RoleList<'_>,
    ) -> Result<Decision, NotAPath> {
        let profile = self.profile_for(target);
        let policy = self.policy(profile, agent, roles);
        let (first, second) = subjects(profile, target)?;
        let several = second.is_some();
        let paths = [Some(first.as_ref()), second.as_deref()];
        let paths = || paths.into_iter().flatten();
        let decision = |allowed, line, rule, reason| Decision {
            allowed,
            line,
            rule,
            reason,
            profile: profile.name.clone(),
        };
        for path in paths() {
            if profile.always_allows(path) {
                let reason = format!("{} is always allowed", String::from_utf8_lossy(path));
                return Ok(decision(true, None, None, reason));
            }
        }
        if policy.choices.is_empty() {
            return Ok(decision(true, None, None, policy.reason.to_string()));
        }
        let mut best: Option<(Hit, &Choice, &[u8])> = None;
        let mut deciding = None;
        'paths: for path in paths() {
            for choice in &policy.choices {
                if let Some(rule) = self.first(profile, choice, path) {
                    if !rule.allow {
                        deciding = Some((rule, choice, path));
                        break 'paths;
                    }
                    best = best.or(Some((rule, choice, path)));
                }
            }
        }
        if let Some((rule, choice, path)) = deciding.or(best) {
            let verb = if rule.allow { "allows" } else { "disallows" };
            let subject = if several {
                format!(" (as {})", py_repr(path))
            } else {
                String::new()
            };
            let reason = format!(
                "the longest matching rule for {} {verb} it{subject}",
                choice.label
            );
            let entry = rule.entry as usize;
            let value = self.table.value(entry).to_vec();
            return Ok(decision(
                rule.allow,
                Some(self.table.number(entry)),
                Some((rule.allow, value)),
                reason,
            ));
        }
        let labels: Vec<&str> = policy.choices.iter().map(|c| c.label.as_ref()).collect();
        Ok(decision(
            true,
            None,
            None,
            format!("no rule for {} matches", labels.join(" and ")),
        ))
    }

    /// The rule that decides for `path` among a choice's: found as written the first time the
    /// choice is asked (a one-shot question pays for no index), from its compiled rules after.
    fn first(&self, profile: &Profile, choice: &Choice, path: &[u8]) -> Option<Hit> {
        let arena = self.table.arena();
        if let Some(rules) = choice.rules.get() {
            return rules.first(arena, path).map(Hit::of);
        }
        if choice.asked.swap(true, Ordering::Relaxed) {
            return self.rules(profile, choice).first(arena, path).map(Hit::of);
        }
        let t = &self.table;
        let mut best: Option<(Precedence, Hit)> = None;
        let mut consider = |key: Precedence, hit: Hit| {
            if best.as_ref().is_none_or(|(b, _)| key < *b) {
                best = Some((key, hit));
            }
        };
        for &((from, to), _) in &choice.groups {
            for (i, _, kind, value) in t.entries(from, to) {
                if !kind.is_rule() || (kind == Kind::Allow && !profile.allow) {
                    continue;
                }
                let allow = kind == Kind::Allow;
                let hit = Hit {
                    allow,
                    entry: i as u32,
                };
                if allow && profile.index_html && index_dir(&pattern_of(profile, value)).is_some() {
                    // an Allow for an index page also allows its directory: two rules
                    for rule in compile(profile, allow, value, i as u32) {
                        if pattern_matches(&rule.pattern, path, profile.wildcards, profile.anchor) {
                            consider(rule.precedence(), hit);
                        }
                    }
                    continue;
                }
                // plain characters mean themselves under every profile: read as far as the
                // value is plain and the path agrees with it
                let same = value
                    .iter()
                    .zip(path)
                    .take_while(|&(&v, &p)| v == p && is_plain(v))
                    .count();
                if same == value.len() {
                    if same > 0 {
                        consider((Reverse(same), !allow, false, i as u32, false), hit);
                    }
                } else if !is_plain(value[same]) {
                    // an operator or an escape: matched as its rule would, without building it
                    let pattern = pattern_of(profile, value);
                    if pattern_matches(&pattern, path, profile.wildcards, profile.anchor) {
                        consider((Reverse(pattern.len()), !allow, true, i as u32, false), hit);
                    }
                }
            }
        }
        best.map(|(_, hit)| hit)
    }

    fn rules<'a>(&self, profile: &Profile, choice: &'a Choice) -> &'a Rules {
        choice.rules.get_or_init(|| {
            let t = &self.table;
            let sources = choice.groups.iter().flat_map(|&((from, to), _)| {
                t.entries(from, to)
                    .filter(|&(_, _, kind, _)| {
                        kind.is_rule() && (kind != Kind::Allow || profile.allow)
                    })
                    .flat_map(|(i, _, kind, value)| {
                        compile(profile, kind == Kind::Allow, value, i as u32)
                    })
            });
            Rules::new(sources, t.arena(), profile.wildcards, profile.anchor)
        })
    }

    // -- usage preferences ---------------------------------------------------------------

    /// The usage preferences for what `agent`, acting as `roles`, fetches from `target`.
    ///
    /// A Content-Usage rule applies to a path as Allow and Disallow rules do (attach,
    /// "Content-Usage Rule Semantics": "the same path prefix matching rules", the length
    /// "counting the number of bytes in the encoded path"): the longest matching pattern
    /// decides, and a rule without a path matches every path at length 0.  The rules that
    /// tie at that length (the same path, said twice) are combined category by category as
    /// the vocabulary says ("Combining Preferences": any `n` wins, then any `y`), and so are
    /// the choices of a robot with several.  Content-Signal rules are read the same way.
    /// The rules are those of the groups chosen for this robot as its verdicts' groups are
    /// chosen (by product token, same-named groups merged, else `*`; virtual agents and
    /// roles as the profile says), but with groups delimited by the draft's grammar, where a
    /// Content-Usage or Content-Signal line is a rule and ends a run of agent lines
    /// (`usage_groups`).  Verdicts keep their own groups, where it does not.
    pub fn usage(
        &self,
        target: &[u8],
        agent: &str,
        roles: RoleList<'_>,
    ) -> Result<Usage, NotAPath> {
        let profile = self.profile_for(target);
        let allowed = self.allowed(target, agent, roles)?;
        let mut out = Usage {
            allowed,
            read: profile.usage_preferences,
            profile: profile.name.clone(),
            vocabularies: VOCABULARIES
                .iter()
                .map(|v| vec![(Pref::Unstated, None); v.categories.len()])
                .collect(),
        };
        if !allowed || !profile.usage_preferences || !self.table.usage {
            return Ok(out);
        }
        let policy = self.usage_policy(profile, agent, roles);
        let (path, _) = subjects(profile, target)?;
        let path = path.as_ref();
        let mut said: Vec<(&Statement, u32)> = Vec::new();
        // each choice's rules that match the path, with their lengths, matched once
        let mut matched: Vec<(usize, &UsageRule)> = Vec::new();
        for (v, vocabulary) in VOCABULARIES.iter().enumerate() {
            said.clear();
            for choice in &policy.choices {
                matched.clear();
                matched.extend(
                    self.usage_rules(profile, choice)
                        .iter()
                        .filter(|r| r.vocabulary == v)
                        .filter_map(|r| match &r.pattern {
                            None => Some((0, r)),
                            Some(p) => pattern_matches(p, path, profile.wildcards, profile.anchor)
                                .then_some((p.len(), r)),
                        }),
                );
                let Some(longest) = matched.iter().map(|(n, _)| *n).max() else {
                    continue;
                };
                said.extend(
                    matched
                        .iter()
                        .filter(|(n, _)| *n == longest)
                        .map(|(_, r)| (&r.statement, r.line)),
                );
            }
            for k in 0..vocabulary.categories.len() {
                let (pref, by) = combine(said.iter().map(|(s, _)| s[k]));
                out.vocabularies[v][k] = (pref, by.map(|i| said[i].1));
            }
        }
        Ok(out)
    }

    /// Whose usage preferences apply to this robot, chosen once and kept.
    fn usage_policy(
        &self,
        profile: &Arc<Profile>,
        agent: &str,
        roles: RoleList<'_>,
    ) -> Arc<Policy> {
        let mut policies = self
            .usage_policies
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, p)) = policies.iter().find(|(k, _)| {
            Arc::ptr_eq(&k.profile, profile)
                && k.agent == agent
                && k.roles.iter().map(String::as_str).eq(roles.iter().copied())
        }) {
            return Arc::clone(p);
        }
        let token = token_of(profile, agent);
        let grouping = self.usage_groups(profile);
        let policy =
            Arc::new(self.choose_by_groups(profile, grouping, true, token.as_deref(), roles));
        let key = PolicyKey {
            profile: Arc::clone(profile),
            agent: agent.to_string(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
        };
        policies.push((key, Arc::clone(&policy)));
        policy
    }

    fn usage_rules<'a>(&self, profile: &Profile, choice: &'a Choice) -> &'a [UsageRule] {
        choice.usage.get_or_init(|| {
            let t = &self.table;
            let mut out = Vec::new();
            for &((from, to), _) in &choice.groups {
                for (_, number, kind, value) in t.entries(from, to) {
                    let Some(v) = VOCABULARIES.iter().position(|v| v.field == kind) else {
                        continue;
                    };
                    let (path, said) = split_rule(value);
                    out.push(UsageRule {
                        vocabulary: v,
                        pattern: path.map(|p| pattern_of(profile, p).into_owned()),
                        line: number,
                        statement: statement(said, VOCABULARIES[v]).0,
                    });
                }
            }
            out
        })
    }

    // -- fields --------------------------------------------------------------------------

    /// The values of the lines of `kind` in the groups that apply to this robot, in order.
    pub fn field_values(
        &self,
        kind: Kind,
        agent: &str,
        roles: RoleList<'_>,
        profile: &Arc<Profile>,
    ) -> Vec<&[u8]> {
        let policy = self.policy(profile, agent, roles);
        let t = &self.table;
        policy
            .choices
            .iter()
            .flat_map(|c| {
                c.groups
                    .iter()
                    .flat_map(|&((from, to), _)| t.entries(from, to))
            })
            .filter(|e| e.2 == kind)
            .map(|e| e.3)
            .collect()
    }

    /// Seconds between requests asked of this robot (the largest that applies).
    pub fn crawl_delay(
        &self,
        agent: &str,
        roles: RoleList<'_>,
        profile: &Arc<Profile>,
    ) -> Option<f64> {
        self.largest(Kind::CrawlDelay, agent, roles, profile)
    }

    /// Seconds between re-checks of a resource, from the Gemini proposal's Check field.
    pub fn check_interval(
        &self,
        agent: &str,
        roles: RoleList<'_>,
        profile: &Arc<Profile>,
    ) -> Option<f64> {
        self.largest(Kind::Check, agent, roles, profile)
    }

    fn largest(
        &self,
        kind: Kind,
        agent: &str,
        roles: RoleList<'_>,
        profile: &Arc<Profile>,
    ) -> Option<f64> {
        self.field_values(kind, agent, roles, profile)
            .into_iter()
            .filter_map(fields::number)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    }

    /// The Request-rate asked of this robot: the slowest of those that apply at `minute` of
    /// the day (UTC), or with no `minute` the slowest of all.
    pub fn request_rate(
        &self,
        agent: &str,
        roles: RoleList<'_>,
        profile: &Arc<Profile>,
        minute: Option<u16>,
    ) -> Option<fields::Rate> {
        self.field_values(Kind::RequestRate, agent, roles, profile)
            .into_iter()
            .filter_map(fields::rate)
            .filter(|r| minute.is_none_or(|m| r.applies_at(m)))
            .fold(None, |best: Option<fields::Rate>, r| match best {
                Some(b) if b.spacing() >= r.spacing() => Some(b),
                _ => Some(r),
            })
    }

    /// Seconds between requests the file asks of this robot: the larger of its Crawl-delay and
    /// of the Request-rate in force at `minute` of the day (UTC; None: the slowest of all), 0
    /// when it asks neither (Python's `manners.asked_spacing`).
    pub fn asked_spacing(
        &self,
        agent: &str,
        roles: RoleList<'_>,
        profile: &Arc<Profile>,
        minute: Option<u16>,
    ) -> f64 {
        let delay = self
            .crawl_delay(agent, roles, profile)
            .filter(|&d| d != 0.0)
            .unwrap_or(0.0);
        let rate = self
            .request_rate(agent, roles, profile, minute)
            .map_or(0.0, |r| r.spacing());
        if rate > delay {
            rate
        } else {
            delay
        }
    }

    /// Sitemap URLs from anywhere in the file, in order, without repeats.
    pub fn sitemaps(&self) -> Vec<&[u8]> {
        let t = &self.table;
        let mut out: Vec<&[u8]> = Vec::new();
        for (_, _, kind, v) in t.entries(0, t.len()) {
            if kind == Kind::Sitemap && !v.is_empty() && !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    // -- groups --------------------------------------------------------------------------

    /// The groups (records, for 1994) as a profile delimits them.
    pub fn groups(&self, profile: &Profile) -> &Groups {
        self.groupings[profile.grouping()].get_or_init(|| {
            Box::new(if profile.records_1994 {
                self.records_1994()
            } else {
                self.delimit(profile.virtual_agents, profile.fields_end_groups, false)
            })
        })
    }

    /// The groups as the attachment draft delimits them under a profile, for usage
    /// preferences: as `groups`, but a Content-Usage or Content-Signal line also ends a run
    /// of agent lines (the draft adds both to RFC 9309's rules).
    pub fn usage_groups(&self, profile: &Profile) -> &Groups {
        if profile.records_1994 {
            return self.groups(profile);
        }
        self.usage_groupings[profile.grouping()].get_or_init(|| {
            Box::new(self.delimit(profile.virtual_agents, profile.fields_end_groups, true))
        })
    }

    /// Whether entries `from..to` hold a rule (with `fields`, also a Crawl-delay, Request-rate
    /// or Check line; with `usage`, also a Content-Usage or Content-Signal line).
    fn has_rule(&self, from: usize, to: usize, fields: bool, usage: bool) -> bool {
        (from..to).any(|i| {
            let k = self.table.kind(i);
            k.is_rule() || (fields && k.is_field()) || (usage && k.is_usage())
        })
    }

    /// Runs of agent lines, each ended by a rule (with `fields`, also by a Crawl-delay,
    /// Request-rate or Check line: "A / Crawl-delay / B" is two groups, as its author meant;
    /// with `usage`, also by a Content-Usage or Content-Signal line, as the attachment draft
    /// reads them).
    fn delimit(&self, virtual_agents: bool, fields: bool, usage: bool) -> Groups {
        let t = &self.table;
        let is_agent =
            |k: Kind| k == Kind::UserAgent || (virtual_agents && k == Kind::VirtualAgent);
        let mut agents: Vec<u32> = Vec::with_capacity(8);
        let mut starts: Vec<u32> = Vec::with_capacity(8);
        let mut groups: Vec<Group> = Vec::with_capacity(8);
        // a rule came after the last agent line: the next one starts a group
        let mut ended = true;
        for (i, number, kind, start) in t.kinds(0, t.len()) {
            if is_agent(kind) {
                if ended {
                    if let Some(g) = groups.last_mut() {
                        g.span.1 = i;
                        g.lines.1 = number - 1;
                    }
                    let at = agents.len() as u32;
                    groups.push(Group {
                        members: (at, at),
                        span: (i, t.len()),
                        lines: (number, t.n_lines),
                    });
                    ended = false;
                }
                agents.push(i as u32);
                starts.push(start);
                if let Some(g) = groups.last_mut() {
                    g.members.1 = agents.len() as u32;
                }
            } else if kind.is_rule() || (fields && kind.is_field()) || (usage && kind.is_usage()) {
                ended = true;
            }
        }
        Groups {
            first: groups.first().map_or(t.len(), |g| g.span.0),
            agents,
            starts,
            groups,
        }
    }

    /// Records as the 1994 standard has them: a blank line also ends one.
    fn records_1994(&self) -> Groups {
        let t = &self.table;
        let mut groups = Vec::new();
        let mut members: Vec<usize> = Vec::new();
        let mut seen_rule = false;
        let mut all: Vec<u32> = Vec::new();
        let mut starts: Vec<u32> = Vec::new();
        let mut close = |members: &mut Vec<usize>, end: usize, last: u32| {
            if !members.is_empty() {
                let first = members[0];
                let from = all.len() as u32;
                starts.extend(members.iter().map(|&i| t.start(i)));
                all.extend(members.drain(..).map(|i| i as u32));
                groups.push(Group {
                    members: (from, all.len() as u32),
                    span: (first, end),
                    lines: (t.number(first), last),
                });
            }
        };
        for i in 0..t.len() {
            match t.kind(i) {
                Kind::UserAgent => {
                    if seen_rule || members.is_empty() {
                        close(&mut members, i, t.number(i) - 1);
                        seen_rule = false;
                    }
                    members.push(i);
                }
                Kind::Allow | Kind::Disallow => seen_rule = true,
                _ => {}
            }
            if let Some(blank) = t.blank_after(i) {
                if !members.is_empty() {
                    close(&mut members, i + 1, blank - 1);
                    seen_rule = false;
                }
            }
        }
        close(&mut members, t.len(), t.n_lines);
        let first = groups.first().map_or(t.len(), |g| g.span.0);
        Groups {
            agents: all,
            starts,
            groups,
            first,
        }
    }

    /// The names a group's agent lines of `kind` give, without repeats or empty ones: tokens,
    /// or for `records_1994` the names before any '/'.
    pub fn group_names(
        &self,
        grouping: &Groups,
        g: &Group,
        kind: Kind,
        records_1994: bool,
    ) -> Vec<Vec<u8>> {
        let t = &self.table;
        let mut out: Vec<Vec<u8>> = Vec::new();
        for (_, _, value) in grouping.agent_values(g, t).filter(|m| m.1 == kind) {
            let n = if records_1994 {
                name_1994(value)
            } else {
                agent_token(value)
            };
            if !n.is_empty() && !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }

    // -- choosing groups -----------------------------------------------------------------

    /// Whose rules decide for this robot, chosen once and kept.  The first robot to ask
    /// (usually the only one) finds its policy without a lock.
    pub fn policy(
        &self,
        profile: &Arc<Profile>,
        agent: &str,
        roles: RoleList<'_>,
    ) -> PolicyRef<'_> {
        let key_is = |k: &PolicyKey| {
            Arc::ptr_eq(&k.profile, profile)
                && k.agent == agent
                && k.roles.iter().map(String::as_str).eq(roles.iter().copied())
        };
        let key = || PolicyKey {
            profile: Arc::clone(profile),
            agent: agent.to_string(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
        };
        let (k, p) = &**self
            .first_policy
            .get_or_init(|| Box::new((key(), self.choose(profile, agent, roles))));
        if key_is(k) {
            return PolicyRef::First(p);
        }
        let mut policies = self.policies.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, p)) = policies.iter().find(|(k, _)| key_is(k)) {
            return PolicyRef::Shared(Arc::clone(p));
        }
        let policy = Arc::new(self.choose(profile, agent, roles));
        policies.push((key(), Arc::clone(&policy)));
        PolicyRef::Shared(policy)
    }

    fn choose(&self, profile: &Profile, agent: &str, roles: RoleList<'_>) -> Policy {
        let token = token_of(profile, agent);
        if roles.is_empty() && !profile.records_1994 {
            self.choose_by_name(profile, token.as_deref())
        } else {
            self.choose_by_groups(
                profile,
                self.groups(profile),
                false,
                token.as_deref(),
                roles,
            )
        }
    }

    /// The choice for a robot without roles, read from the file's agent lines alone (groups
    /// delimited on the way, none kept): most files are asked by one such robot, once.
    /// It chooses exactly as `choose_by_groups` does (the tests and the fuzzer check).
    fn choose_by_name(&self, profile: &Profile, token: Option<&str>) -> Policy {
        let t = &self.table;
        let named = token.filter(|t| *t != "*");
        // what ends a run of agent lines: a rule, and under some profiles a field
        let ends = SINCE_RULE
            | if profile.fields_end_groups {
                SINCE_FIELD
            } else {
                0
            };
        // the groups naming the robot, and those naming '*': (span, lines) of each
        let mut by_name: Vec<(Span, (u32, u32))> = Vec::new();
        let mut by_star: Vec<(Span, (u32, u32))> = Vec::new();
        // the group being read: its first entry and line, whether it names the robot, '*'
        let mut open: Option<(usize, u32, bool, bool)> = None;
        let mut close = |group: Option<(usize, u32, bool, bool)>, end: usize, last: u32| {
            if let Some((from, line, name, star)) = group {
                if name {
                    by_name.push(((from, end), (line, last)));
                }
                if star {
                    by_star.push(((from, end), (line, last)));
                }
            }
        };
        // where the first group starts, and whether a rule comes before it
        let (mut first, mut first_line, mut rule_before) = (t.len(), 0, false);
        let (agent_lines, tail) = t.agent_lines();
        // rules and fields since the last agent line that counts
        let mut since = 0;
        for a in agent_lines {
            since |= a.since;
            if a.kind == Kind::VirtualAgent && !profile.virtual_agents {
                continue; // not an agent line under this profile: neither starts nor ends a group
            }
            let (i, number) = (a.entry as usize, a.number);
            match open {
                None => {
                    (first, first_line, rule_before) = (i, number, since & ends != 0);
                    open = Some((i, number, false, false));
                }
                Some(_) if since & ends != 0 => {
                    close(open, i, number - 1);
                    open = Some((i, number, false, false));
                }
                Some(_) => {}
            }
            since = 0;
            if let (Kind::UserAgent, Some(g)) = (a.kind, open.as_mut()) {
                let value = t.value_at(i, a.start);
                g.2 |= named.is_some_and(|n| names_token(value, n.as_bytes()));
                g.3 |= names_token(value, b"*");
            }
        }
        close(open, t.len(), t.n_lines);
        if open.is_none() {
            rule_before = (since | tail) & ends != 0;
        }
        let preamble: Vec<(Span, (u32, u32))> =
            if profile.preamble != Preamble::Ignored && rule_before {
                let last = if first < t.len() {
                    first_line - 1
                } else {
                    t.n_lines
                };
                vec![((0, first), (1, last))]
            } else {
                Vec::new()
            };
        // one choice at most: the groups naming the robot, or else those naming '*'
        let mut choices = Vec::with_capacity(1);
        if let Some(tok) = named.filter(|_| !by_name.is_empty()) {
            choices.push(Choice::new(format!("user-agent {tok}"), by_name));
        } else {
            if profile.preamble == Preamble::Star {
                by_star.splice(0..0, preamble.iter().copied());
            }
            if !by_star.is_empty() {
                choices.push(Choice::new("user-agent *", by_star));
            }
        }
        with_preamble(profile, preamble, choices)
    }

    /// A robot's choices (label, groups) and reason, made both ways, for the tests and the
    /// fuzzer to see that they are the same.
    #[cfg(any(test, fuzzing))]
    #[allow(clippy::type_complexity)]
    pub fn choices_both_ways(
        &self,
        profile: &Profile,
        agent: &str,
    ) -> [(Vec<(String, Vec<(Span, (u32, u32))>)>, &'static str); 2] {
        let token = token_of(profile, agent);
        let shown = |p: Policy| {
            let choices = p.choices.into_iter();
            (
                choices.map(|c| (c.label.into_owned(), c.groups)).collect(),
                p.reason,
            )
        };
        [
            shown(self.choose_by_name(profile, token.as_deref())),
            shown(self.choose_by_groups(
                profile,
                self.groups(profile),
                false,
                token.as_deref(),
                &[],
            )),
        ]
    }

    /// The choice for a robot among `grouping`'s groups (`usage`: those of `usage_groups`,
    /// where a usage line also counts as a rule before the first group).
    fn choose_by_groups(
        &self,
        profile: &Profile,
        grouping: &Groups,
        usage: bool,
        token: Option<&str>,
        roles: RoleList<'_>,
    ) -> Policy {
        let (groups, first) = (&grouping.groups, grouping.first);
        let t = &self.table;
        // whether a group has an agent line of `kind` naming `token`
        let names = |g: &Group, kind: Kind, token: &[u8]| {
            grouping
                .agent_values(g, t)
                .any(|(_, k, value)| k == kind && names_token(value, token))
        };
        // rules before the first group: from line 1 to the line before its first agent line
        let preamble: Vec<(Span, (u32, u32))> = if profile.preamble != Preamble::Ignored
            && self.has_rule(0, first, profile.fields_end_groups, usage)
        {
            let last = if first < t.len() {
                t.number(first) - 1
            } else {
                t.n_lines
            };
            vec![((0, first), (1, last))]
        } else {
            Vec::new()
        };
        if profile.records_1994 {
            if let Some(tok) = token.filter(|t| *t != "*") {
                for g in groups {
                    let names = self.group_names(grouping, g, Kind::UserAgent, true);
                    if names
                        .iter()
                        .any(|n| n.as_slice() != b"*" && contains(tok.as_bytes(), n))
                    {
                        let name = names
                            .iter()
                            .min()
                            .map(|n| String::from_utf8_lossy(n).into_owned())
                            .unwrap_or_default();
                        return Policy {
                            choices: vec![Choice::new(
                                format!("the record for {name}"),
                                vec![(g.span, g.lines)],
                            )],
                            reason: "",
                        };
                    }
                }
            }
            if let Some(g) = groups.iter().find(|g| {
                self.group_names(grouping, g, Kind::UserAgent, true)
                    .iter()
                    .any(|n| n == b"*")
            }) {
                return Policy {
                    choices: vec![Choice::new("the record for *", vec![(g.span, g.lines)])],
                    reason: "",
                };
            }
            return Policy {
                choices: Vec::new(),
                reason: "no record applies to this robot: everything is allowed",
            };
        }

        // the label is only written for a choice that is made
        let choice = |label: &dyn Fn() -> Cow<'static, str>,
                      test: &dyn Fn(&Group) -> bool,
                      before: &[(Span, (u32, u32))]|
         -> Option<Choice> {
            let chosen: Vec<(Span, (u32, u32))> = before
                .iter()
                .copied()
                .chain(groups.iter().filter(|g| test(g)).map(|g| (g.span, g.lines)))
                .collect();
            (!chosen.is_empty()).then(|| Choice::new(label(), chosen))
        };
        let mut choices: Vec<Choice> = Vec::new();
        if let Some(tok) = token.filter(|t| *t != "*") {
            choices.extend(choice(
                &|| format!("user-agent {tok}").into(),
                &|g| names(g, Kind::UserAgent, tok.as_bytes()),
                &[],
            ));
        }
        let mut named_roles: Vec<String> = Vec::new();
        for r in roles {
            let r = r.to_ascii_lowercase();
            if !r.is_empty() && r != "*" && !named_roles.contains(&r) {
                named_roles.push(r);
            }
        }
        let virtual_star = |g: &Group| names(g, Kind::VirtualAgent, b"*");
        let mut role_choices: Vec<Choice> = Vec::new();
        if choices.is_empty() && profile.virtual_agents && !roles.is_empty() {
            for role in &named_roles {
                role_choices.extend(choice(
                    &|| format!("virtual agent {role}").into(),
                    &|g| {
                        names(g, Kind::UserAgent, role.as_bytes())
                            || names(g, Kind::VirtualAgent, role.as_bytes())
                    },
                    &[],
                ));
            }
            if profile.roles == Roles::Targeted {
                choices = if role_choices.is_empty() {
                    choice(&|| "virtual-agent *".into(), &virtual_star, &[])
                        .into_iter()
                        .collect()
                } else {
                    std::mem::take(&mut role_choices)
                };
            }
        }
        if choices.is_empty() {
            let star_preamble: &[(Span, (u32, u32))] = if profile.preamble == Preamble::Star {
                &preamble
            } else {
                &[]
            };
            choices.extend(choice(
                &|| "user-agent *".into(),
                &|g| names(g, Kind::UserAgent, b"*"),
                star_preamble,
            ));
            if profile.virtual_agents && !roles.is_empty() && profile.roles == Roles::Combined {
                // The companion spec: respect '*' and every role's groups; err on the side of caution.
                choices.append(&mut role_choices);
                choices.extend(choice(&|| "virtual-agent *".into(), &virtual_star, &[]));
            }
        }
        with_preamble(profile, preamble, choices)
    }

    /// Heap bytes this object owns, its lazy indexes included.
    pub fn heap_size(&self) -> usize {
        let groups: usize = self
            .groupings
            .iter()
            .chain(&self.usage_groupings)
            .filter_map(OnceLock::get)
            .map(|g| {
                g.groups.capacity() * std::mem::size_of::<Group>()
                    + (g.agents.capacity() + g.starts.capacity()) * 4
            })
            .sum();
        let size = |k: &PolicyKey, p: &Policy| {
            std::mem::size_of::<(PolicyKey, Policy)>()
                + k.agent.capacity()
                + k.roles.iter().map(|r| 24 + r.capacity()).sum::<usize>()
                + p.choices
                    .iter()
                    .map(|c| {
                        std::mem::size_of::<Choice>()
                            + match &c.label {
                                Cow::Owned(s) => s.capacity(),
                                Cow::Borrowed(_) => 0,
                            }
                            + c.groups.capacity() * std::mem::size_of::<(Span, (u32, u32))>()
                            + c.rules.get().map_or(0, Rules::heap_size)
                            + c.usage.get().map_or(0, |u| {
                                u.capacity() * std::mem::size_of::<UsageRule>()
                                    + u.iter()
                                        .map(|r| r.pattern.as_ref().map_or(0, Vec::capacity))
                                        .sum::<usize>()
                            })
                    })
                    .sum::<usize>()
        };
        let first = self.first_policy.get().map_or(0, |b| size(&b.0, &b.1));
        let policies: usize = [&self.policies, &self.usage_policies]
            .iter()
            .map(|m| {
                m.lock()
                    .map(|v| v.iter().map(|(k, p)| 16 + size(k, p)).sum::<usize>())
                    .unwrap_or(0)
            })
            .sum();
        // the table is counted whole by each object sharing it: it is theirs to keep alive
        std::mem::size_of::<Table>() + self.table.heap_size() + groups + first + policies
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// The rules one line makes: none when empty, two for Google's `Allow: .../index.html`.
/// A rule's value as its profile reads the pattern.
fn pattern_of<'a>(profile: &Profile, value: &'a [u8]) -> Cow<'a, [u8]> {
    match profile.target {
        Target::Rfc3986 => normalise(value, true),
        Target::Plain => normalise(value, false),
        Target::Google => google_escape(value),
        Target::Selector => Cow::Borrowed(value),
    }
}

fn compile<'a>(profile: &Profile, allow: bool, value: &'a [u8], entry: u32) -> Vec<Source<'a>> {
    let pattern = pattern_of(profile, value);
    if pattern.is_empty() {
        return Vec::new();
    }
    let plain = value.iter().all(|&b| is_plain(b));
    let extra = (allow && profile.index_html)
        .then(|| index_dir(&pattern).map(|dir| [dir, b"$"].concat()))
        .flatten();
    let mut out = vec![Source {
        allow,
        pattern,
        ordinal: entry,
        plain,
        extra: false,
    }];
    out.extend(extra.map(|dir| Source {
        allow: true,
        pattern: Cow::Owned(dir),
        ordinal: entry,
        plain: false,
        extra: true,
    }));
    out
}

/// The directory an `Allow: .../index.html` pattern also allows (Google), up to its slash.
fn index_dir(pattern: &[u8]) -> Option<&[u8]> {
    let slash = pattern.iter().rposition(|&b| b == b'/')?;
    pattern[slash..]
        .starts_with(b"/index.htm")
        .then(|| &pattern[..=slash])
}

/// What a target is matched as: one path, or for Gopher the selector and its typed form.
pub fn subjects<'a>(profile: &Profile, target: &'a [u8]) -> Result<Subjects<'a>, NotAPath> {
    Ok(match profile.target {
        Target::Rfc3986 | Target::Plain => {
            let path = match url_path(target)? {
                Cow::Borrowed(p) => normalise(p, false),
                Cow::Owned(p) => Cow::Owned(normalise(&p, false).into_owned()),
            };
            (path, None)
        }
        Target::Google => (google_path(target), None),
        Target::Selector => gopher_selectors(target),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{generated, web_corpus};

    const AGENTS: [&str; 7] = [
        "FooBot",
        "foobot/2.1 (+http://x)",
        "*",
        "",
        "other",
        "FOO",
        "9bot",
    ];

    fn agree(data: &[u8]) {
        let robots = RobotsTxt::parse(data, None, None);
        // (1994 records are always chosen by groups)
        for profile in Profile::builtin().into_iter().filter(|p| !p.records_1994) {
            for agent in AGENTS {
                let [one_pass, by_groups] = robots.choices_both_ways(&profile, agent);
                assert_eq!(
                    one_pass,
                    by_groups,
                    "{} {agent:?} {:?}",
                    profile.name,
                    String::from_utf8_lossy(&data[..data.len().min(300)])
                );
            }
        }
    }

    #[test]
    fn a_robot_without_roles_is_chosen_for_from_agent_lines_as_by_groups() {
        let lines: [&[u8]; 12] = [
            b"User-agent: *\n",
            b"User-agent: FooBot\n",
            b"user-agent: foo\n",
            b"Virtual-agent: indexer\n",
            b"Disallow: /a\n",
            b"Allow: /b\n",
            b"Crawl-delay: 2\n",
            b"Request-rate: 1/5\n",
            b"\n",
            b"# comment\n",
            b"Sitemap: http://x/s.xml\n",
            b"User-agent: * FooBot\n",
        ];
        for data in generated(0x9e37_79b9_7f4a_7c15, 3_000, 9, &lines) {
            agree(&data);
        }
        for data in web_corpus(5) {
            agree(&data);
        }
    }
}

#[cfg(test)]
mod forbidding_tests {
    use super::*;
    use crate::testing::generated;

    #[test]
    fn forbidding_names_the_line_decide_names() {
        let lines: [&[u8]; 10] = [
            b"User-agent: *\n",
            b"User-agent: foobot\n",
            b"Virtual-agent: archiver\n",
            b"Disallow: /a\n",
            b"Allow: /a/b\n",
            b"Disallow: /*.php$\n",
            b"Disallow: /\n",
            b"Allow: /robots\n",
            b"Disallow: 1/\n",
            b"\n",
        ];
        let targets: [&[u8]; 8] = [
            b"/",
            b"/a",
            b"/a/b",
            b"/x.php",
            b"/robots.txt",
            b"1/x",
            b"gemini://h/a",
            b"",
        ];
        let profiles = [Profile::rfc9309(), Profile::gemini(), Profile::gopher()].map(Arc::new);
        for data in generated(0x2545_f491_4f6c_dd1d, 2_000, 9, &lines) {
            for profile in &profiles {
                let r = RobotsTxt::parse(&data, Some(Arc::clone(profile)), None);
                for target in targets {
                    for (agent, roles) in [("*", &[][..]), ("foobot", &[]), ("*", &["archiver"])] {
                        let decided = r
                            .decide(target, agent, roles)
                            .map(|d| (!d.allowed).then_some(d.line));
                        let found = r.forbidding(target, agent, roles).map(|l| l.map(Some));
                        if let Ok(decided) = decided {
                            assert_eq!(found, Ok(decided), "{:?}", String::from_utf8_lossy(&data));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod usage_tests {
    use super::*;
    use crate::testing::generated;
    use crate::usage::{AIPREF, CONTENT_SIGNALS};

    /// `label=value@line` for each stated category of `vocab` (index in VOCABULARIES).
    fn said(u: &Usage, v: usize) -> Vec<String> {
        let vocab = VOCABULARIES[v];
        vocab
            .categories
            .iter()
            .zip(&u.vocabularies[v])
            .filter(|(_, (p, _))| *p != Pref::Unstated)
            .map(|(c, (p, line))| format!("{}={}@{}", c.label, p.name(), line.unwrap_or(0)))
            .collect()
    }

    fn prefs(file: &str, target: &str, agent: &str) -> (bool, Vec<String>, Vec<String>) {
        let r = RobotsTxt::parse(file.as_bytes(), None, None);
        let u = r.usage(target.as_bytes(), agent, &[]).unwrap();
        (u.allowed, said(&u, 0), said(&u, 1))
    }

    /// attach "Example" (section "Robots Exclusion Protocol Content-Usage Rule"), its
    /// figure and its table, for both robots.
    #[test]
    fn attach_robots_example() {
        let file = "User-Agent: *\nAllow: /\nDisallow: /never/\nContent-Usage: train-ai=n\n\
                    Content-Usage: /ai-ok/ train-ai=y\n\nUser-Agent: ExampleBot\nAllow: /\n\
                    Content-Usage: train-ai=y\n";
        let no = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            prefs(file, "/test", "*"),
            (true, no(&["train-ai=no@4"]), no(&[]))
        );
        assert_eq!(prefs(file, "/never/test", "*"), (false, no(&[]), no(&[])));
        assert_eq!(
            prefs(file, "/ai-ok/test", "*"),
            (true, no(&["train-ai=yes@5"]), no(&[]))
        );
        for path in ["/test", "/never/test", "/ai-ok/test"] {
            assert_eq!(
                prefs(file, path, "ExampleBot"),
                (true, no(&["train-ai=yes@9"]), no(&[]))
            );
        }
        // attach "Examples" (Introduction)
        let intro = "User-Agent: *\nAllow: /\nContent-Usage: train-ai=n\n";
        assert_eq!(
            prefs(intro, "/x", "bot"),
            (true, no(&["train-ai=no@3"]), no(&[]))
        );
    }

    #[test]
    fn identical_paths_combine_and_the_longest_path_decides() {
        let file = "User-agent: *\nContent-Usage: /a train-ai=y, search=y\n\
                    Content-Usage: /a train-ai=n\nContent-Usage: /a/b ai-use=y\n\
                    Content-Usage: search=n\n";
        let (_, cu, _) = prefs(file, "/a/x", "*");
        assert_eq!(cu, ["train-ai=no@3", "search=yes@2"]);
        // the longest rule's statement decides whole: what it leaves unstated stays so
        assert_eq!(prefs(file, "/a/b", "*").1, ["ai-use=yes@4"]);
        assert_eq!(prefs(file, "/z", "*").1, ["search=no@5"]);
        // a malformed statement is unknown, and still the longest rule
        let bad = "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /x Train-AI=y\n";
        assert_eq!(prefs(bad, "/x/1", "*").1, Vec::<String>::new());
        assert_eq!(prefs(bad, "/y", "*").1, ["train-ai=no@2"]);
    }

    /// attach §3 makes a Content-Usage (and we read a Content-Signal) line a rule: it ends a
    /// run of agent lines for usage preferences, and the groups are chosen as for verdicts
    /// (product token, same-named groups merged, `*` otherwise).  Verdicts keep theirs.
    #[test]
    fn usage_lines_end_a_run_of_agent_lines_for_usage_only() {
        let file = "User-agent: BotA\nContent-Usage: /x search=n\n\n\
                    User-agent: *\nContent-Usage: train-ai=n\nDisallow: /d\n\n\
                    User-agent: bota\nContent-Usage: /y train-ai=n\n";
        assert_eq!(prefs(file, "/x/1", "BotA/3.0").1, ["search=no@2"]);
        assert_eq!(prefs(file, "/y/1", "BotA").1, ["train-ai=no@9"]);
        assert_eq!(prefs(file, "/z", "BotA").1, Vec::<String>::new());
        assert_eq!(prefs(file, "/x/1", "Other").1, ["train-ai=no@5"]);
        // for verdicts BotA and * are one group, as before: BotA may not fetch /d
        assert!(!prefs(file, "/d", "BotA").0);
        assert!(!prefs(file, "/d", "Other").0);
        let signals = "User-agent: GPTBot\nContent-Signal: ai-train=no\n\n\
                       User-agent: *\nContent-Signal: ai-train=yes\n";
        assert_eq!(prefs(signals, "/", "GPTBot").2, ["ai-train=no@2"]);
        assert_eq!(prefs(signals, "/", "Other").2, ["ai-train=yes@5"]);
        // the choice is kept: asking twice, or with roles, answers the same
        let r = RobotsTxt::parse(file.as_bytes(), None, None);
        for _ in 0..2 {
            let u = r.usage(b"/x/1", "BotA", &[]).unwrap();
            assert_eq!(said(&u, 0), ["search=no@2"]);
        }
        let u = r.usage(b"/x/1", "BotA", &["indexer"]).unwrap();
        assert_eq!(said(&u, 0), ["search=no@2"]);
    }

    #[test]
    fn content_signals_are_read_beside_content_usage() {
        let file = "User-Agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n\
                    Content-Usage: train-ai=n\nContent-signal: /docs/ ai-input=yes\n";
        let (allowed, cu, cs) = prefs(file, "https://example.com/page", "anybot");
        assert!(allowed);
        assert_eq!(cu, ["train-ai=no@4"]);
        assert_eq!(cs, ["search=yes@2", "ai-train=no@2"]);
        assert_eq!(prefs(file, "/docs/a", "*").2, ["ai-input=yes@5"]);
    }

    #[test]
    fn paths_are_matched_as_the_profile_matches_rules() {
        let file = "User-agent: *\nContent-Usage: /*.pdf$ train-ai=n\n\
                    Content-Usage: /caf%C3%A9/ search=n\n";
        assert_eq!(prefs(file, "/x/a.pdf", "*").1, ["train-ai=no@2"]);
        assert_eq!(prefs(file, "/x/a.pdf?q", "*").1, Vec::<String>::new());
        assert_eq!(prefs(file, "/café/x", "*").1, ["search=no@3"]);
    }

    #[test]
    fn only_the_web_profiles_read_them() {
        let file = b"User-agent: *\nContent-Usage: train-ai=n\nContent-Signal: search=no\n";
        for profile in Profile::builtin() {
            let reads = profile.usage_preferences;
            let r = RobotsTxt::parse(file, Some(Arc::new(profile.clone())), None);
            let u = r.usage(b"/x", "*", &[]).unwrap();
            assert_eq!(u.read, reads, "{}", profile.name);
            let stated = u
                .vocabularies
                .iter()
                .flatten()
                .any(|p| p.0 != Pref::Unstated);
            assert_eq!(stated, reads, "{}", profile.name);
        }
        let names: Vec<String> = Profile::builtin()
            .into_iter()
            .filter(|p| p.usage_preferences)
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["rfc9309", "google"]);
        // by scheme: a gemini:// target is read under gemini
        let r = RobotsTxt::parse(file, None, None);
        let u = r.usage(b"gemini://h/x", "*", &[]).unwrap();
        assert!(!u.read && u.vocabularies[0][0].0 == Pref::Unstated);
        assert!(r.usage(b"no path", "*", &[]).is_err());
    }

    #[test]
    fn a_file_without_them_states_nothing() {
        let r = RobotsTxt::parse(
            b"User-agent: *\nDisallow: /a\nFoo: train-ai=n\n",
            None,
            None,
        );
        assert!(!r.table().usage);
        let u = r.usage(b"/b", "*", &[]).unwrap();
        assert!(u.allowed && u.read);
        assert_eq!(u.vocabularies[0].len(), AIPREF.categories.len());
        assert_eq!(u.vocabularies[1].len(), CONTENT_SIGNALS.categories.len());
        assert!(u
            .vocabularies
            .iter()
            .flatten()
            .all(|p| *p == (Pref::Unstated, None)));
        assert!(!r.usage(b"/a", "*", &[]).unwrap().allowed);
    }

    /// Usage lines change no verdict: each file decides as it does with them spelled as an
    /// unknown field, under every profile.
    #[test]
    fn usage_lines_change_no_verdict() {
        let lines: [&[u8]; 11] = [
            b"User-agent: *\n",
            b"User-agent: foobot\n",
            b"Virtual-agent: indexer\n",
            b"Disallow: /a\n",
            b"Allow: /a/b\n",
            b"Crawl-delay: 2\n",
            b"Content-Usage: train-ai=n\n",
            b"content-usage /a\n",
            b"Content-Signal: search=yes, ai-train=no\n",
            b"CONTENT-SIGNAL: /a/b ai-input=no\n",
            b"\n",
        ];
        let targets: [&[u8]; 5] = [b"/", b"/a", b"/a/b", b"gemini://h/a", b"gopher://h/0/a"];
        let profiles: Vec<Arc<Profile>> = Profile::builtin().into_iter().map(Arc::new).collect();
        for data in generated(0x51a7_e2d1_03c4_9f6b, 2_000, 10, &lines) {
            let unknown: Vec<u8> = String::from_utf8_lossy(&data)
                .replace("ontent-", "ontenx-")
                .replace("ONTENT-", "ONTENX-")
                .into_bytes();
            for profile in profiles.iter().map(Some).chain([None]) {
                let a = RobotsTxt::parse(&data, profile.cloned(), None);
                let b = RobotsTxt::parse(&unknown, profile.cloned(), None);
                for target in targets {
                    for (agent, roles) in [("*", &[][..]), ("foobot", &[]), ("*", &["indexer"])] {
                        assert_eq!(
                            a.decide(target, agent, roles),
                            b.decide(target, agent, roles),
                            "{:?}",
                            String::from_utf8_lossy(&data)
                        );
                        let u = a.usage(target, agent, roles).unwrap();
                        assert_eq!(u.allowed, a.allowed(target, agent, roles).unwrap());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod usage_speed {
    use super::*;

    /// `cargo test --release -- --ignored usage_speed --nocapture`: usage() on 2,000 rules.
    #[test]
    #[ignore]
    fn usage_speed() {
        let mut file = String::from("User-agent: *\n");
        for i in 0..2000 {
            file += &format!("Disallow: /p{i}/\n");
        }
        file += "Content-Usage: train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\nContent-Signal: search=yes, ai-train=no\n";
        let r = RobotsTxt::parse(file.as_bytes(), None, None);
        let n = 200_000;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            for _ in 0..n {
                std::hint::black_box(r.usage(b"/ai-ok/a", "*", &[]).unwrap());
            }
            let u = t.elapsed().as_nanos() as f64 / n as f64;
            let t = std::time::Instant::now();
            for _ in 0..n {
                std::hint::black_box(r.allowed(b"/ai-ok/a", "*", &[]).unwrap());
            }
            let a = t.elapsed().as_nanos() as f64 / n as f64;
            println!("usage {u:.0} ns, allowed {a:.0} ns");
        }
    }
}
