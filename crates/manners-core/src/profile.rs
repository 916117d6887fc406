//! The named rule sets a file can be read under: data, not code, so the differences between
//! the Web, Gemini, Gopher and 1994 readings are all in one table.

/// How a target becomes what patterns are matched against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// RFC 9309: the URL's path and query, normalised per RFC 3986, and so are patterns.
    Rfc3986,
    /// Google's GetPathParamsQuery and MaybeEscapePattern.
    Google,
    /// Gopher: the selector, and for a URL also its typed form.
    Selector,
    /// 1994: as RFC 3986, but a pattern has no operators.
    Plain,
}

/// What rules before the first agent line mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Preamble {
    Ignored,
    /// Read as part of the `User-agent: *` group.
    Star,
    /// Applied to every robot.
    Everyone,
}

/// With roles, which groups decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Roles {
    /// The star, role and virtual-star groups together: a target must pass each.
    Combined,
    /// Only the most targeted of them.
    Targeted,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Profile {
    pub name: String,
    pub target: Target,
    /// `*` matches any run of characters.
    pub wildcards: bool,
    /// A final `$` anchors the pattern at the end.
    pub anchor: bool,
    /// Allow lines count.
    pub allow: bool,
    /// Google: `Allow: .../index.html` also allows `.../`.
    pub index_html: bool,
    /// Virtual-agent lines and robot roles.
    pub virtual_agents: bool,
    pub preamble: Preamble,
    /// Records as the 1994 standard has them: a blank line ends one, agents match by substring.
    pub records_1994: bool,
    /// Paths every robot may fetch whatever the rules say.
    pub always_allowed: Vec<Vec<u8>>,
    /// The caller's name is compared as given (Google), not by its product token.
    pub exact_agent: bool,
    /// Crawl-delay, Request-rate and Check lines end a run of agent lines, as a rule does.
    pub fields_end_groups: bool,
    pub roles: Roles,
    /// Content-Usage and Content-Signal lines are read (the attachment draft updates RFC
    /// 9309; Google's parser skips lines it does not know, so its verdicts are the same).
    /// Elsewhere they are lines outside the profile's reading.
    pub usage_preferences: bool,
}

impl Profile {
    fn base(name: &str, target: Target) -> Profile {
        Profile {
            name: name.to_string(),
            target,
            wildcards: true,
            anchor: true,
            allow: true,
            index_html: false,
            virtual_agents: false,
            preamble: Preamble::Ignored,
            records_1994: false,
            always_allowed: Vec::new(),
            exact_agent: false,
            fields_end_groups: true,
            roles: Roles::Combined,
            usage_preferences: false,
        }
    }

    pub fn rfc9309() -> Profile {
        Profile {
            always_allowed: vec![b"/robots.txt".to_vec()],
            usage_preferences: true,
            ..Profile::base("rfc9309", Target::Rfc3986)
        }
    }

    pub fn google() -> Profile {
        Profile {
            index_html: true,
            exact_agent: true,
            fields_end_groups: false,
            usage_preferences: true,
            ..Profile::base("google", Target::Google)
        }
    }

    pub fn gemini() -> Profile {
        Profile {
            virtual_agents: true,
            preamble: Preamble::Star,
            always_allowed: vec![b"/robots.txt".to_vec()],
            ..Profile::base("gemini", Target::Rfc3986)
        }
    }

    pub fn gemini_targeted() -> Profile {
        Profile {
            name: "gemini-targeted".to_string(),
            roles: Roles::Targeted,
            ..Profile::gemini()
        }
    }

    pub fn gopher() -> Profile {
        Profile {
            anchor: false,
            virtual_agents: true,
            preamble: Preamble::Everyone,
            always_allowed: vec![
                b"robots.txt".to_vec(),
                b"/robots.txt".to_vec(),
                b"0/robots.txt".to_vec(),
            ],
            ..Profile::base("gopher", Target::Selector)
        }
    }

    pub fn original() -> Profile {
        Profile {
            wildcards: false,
            anchor: false,
            allow: false,
            records_1994: true,
            ..Profile::base("1994", Target::Plain)
        }
    }

    /// Whether every robot may fetch `path`, whatever the rules say.
    pub fn always_allows(&self, path: &[u8]) -> bool {
        self.always_allowed.iter().any(|a| a == path)
    }

    /// Every built-in profile, in the order they are listed.
    pub fn builtin() -> Vec<Profile> {
        vec![
            Profile::rfc9309(),
            Profile::google(),
            Profile::gemini(),
            Profile::gemini_targeted(),
            Profile::gopher(),
            Profile::original(),
        ]
    }

    /// A built-in profile by name, case-insensitively.
    pub fn named(name: &str) -> Option<Profile> {
        Profile::builtin()
            .into_iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// The index of how this profile delimits groups: profiles alike in that share them.
    pub(crate) fn grouping(&self) -> usize {
        if self.records_1994 {
            4
        } else {
            usize::from(self.virtual_agents) * 2 + usize::from(self.fields_end_groups)
        }
    }
}

/// Which built-in profile reads a target when none was given: by URL scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Gemini,
    Gopher,
    Other,
}

pub fn scheme_of(target: &[u8]) -> Scheme {
    let head = &target[..target.len().min(9)];
    if head.len() == 9 && head.eq_ignore_ascii_case(b"gopher://") {
        Scheme::Gopher
    } else if head.len() == 9 && head.eq_ignore_ascii_case(b"gemini://") {
        Scheme::Gemini
    } else {
        Scheme::Other
    }
}
