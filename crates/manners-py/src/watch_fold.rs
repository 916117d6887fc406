//! `manners._core.WatchFold`: the fold of `manners watch` (manners-core's `watch::fold`), for
//! `manners.watch.judge.Judge`.  Requests go in one at a time from Python (`--follow`, tests)
//! or, without Python, from the engine's log reading ([`PyWatchFold::fold_hit`]); the sums come
//! out once per report ([`PyWatchFold::export`]), as plain tuples Python makes the report of.

use std::borrow::Cow;
use std::collections::HashMap;

use manners_core::watch::fold::{
    self, client_of, Example, Fold, Grouping, Kind, Reading, Tally, Version, ROLES,
};
use manners_core::watch::Hit;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::PyRobots;

/// Text from Python as the fold reads it: UTF-8 (a lone surrogate, which no log reader
/// makes, replaced).
fn str_of<'a>(s: &'a Bound<'_, PyString>) -> Cow<'a, str> {
    match s.to_str() {
        Ok(v) => Cow::Borrowed(v),
        Err(_) => Cow::Owned(s.to_string_lossy().into_owned()),
    }
}

fn opt_str<'a>(s: &'a Option<Bound<'_, PyString>>) -> Option<Cow<'a, str>> {
    s.as_ref().map(str_of)
}

/// A scheme as the engine's Hit holds it (only which kind it is counts).
fn scheme_of(scheme: &str) -> &'static str {
    match scheme {
        "gemini" => "gemini",
        "gopher" => "gopher",
        "http" => "http",
        "https" => "https",
        "spartan" => "spartan",
        _ => "web",
    }
}

/// A version as Python gives it: its moment, that moment as shown, and the file read under
/// rfc9309, gemini and gopher.
type GivenVersion<'py> = (
    Option<f64>,
    Bound<'py, PyString>,
    Bound<'py, PyRobots>,
    Bound<'py, PyRobots>,
    Bound<'py, PyRobots>,
);

/// The per-request fold of `manners watch`, in the engine.
#[pyclass(module = "manners._core", name = "WatchFold")]
pub struct PyWatchFold {
    fold: Fold,
    /// Each version's moment as the report shows it.
    shown: Vec<Py<PyString>>,
    files: Vec<Py<PyString>>,
    file_ids: HashMap<String, u32>,
}

impl PyWatchFold {
    /// The fold itself, for the engine's log reading to feed.
    #[allow(dead_code)]
    pub fn fold_mut(&mut self) -> &mut Fold {
        &mut self.fold
    }

    /// The number examples name file `name` by.
    pub fn file_id(&mut self, py: Python<'_>, name: &str) -> u32 {
        if let Some(&id) = self.file_ids.get(name) {
            return id;
        }
        let id = self.files.len() as u32;
        self.files.push(PyString::new(py, name).unbind());
        self.file_ids.insert(name.to_string(), id);
        id
    }

    /// Take one request into account: line `line` of file `file` (a [`Self::file_id`]).
    pub fn fold_hit(&mut self, hit: &Hit<'_>, file: u32, line: u64) {
        self.fold.feed(hit, file, line);
    }

    fn examples<'py>(&self, py: Python<'py>, tally: &Tally) -> PyResult<Bound<'py, PyTuple>> {
        let made = self.fold.examples(tally).map(|e: Example<'_>| {
            (
                self.files[e.file as usize].clone_ref(py),
                e.line,
                e.target,
                e.when,
            )
                .into_pyobject(py)
        });
        PyTuple::new(py, made.collect::<PyResult<Vec<_>>>()?)
    }
}

#[pymethods]
impl PyWatchFold {
    #[classattr]
    const DAY: f64 = fold::DAY;
    #[classattr]
    const TOLERANCE: f64 = fold::TOLERANCE;
    #[classattr]
    const NEIGHBOURS: usize = fold::NEIGHBOURS;
    #[classattr]
    const SLOW_DOWN_WAIT: f64 = fold::SLOW_DOWN_WAIT;
    #[classattr]
    const EXAMPLES: usize = fold::EXAMPLES;
    #[classattr]
    const PERSON_SECONDS: f64 = fold::PERSON_SECONDS;

    /// The Gemini companion spec's virtual agents, in order.
    #[classattr]
    #[pyo3(name = "ROLES")]
    fn roles() -> (&'static str, &'static str, &'static str, &'static str) {
        (ROLES[0], ROLES[1], ROLES[2], ROLES[3])
    }

    /// More than this many requests within PERSON_SECONDS is no person's pace, by kind.
    #[classattr]
    #[pyo3(name = "PERSON_REQUESTS")]
    fn person_requests(py: Python<'_>) -> PyResult<Py<PyDict>> {
        let d = PyDict::new(py);
        for kind in [Kind::Gemini, Kind::Gopher, Kind::Web] {
            d.set_item(kind.name(), kind.person_requests())?;
        }
        Ok(d.unbind())
    }

    /// ``versions``: (since, since as shown, the file read under rfc9309, under gemini, under
    /// gopher) for each, in the order of ``Versions.items``.
    #[new]
    fn new(versions: Vec<GivenVersion<'_>>, v4: u8, v6: u8, slow_down_wait: f64) -> PyResult<Self> {
        if v4 > 32 || v6 > 128 {
            return Err(PyValueError::new_err(
                "prefix lengths are 0 to 32 and 0 to 128",
            ));
        }
        let mut shown: Vec<Py<PyString>> = Vec::with_capacity(versions.len());
        let mut made = Vec::with_capacity(versions.len());
        for (since, moment, web, gemini, gopher) in versions {
            let name = str_of(&moment).into_owned();
            let label = shown
                .iter()
                .position(|s| s.bind(moment.py()).to_string_lossy() == name)
                .unwrap_or(shown.len()) as u32;
            let read = |r: &Bound<'_, PyRobots>| {
                let r = r.get().robots();
                r.reread(r.profile().cloned())
            };
            made.push(Version {
                since,
                label,
                robots: [read(&web), read(&gemini), read(&gopher)],
            });
            shown.push(moment.unbind());
        }
        let dated: Vec<f64> = made.iter().filter_map(|v| v.since).collect();
        let undated = made.iter().take_while(|v| v.since.is_none()).count();
        if undated + dated.len() != made.len()
            || undated > 1
            || dated.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(PyValueError::new_err(
                "versions are given the undated one first, then by their moment",
            ));
        }
        Ok(PyWatchFold {
            fold: Fold::new(made, Grouping { v4, v6 }, slow_down_wait),
            shown,
            files: Vec::new(),
            file_ids: HashMap::new(),
        })
    }

    /// Take one request (a ``manners.watch.logs.Hit``'s fields) into account.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (when, client, scheme, host, target, status, agent, file, line))]
    fn feed(
        &mut self,
        py: Python<'_>,
        when: Option<f64>,
        client: Option<Bound<'_, PyString>>,
        scheme: Bound<'_, PyString>,
        host: Option<Bound<'_, PyString>>,
        target: Bound<'_, PyString>,
        status: Option<Bound<'_, PyString>>,
        agent: Option<Bound<'_, PyString>>,
        file: Bound<'_, PyString>,
        line: u64,
    ) {
        let file = match self.files.last() {
            Some(last) if last.is(&file) => self.files.len() as u32 - 1,
            _ => self.file_id(py, &str_of(&file)),
        };
        let status = opt_str(&status);
        let hit = Hit {
            when,
            client: opt_str(&client),
            scheme: scheme_of(&str_of(&scheme)),
            host: opt_str(&host),
            target: str_of(&target),
            status: status.as_deref(),
            agent: opt_str(&agent),
            size: None,
        };
        self.fold.feed(&hit, file, line);
    }

    /// The sums of every robot so far (a client that asked for robots.txt or outpaced a
    /// person), and of the others: ``(robots, other clients, their requests, requests without a
    /// client)``.  A robot is ``(client, token, kind, outpaced, requests, timed, first, last,
    /// robots_fetches, robots_first, stale, charged, unjudged, roles, breaches, hosts)``; a
    /// breach ``(rule, reading, line, version, requests, examples)`` in the order first made; a
    /// host ``(name, requests, asked, shortest, closer, closer examples, told, waited,
    /// ignored, ignored examples)`` in the order first asked; an example ``(file, line,
    /// target, when)``.
    fn export<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyList>, u64, u64, u64)> {
        let f = &self.fold;
        let robots = PyList::empty(py);
        let (mut others, mut others_requests) = (0u64, 0u64);
        for c in f.clients() {
            if c.robots_fetches == 0 && !c.outpaced {
                others += 1;
                others_requests += c.requests;
                continue;
            }
            let roles: Vec<&str> = (0..ROLES.len())
                .filter(|&i| c.roles & (1 << i) != 0)
                .map(|i| ROLES[i])
                .collect();
            let breaches = PyList::empty(py);
            for b in &c.breaches {
                let (rule, reading) = match b.reading {
                    Reading::Star => ("disallowed", "*"),
                    Reading::Token(t) => ("disallowed", f.token(t)),
                    Reading::Role(r) => ("role", ROLES[r as usize]),
                };
                breaches.append((
                    rule,
                    reading,
                    b.line,
                    self.shown[b.version as usize].clone_ref(py),
                    b.tally.requests,
                    self.examples(py, &b.tally)?,
                ))?;
            }
            let hosts = PyList::empty(py);
            for h in &c.hosts {
                hosts.append((
                    f.host(h.name),
                    h.requests,
                    h.asked,
                    h.shortest,
                    h.closer.requests,
                    self.examples(py, &h.closer)?,
                    h.told,
                    h.waited,
                    h.ignored.requests,
                    self.examples(py, &h.ignored)?,
                ))?;
            }
            let head = (
                f.address(c.address),
                c.token.map(|t| f.token(t)),
                c.kind.name(),
                c.outpaced,
                c.requests,
                c.timed,
                c.first,
                c.last,
            )
                .into_pyobject(py)?;
            let sums = (
                c.robots_fetches,
                c.robots_first,
                c.stale,
                c.charged,
                c.unjudged,
                PyTuple::new(py, roles)?,
                breaches,
                hosts,
            )
                .into_pyobject(py)?;
            robots.append(head.add(sums)?)?;
        }
        Ok((robots, others, others_requests, f.unattributed()))
    }
}

/// The client an address belongs to, grouped by prefix lengths ``v4`` and ``v6``.
#[pyfunction]
#[pyo3(name = "watch_client")]
fn client(address: Bound<'_, PyString>, v4: u8, v6: u8) -> String {
    client_of(&str_of(&address), Grouping { v4, v6 })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyWatchFold>()?;
    m.add_function(wrap_pyfunction!(client, m)?)
}
