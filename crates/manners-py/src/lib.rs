//! `manners._core`: the thin Python binding of manners-core.
//!
//! Conversions only: Python strings and bytes in, NamedTuples out.  What a file means is
//! decided in manners-core.  `RobotsTxt` and `parse` are the public API's own; the
//! NamedTuples they return, profiles found by name or URL, and the diagnostics are Python,
//! in `manners/robots.py`, which this calls back.
#![forbid(unsafe_code)]

mod watch_logs;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use manners_core::line::Kind;
use manners_core::profile::{Preamble, Roles, Target};
use manners_core::usage::Pref;
use manners_core::{smallnet, target, Profile, RobotsTxt};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyFrozenSet, PyInt, PyList, PySlice, PyString, PyTuple};

/// Every file is parsed, and first answered (groups chosen, rules read), with the GIL
/// released: threads parse in parallel, and even a small file's work outweighs giving the
/// GIL up and taking it back (two threads on the web corpus: 1.64x one, against 1.55x with
/// files under 256 bytes and 32 lines kept under the GIL).  Later answers, from an index,
/// are released only from this many lines, where the search outweighs it.
const RELEASE_GIL_LARGE: usize = 2048;

mod watch_fold;
mod watch_scan;

/// A profile's switches, as the engine reads them (built from a `manners.Profile`).
#[pyclass(frozen, module = "manners._core", name = "Profile")]
struct PyProfile {
    inner: Arc<Profile>,
}

#[pymethods]
impl PyProfile {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (name, target, wildcards, anchor, allow, index_html, virtual_agents, preamble, records, always_allowed, agent, fields_end_groups, roles, usage_preferences=false))]
    fn new(
        name: String,
        target: &str,
        wildcards: bool,
        anchor: bool,
        allow: bool,
        index_html: bool,
        virtual_agents: bool,
        preamble: &str,
        records: &str,
        always_allowed: Vec<String>,
        agent: &str,
        fields_end_groups: bool,
        roles: &str,
        usage_preferences: bool,
    ) -> PyResult<Self> {
        let bad = |what: &str, v: &str| PyValueError::new_err(format!("unknown {what} {v:?}"));
        let inner = Profile {
            name,
            target: match target {
                "rfc3986" => Target::Rfc3986,
                "google" => Target::Google,
                "selector" => Target::Selector,
                "plain" => Target::Plain,
                _ => return Err(bad("target", target)),
            },
            wildcards,
            anchor,
            allow,
            index_html,
            virtual_agents,
            preamble: match preamble {
                "ignored" => Preamble::Ignored,
                "star" => Preamble::Star,
                "everyone" => Preamble::Everyone,
                _ => return Err(bad("preamble", preamble)),
            },
            records_1994: match records {
                "groups" => false,
                "1994" => true,
                _ => return Err(bad("records", records)),
            },
            always_allowed: always_allowed.into_iter().map(String::into_bytes).collect(),
            exact_agent: match agent {
                "token" => false,
                "exact" => true,
                _ => return Err(bad("agent", agent)),
            },
            fields_end_groups,
            roles: match roles {
                "combined" => Roles::Combined,
                "targeted" => Roles::Targeted,
                _ => return Err(bad("roles", roles)),
            },
            usage_preferences,
        };
        Ok(PyProfile {
            inner: Arc::new(inner),
        })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
}

/// A parsed robots.txt.  Build it with :func:`manners.parse`.
///
/// ``allowed(target, agent="*", roles=())`` and ``decide(...)`` answer in the engine;
/// immutable, so one parsed file may serve many threads.
#[pyclass(subclass, frozen, module = "manners", name = "RobotsTxt")]
struct PyRobots {
    inner: Option<RobotsTxt>,
    /// The `manners.Profile` given to parse(), returned as it was given.
    profile: Option<Py<PyAny>>,
    /// Answered before: the next answers come from indexes.
    answered: AtomicBool,
    /// The Usage objects given before, by what the engine said: a file states few distinct
    /// preferences, and a NamedTuple of tuples costs more to build than the engine's answer.
    usages: Mutex<HashMap<UsageKey, Py<PyAny>>>,
}

/// What makes two Usage answers the same object: allowed, the profile, every preference.
type UsageKey = (bool, String, Vec<Vec<(Pref, Option<u32>)>>);

/// At most this many Usage objects kept per file; past it the cache starts again.
const USAGES_KEPT: usize = 256;

thread_local! {
    /// Files whose objects this thread freed while it held the GIL, freed in turn the next
    /// time it lets the GIL go: no thread waits for the GIL while another frees memory.
    static FREED: RefCell<Vec<RobotsTxt>> = const { RefCell::new(Vec::new()) };
}

/// At most this many files wait to be freed, each with a line table of at most FREED_BYTES
/// (what a file holds grows with it, and its size is read without a walk or a lock); any
/// other is freed at once (its parse cost far more).
const FREED_KEPT: usize = 16;
const FREED_BYTES: usize = 64 << 10;

impl Drop for PyRobots {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        if inner.table().heap_size() > FREED_BYTES {
            return;
        }
        FREED.with(|freed| match freed.try_borrow_mut() {
            Ok(mut freed) if freed.len() < FREED_KEPT => freed.push(inner),
            _ => drop(inner),
        });
    }
}

/// `work` with the GIL released, freeing on the way the files this thread let go of.
fn without_gil<T: Send>(py: Python<'_>, work: impl FnOnce() -> T + Send) -> T {
    py.detach(|| {
        FREED.with(|freed| freed.try_borrow_mut().map(|mut f| f.clear()).ok());
        work()
    })
}

impl PyRobots {
    /// Whether this question is worth releasing the GIL for: a first one always is.
    fn heavy(&self) -> bool {
        // read before writing: threads sharing a file do not fight over the flag's cache line
        let first =
            !self.answered.load(Ordering::Relaxed) && !self.answered.swap(true, Ordering::Relaxed);
        first || self.robots().table().len() >= RELEASE_GIL_LARGE
    }

    /// One question about a target, asked of the engine with the GIL released when it is
    /// worth it; a target that names no path is a ValueError.
    fn answer<T: Send>(
        &self,
        py: Python<'_>,
        target: &Bound<'_, PyAny>,
        agent: &Agent<'_>,
        roles: Option<&Bound<'_, PyAny>>,
        ask: impl FnOnce(&RobotsTxt, &[u8], &str, &[&str]) -> Result<T, target::NotAPath> + Send,
    ) -> PyResult<T> {
        let t = target_bytes(target)?;
        let agent = agent.name();
        let roles = role_names(roles)?;
        let roles = as_strs(&roles);
        let answer = if self.heavy() {
            without_gil(py, || ask(self.robots(), &t, &agent, &roles))
        } else {
            ask(self.robots(), &t, &agent, &roles)
        };
        answer.map_err(|_| not_a_path(target))
    }
}

/// A str as UTF-8, its undecodable bytes (surrogate escapes) given back as the bytes they were.
fn str_bytes<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    match s.to_str() {
        Ok(v) => Ok(Cow::Borrowed(v.as_bytes())),
        Err(_) => {
            let encoded = s
                .call_method1("encode", ("utf-8", "surrogateescape"))
                .or_else(|_| s.call_method1("encode", ("utf-8", "surrogatepass")))?;
            Ok(Cow::Owned(
                encoded.downcast::<PyBytes>()?.as_bytes().to_vec(),
            ))
        }
    }
}

fn text<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyString> {
    match std::str::from_utf8(b) {
        Ok(s) => PyString::new(py, s),
        Err(_) => {
            let decoded = PyBytes::new(py, b).call_method1("decode", ("utf-8", "surrogateescape"));
            match decoded.and_then(|d| d.downcast_into::<PyString>().map_err(Into::into)) {
                Ok(s) => s,
                Err(_) => PyString::new(py, &String::from_utf8_lossy(b)),
            }
        }
    }
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".into())
}

fn target_bytes<'a>(target: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    match target.downcast::<PyString>() {
        Ok(s) => str_bytes(s),
        Err(_) => Err(PyTypeError::new_err(format!(
            "target must be a URL or a path (str), not {}",
            type_name(target)
        ))),
    }
}

fn agent_str<'a>(agent: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, str>> {
    match agent.downcast::<PyString>() {
        Ok(s) => Ok(s
            .to_str()
            .map(Cow::Borrowed)
            .unwrap_or_else(|_| Cow::Owned(s.to_string_lossy().into_owned()))),
        Err(_) => Err(PyTypeError::new_err(format!(
            "agent must be a str (a robot's name such as 'mybot'), not {}",
            type_name(agent)
        ))),
    }
}

/// A robot's name argument, "*" when not given; anything but a str is a TypeError.
struct Agent<'py>(Option<Bound<'py, PyString>>);

impl<'py> FromPyObject<'py> for Agent<'py> {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        agent_str(ob)?;
        Ok(Agent(Some(ob.downcast::<PyString>()?.clone())))
    }
}

impl Agent<'_> {
    fn name(&self) -> Cow<'_, str> {
        match &self.0 {
            None => Cow::Borrowed("*"),
            Some(s) => s
                .to_str()
                .map(Cow::Borrowed)
                .unwrap_or_else(|_| Cow::Owned(s.to_string_lossy().into_owned())),
        }
    }
}

/// Roles as names: a lone string is one role, not a run of letters; None is no role.
fn role_names(roles: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(roles) = roles else {
        return Ok(Vec::new());
    };
    if roles.is_none() {
        return Ok(Vec::new());
    }
    if let Ok(s) = roles.downcast::<PyString>() {
        return Ok(vec![s.to_string_lossy().into_owned()]);
    }
    if let Ok(t) = roles.downcast::<PyTuple>() {
        if t.is_empty() {
            return Ok(Vec::new());
        }
    }
    let bad = || PyTypeError::new_err("roles must be names such as 'indexer' or 'archiver' (str)");
    let mut out = Vec::new();
    for r in roles.try_iter().map_err(|_| bad())? {
        let r = r?;
        let s = r.downcast::<PyString>().map_err(|_| bad())?;
        out.push(s.to_string_lossy().into_owned());
    }
    Ok(out)
}

fn as_strs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

fn not_a_path(target: &Bound<'_, PyAny>) -> PyErr {
    let shown = target
        .get_item(PySlice::new(target.py(), 0, 80, 1))
        .and_then(|s| s.repr())
        .map(|r| r.to_string())
        .unwrap_or_default();
    PyValueError::new_err(format!(
        "{shown} is neither a URL (scheme://host/path) nor a path starting with '/'"
    ))
}

fn decision_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static DECISION: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    DECISION.import(py, "manners.robots", "Decision")
}

/// A vocabulary's categories each unstated (as Preferences), and the tuple of them all.
type Unstated = (Vec<Py<PyAny>>, Py<PyTuple>);

/// `tuple.__new__`: what a NamedTuple's own `__new__` does, without its Python frame.
fn tuple_new(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static TUPLE_NEW: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    TUPLE_NEW
        .get_or_try_init(py, || {
            PyResult::Ok(py.get_type::<PyTuple>().getattr("__new__")?.unbind())
        })
        .map(|new| new.bind(py))
}

/// A body (bytes, str, bytearray or memoryview) read under `core`, with the GIL released.
fn read(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    core: Option<Arc<Profile>>,
    max_bytes: Option<usize>,
) -> PyResult<RobotsTxt> {
    // text Python holds as UTF-8 is read as text: it needs no check
    let copied: Bound<'_, PyBytes>;
    let (text, bytes): (Option<&str>, Cow<'_, [u8]>) = if let Ok(b) = data.downcast::<PyBytes>() {
        (None, Cow::Borrowed(b.as_bytes()))
    } else if let Ok(s) = data.downcast::<PyString>() {
        match s.to_str() {
            Ok(t) => (Some(t), Cow::Borrowed(t.as_bytes())),
            Err(_) => (None, str_bytes(s)?),
        }
    } else if data.is_instance_of::<pyo3::types::PyByteArray>()
        || data.is_instance_of::<pyo3::types::PyMemoryView>()
    {
        copied = py.get_type::<PyBytes>().call1((data,))?.downcast_into()?;
        (None, Cow::Borrowed(copied.as_bytes()))
    } else {
        return Err(PyTypeError::new_err(format!(
            "robots.txt must be bytes or str, not {}",
            type_name(data)
        )));
    };
    let parse = || match text {
        Some(t) => RobotsTxt::parse_text(t, core, max_bytes),
        None => RobotsTxt::parse(&bytes, core, max_bytes),
    };
    Ok(without_gil(py, parse))
}

/// A function of `manners.robots`, where profiles are looked up and the NamedTuples live.
fn robots_py<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    name: &str,
) -> PyResult<&'py Bound<'py, PyAny>> {
    cell.import(py, "manners.robots", name)
}

/// A profile (a name or a `manners.Profile`) and the engine's form of it, as a pair.
fn profile_pair<'py>(py: Python<'py>, profile: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    static PAIR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    robots_py(py, &PAIR, "_profile_pair")?.call1((profile,))
}

fn unpair(pair: &Bound<'_, PyAny>) -> PyResult<(Py<PyAny>, Arc<Profile>)> {
    let (prof, core): (Py<PyAny>, Bound<'_, PyProfile>) = pair.extract()?;
    Ok((prof, Arc::clone(&core.get().inner)))
}

/// The engine's form of a profile given by name, by URL (its scheme's) or as a Profile.
fn named(py: Python<'_>, profile: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<Profile>>> {
    static NAMED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    match profile.filter(|p| !p.is_none()) {
        None => Ok(None),
        Some(p) => {
            let core = robots_py(py, &NAMED, "_named")?.call1((p,))?;
            Ok(Some(Arc::clone(&core.downcast::<PyProfile>()?.get().inner)))
        }
    }
}

/// A profile's name, the profile, and the engine's form of it.
type Named = (Py<PyString>, Py<PyAny>, Arc<Profile>);

thread_local! {
    /// Profiles given by name, as this thread looked them up: a one-shot caller parses many
    /// small files under one name, written once in its code, so found here by identity.
    static BY_NAME: RefCell<Vec<Named>> = const { RefCell::new(Vec::new()) };
}

/// A profile given by name, and the engine's form of it.
fn by_name(py: Python<'_>, name: &Bound<'_, PyString>) -> PyResult<(Py<PyAny>, Arc<Profile>)> {
    let known = BY_NAME.with(|names| {
        let names = names.borrow();
        let same = |n: &Py<PyString>| {
            n.is(name) || matches!((n.bind(py).to_str(), name.to_str()), (Ok(a), Ok(b)) if a == b)
        };
        let found = names.iter().find(|(n, ..)| same(n));
        found.map(|(_, prof, core)| (prof.clone_ref(py), Arc::clone(core)))
    });
    if let Some(known) = known {
        return Ok(known);
    }
    let (prof, core) = unpair(&profile_pair(py, name)?)?;
    BY_NAME.with(|names| {
        let mut names = names.borrow_mut();
        if names.len() < 16 {
            names.push((name.clone().unbind(), prof.clone_ref(py), Arc::clone(&core)));
        }
    });
    Ok((prof, core))
}

/// `max_bytes`: a positive int, or None for no cap.
struct MaxBytes(Option<usize>);

impl<'py> FromPyObject<'py> for MaxBytes {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        if ob.is_none() {
            return Ok(MaxBytes(None));
        }
        let bad = || PyValueError::new_err("max_bytes must be a positive number of bytes, or None");
        if !ob.is_exact_instance_of::<PyInt>() {
            return Err(bad());
        }
        match ob.extract::<u64>() {
            Ok(0) => Err(bad()),
            Ok(n) => Ok(MaxBytes(Some(usize::try_from(n).unwrap_or(usize::MAX)))),
            // more than any file: no cap; below zero: no size at all
            Err(_) if ob.gt(0)? => Ok(MaxBytes(Some(usize::MAX))),
            Err(_) => Err(bad()),
        }
    }
}

/// Parse a robots.txt body.  Never raises on content: anything at all parses.
///
/// ``profile`` fixes how every question is answered; left as None, each target is read
/// under the default for its scheme (gemini://, gopher://, else rfc9309).  Only the first
/// ``max_bytes`` are read (None: all).
#[pyfunction]
#[pyo3(
    signature = (data, profile=None, max_bytes=MaxBytes(Some(512_000))),
    text_signature = "(data, profile=None, max_bytes=512000)"
)]
fn parse(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    profile: Option<&Bound<'_, PyAny>>,
    max_bytes: MaxBytes,
) -> PyResult<PyRobots> {
    let pair = match profile.filter(|p| !p.is_none()) {
        None => None,
        Some(p) => match p.downcast_exact::<PyString>() {
            Ok(name) => Some(by_name(py, name)?),
            Err(_) => Some(unpair(&profile_pair(py, p)?)?),
        },
    };
    let (profile, core) = pair.unzip();
    Ok(PyRobots::made(read(py, data, core, max_bytes.0)?, profile))
}

impl PyRobots {
    /// The file (it is only taken away as its object is freed).
    fn robots(&self) -> &RobotsTxt {
        static EMPTY: OnceLock<RobotsTxt> = OnceLock::new();
        self.inner
            .as_ref()
            .unwrap_or_else(|| EMPTY.get_or_init(|| RobotsTxt::parse(b"", None, None)))
    }

    /// A Usage given before for the same answer (see `usages`).
    fn kept_usage(&self, py: Python<'_>, key: &UsageKey) -> Option<Py<PyAny>> {
        let kept = self.usages.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(key).map(|u| u.clone_ref(py))
    }

    fn made(inner: RobotsTxt, profile: Option<Py<PyAny>>) -> PyRobots {
        PyRobots {
            inner: Some(inner),
            profile,
            answered: Default::default(),
            usages: Default::default(),
        }
    }

    /// The profile questions without one are answered under: the one given to parse(),
    /// else rfc9309; or the one `profile` names.
    fn chosen<'py>(
        slf: &Bound<'py, Self>,
        profile: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyProfile>> {
        static CHOSEN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let chosen = robots_py(slf.py(), &CHOSEN, "_chosen")?.call1((slf, profile))?;
        Ok(chosen.downcast_into::<PyProfile>()?)
    }

    /// A field question's roles, and the profile it is answered under.
    fn field_question(
        &self,
        py: Python<'_>,
        roles: Option<&Bound<'_, PyAny>>,
        profile: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Vec<String>, Arc<Profile>)> {
        let roles = role_names(roles)?;
        let profile = match named(py, profile)? {
            Some(p) => p,
            None => Arc::clone(self.robots().fields_profile(!roles.is_empty())),
        };
        Ok((roles, profile))
    }
}

#[pymethods]
impl PyRobots {
    #[new]
    #[pyo3(signature = (data, profile=None, core=None, max_bytes=None))]
    fn new(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        profile: Option<Py<PyAny>>,
        core: Option<&Bound<'_, PyProfile>>,
        max_bytes: Option<usize>,
    ) -> PyResult<Self> {
        let core = core.map(|c| Arc::clone(&c.get().inner));
        let profile = profile.filter(|p| !p.is_none(py));
        let inner = match data.downcast::<PyRobots>() {
            Ok(other) => other.get().robots().reread(core),
            Err(_) => read(py, data, core, max_bytes)?,
        };
        Ok(PyRobots::made(inner, profile))
    }

    /// The profile given to parse(); None means: chosen by each target's scheme.
    #[getter]
    fn profile(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.profile.as_ref().map(|p| p.clone_ref(py))
    }

    /// May `agent` (acting as `roles`) fetch `target`?
    #[pyo3(signature = (target, agent=Agent(None), roles=None), text_signature = "(self, /, target, agent='*', roles=None)")]
    fn allowed(
        &self,
        py: Python<'_>,
        target: &Bound<'_, PyAny>,
        agent: Agent<'_>,
        roles: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.answer(py, target, &agent, roles, |r, t, a, roles| {
            r.allowed(t, a, roles)
        })
    }

    /// Like allowed(), with the deciding rule, its line and the reason.
    #[pyo3(signature = (target, agent=Agent(None), roles=None), text_signature = "(self, /, target, agent='*', roles=None)")]
    fn decide<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        agent: Agent<'py>,
        roles: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let d = self.answer(py, target, &agent, roles, |r, t, a, roles| {
            r.decide(t, a, roles)
        })?;
        let rule = match d.rule {
            Some((allow, value)) => {
                let prefix = PyString::new(py, if allow { "Allow: " } else { "Disallow: " });
                Some(prefix.add(text(py, &value))?)
            }
            None => None,
        };
        // `tuple.__new__(Decision, fields)`: what the NamedTuple's own `__new__` does, without
        // its Python frame (a tenth of a call, for explain's hundred thousand decisions)
        let fields = (d.allowed, d.line, rule, d.reason, d.profile).into_pyobject(py)?;
        tuple_new(py)?.call1((decision_class(py)?, fields))
    }

    /// The usage preferences for what this robot fetches from `target`, as a Usage: for each
    /// category of Content-Usage (draft-ietf-aipref-vocab-08) and of Content-Signal
    /// (draft-romm-aipref-contentsignals-00), yes, no or unstated, with the line that says it.
    #[pyo3(signature = (target, agent=Agent(None), roles=None), text_signature = "(self, /, target, agent='*', roles=None)")]
    fn usage<'py>(
        &self,
        py: Python<'py>,
        target: &Bound<'py, PyAny>,
        agent: Agent<'py>,
        roles: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        static USAGE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        static PREFERENCE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        // per vocabulary: each category unstated, and the tuple of them all, made once
        static UNSTATED: PyOnceLock<Vec<Unstated>> = PyOnceLock::new();
        let u = self.answer(py, target, &agent, roles, |r, t, a, roles| {
            r.usage(t, a, roles)
        })?;
        let key: UsageKey = (u.allowed, u.profile, u.vocabularies);
        if let Some(kept) = self.kept_usage(py, &key) {
            return Ok(kept.into_bound(py));
        }
        let (allowed, profile, vocabularies) = &key;
        let new = tuple_new(py)?;
        let preference = robots_py(py, &PREFERENCE, "Preference")?;
        let pref = |label: &str, value: &str, line: Option<u32>| {
            let fields = (
                PyString::intern(py, label),
                PyString::intern(py, value),
                line,
            );
            new.call1((preference, fields))
        };
        let unstated = UNSTATED.get_or_try_init(py, || {
            manners_core::usage::VOCABULARIES
                .iter()
                .map(|v| {
                    let prefs = v
                        .categories
                        .iter()
                        .map(|c| Ok(pref(c.label, "unstated", None)?.unbind()))
                        .collect::<PyResult<Vec<_>>>()?;
                    let all = PyTuple::new(py, &prefs)?.unbind();
                    Ok((prefs, all))
                })
                .collect::<PyResult<Vec<_>>>()
        })?;
        let mut parts = Vec::with_capacity(2);
        for ((vocabulary, said), (each, all)) in manners_core::usage::VOCABULARIES
            .iter()
            .zip(vocabularies)
            .zip(unstated)
        {
            if said.iter().all(|(p, _)| *p == Pref::Unstated) {
                parts.push(all.bind(py).clone());
                continue;
            }
            let prefs = vocabulary
                .categories
                .iter()
                .zip(said)
                .zip(each)
                .map(|((c, (p, line)), none)| match p {
                    Pref::Unstated => Ok(none.bind(py).clone()),
                    _ => pref(c.label, p.name(), *line),
                })
                .collect::<PyResult<Vec<_>>>()?;
            parts.push(PyTuple::new(py, prefs)?);
        }
        let [categories, signals]: [Bound<'py, PyTuple>; 2] = parts
            .try_into()
            .map_err(|_| PyValueError::new_err("two vocabularies"))?;
        let usage = robots_py(py, &USAGE, "Usage")?;
        let made = new.call1((usage, (*allowed, categories, signals, profile.as_str())))?;
        let mut kept = self.usages.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= USAGES_KEPT {
            kept.clear();
        }
        kept.insert(key, made.clone().unbind());
        Ok(made)
    }

    /// Seconds between requests asked of this robot (the largest that applies).
    ///
    /// ``profile``: a profile name, or a URL whose scheme picks it, as a target's does; by
    /// default the profile given to parse(), else gemini for a robot with roles, else rfc9309.
    #[pyo3(
        signature = (agent=Agent(None), roles=None, *, profile=None),
        text_signature = "(self, /, agent='*', roles=(), *, profile=None)"
    )]
    fn crawl_delay(
        &self,
        py: Python<'_>,
        agent: Agent<'_>,
        roles: Option<&Bound<'_, PyAny>>,
        profile: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<f64>> {
        let (roles, profile) = self.field_question(py, roles, profile)?;
        Ok(self
            .robots()
            .crawl_delay(&agent.name(), &as_strs(&roles), &profile))
    }

    /// The Request-rate asked of this robot, as a RequestRate (its window of the day with it,
    /// if it has one): with `at` (a datetime, or a time of day in UTC), the slowest of those
    /// that apply then; without, the slowest of all.
    #[pyo3(
        signature = (agent=Agent(None), roles=None, *, profile=None, at=None),
        text_signature = "(self, /, agent='*', roles=(), *, profile=None, at=None)"
    )]
    fn request_rate<'py>(
        &self,
        py: Python<'py>,
        agent: Agent<'py>,
        roles: Option<&Bound<'py, PyAny>>,
        profile: Option<&Bound<'py, PyAny>>,
        at: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (roles, profile) = self.field_question(py, roles, profile)?;
        let minute = at.map(minute_of_day).transpose()?;
        self.robots()
            .request_rate(&agent.name(), &as_strs(&roles), &profile, minute)
            .map(|r| request_rate(py, r))
            .transpose()
    }

    /// Seconds between re-checks of a resource, from the Gemini proposal's Check field.
    #[pyo3(
        signature = (agent=Agent(None), roles=None, *, profile=None),
        text_signature = "(self, /, agent='*', roles=(), *, profile=None)"
    )]
    fn check_interval(
        &self,
        py: Python<'_>,
        agent: Agent<'_>,
        roles: Option<&Bound<'_, PyAny>>,
        profile: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<f64>> {
        let (roles, profile) = self.field_question(py, roles, profile)?;
        Ok(self
            .robots()
            .check_interval(&agent.name(), &as_strs(&roles), &profile))
    }

    /// Sitemap URLs from anywhere in the file, in order, without repeats.
    #[getter]
    fn sitemaps<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.robots().sitemaps().into_iter().map(|s| text(py, s)),
        )
    }

    /// Every key/value line, numbered and classified.
    fn lines<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        static LINE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let line = robots_py(py, &LINE, "Line")?;
        let t = self.robots().table();
        let rows = (0..t.len())
            .map(|i| t.line(i))
            .filter(|l| l.kind != Kind::Unparsable)
            .map(|l| line.call1((l.number, l.kind.name(), text(py, l.key), text(py, l.value))))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows)
    }

    /// (line, severity, code, message) for everything a reader may trip on.
    #[getter]
    fn diagnostics<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        static DIAGNOSE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        robots_py(slf.py(), &DIAGNOSE, "_diagnostics")?.call1((slf,))
    }

    /// The same file under another profile, sharing what was read.
    fn reread(&self, py: Python<'_>, profile: &Bound<'_, PyAny>) -> PyResult<PyRobots> {
        let (profile, core) = unpair(&profile_pair(py, profile)?)?;
        Ok(PyRobots::made(
            self.robots().reread(Some(core)),
            Some(profile),
        ))
    }

    /// What diagnostics read: every kept line with its missing colon, and what preparing did.
    fn _table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let t = self.robots().table();
        let rows = PyList::new(
            py,
            (0..t.len()).map(|i| t.line(i)).map(|l| {
                (
                    l.number,
                    l.kind.name(),
                    text(py, l.key),
                    text(py, l.value),
                    l.missing_colon,
                )
            }),
        )?;
        (
            rows,
            t.truncated_at.map(|at| (at, t.truncated_line)),
            t.invalid_utf8,
            t.bom,
            t.long_lines.clone(),
            t.control_lines.clone(),
            t.binary,
            t.html,
            t.n_lines,
        )
            .into_pyobject(py)
    }

    /// The groups (records, for 1994) as a profile delimits them.
    #[pyo3(signature = (profile=None))]
    fn groups<'py>(
        slf: &Bound<'py, Self>,
        profile: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        static GROUP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let py = slf.py();
        let group = robots_py(py, &GROUP, "Group")?;
        let core = PyRobots::chosen(slf, profile)?;
        let core = &core.get().inner;
        let robots = slf.get().robots();
        let t = robots.table();
        let grouping = robots.groups(core);
        let mut out = Vec::with_capacity(grouping.groups.len());
        for g in &grouping.groups {
            let lines_of = |kind: Kind| -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(
                    py,
                    grouping
                        .members(g)
                        .filter(|&i| t.kind(i) == kind)
                        .map(|i| (t.number(i), text(py, t.value(i))))
                        .collect::<Vec<_>>(),
                )
            };
            let set = |kind: Kind| -> PyResult<Bound<'py, PyFrozenSet>> {
                let names = robots.group_names(grouping, g, kind, core.records_1994);
                PyFrozenSet::new(py, names.iter().map(|n| text(py, n)))
            };
            out.push(group.call1((
                lines_of(Kind::UserAgent)?,
                lines_of(Kind::VirtualAgent)?,
                set(Kind::UserAgent)?,
                set(Kind::VirtualAgent)?,
                g.lines,
            ))?);
        }
        PyList::new(py, out)
    }

    /// Whose rules decide for this robot: (who, [(first line, last line), ...]) in order of
    /// choice (all of them count: a target must pass each), and the reason when nobody's do.
    #[pyo3(
        signature = (agent=Agent(None), roles=None, profile=None),
        text_signature = "(self, /, agent='*', roles=(), profile=None)"
    )]
    fn applies<'py>(
        slf: &Bound<'py, Self>,
        agent: Agent<'py>,
        roles: Option<&Bound<'py, PyAny>>,
        profile: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyList>, &'static str)> {
        let core = PyRobots::chosen(slf, profile)?;
        let roles = role_names(roles)?;
        let policy = slf
            .get()
            .robots()
            .policy(&core.get().inner, &agent.name(), &as_strs(&roles));
        let rows = policy.choices.iter().map(|c| {
            (
                c.label.to_string(),
                c.groups.iter().map(|g| g.1).collect::<Vec<_>>(),
            )
        });
        Ok((PyList::new(slf.py(), rows)?, policy.reason))
    }

    fn __sizeof__(&self) -> usize {
        std::mem::size_of::<PyRobots>() + 16 + self.robots().heap_size()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let name = match &self.profile {
            Some(p) => p.bind(py).getattr("name")?.to_string(),
            None => "auto".to_string(),
        };
        Ok(format!(
            "<RobotsTxt profile={name} lines={}>",
            self.robots().table().n_lines
        ))
    }
}

/// The lower-cased product token a caller's name stands for; "*" for the star; None when the
/// name leads with no valid token.
#[pyfunction]
fn product_token(agent: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    Ok(manners_core::agents::product_token(&agent_str(agent)?).map(Cow::into_owned))
}

/// The token a file's agent line names: "*", or its leading [A-Za-z_-] run, lower-cased.
#[pyfunction]
fn agent_token(py: Python<'_>, value: &Bound<'_, PyString>) -> PyResult<Py<PyString>> {
    Ok(text(py, &manners_core::agents::agent_token(&str_bytes(value)?)).unbind())
}

/// The path a profile's target reading matches: for tests and tools that show it.
#[pyfunction]
fn url_path(py: Python<'_>, target: &Bound<'_, PyString>) -> PyResult<Py<PyString>> {
    let any = target.as_any();
    let b = str_bytes(target)?;
    match target::url_path(&b) {
        Ok(p) => Ok(text(py, &p).unbind()),
        Err(_) => Err(not_a_path(any)),
    }
}

#[pyfunction]
#[pyo3(signature = (s, *, pattern))]
fn normalise(py: Python<'_>, s: &Bound<'_, PyString>, pattern: bool) -> PyResult<Py<PyString>> {
    Ok(text(py, &target::normalise(&str_bytes(s)?, pattern)).unbind())
}

#[pyfunction]
fn google_escape(py: Python<'_>, s: &Bound<'_, PyString>) -> PyResult<Py<PyString>> {
    Ok(text(py, &target::google_escape(&str_bytes(s)?)).unbind())
}

#[pyfunction]
fn google_path(py: Python<'_>, s: &Bound<'_, PyString>) -> PyResult<Py<PyString>> {
    Ok(text(py, &target::google_path(&str_bytes(s)?)).unbind())
}

#[pyfunction]
fn gopher_selectors<'py>(
    py: Python<'py>,
    s: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyTuple>> {
    let b = str_bytes(s)?;
    let (first, second) = target::gopher_selectors(&b);
    PyTuple::new(
        py,
        std::iter::once(first)
            .chain(second)
            .map(|p| text(py, &p))
            .collect::<Vec<_>>(),
    )
}

/// A Request-rate value read as a RequestRate, or None when it is not one.
#[pyfunction]
fn rate<'py>(value: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    manners_core::fields::rate(&str_bytes(value)?)
        .map(|r| request_rate(value.py(), r))
        .transpose()
}

/// Seconds between requests `robots` asks of this robot (`manners.asked_spacing`): the
/// larger of its Crawl-delay and of the Request-rate in force `at`.
#[pyfunction]
#[pyo3(signature = (robots, agent, roles, profile, at))]
fn asked_spacing(
    robots: &Bound<'_, PyRobots>,
    agent: Agent<'_>,
    roles: Option<&Bound<'_, PyAny>>,
    profile: Option<&Bound<'_, PyAny>>,
    at: &Bound<'_, PyAny>,
) -> PyResult<f64> {
    let r = robots.get();
    let (roles, profile) = r.field_question(robots.py(), roles, profile)?;
    let minute = minute_of_day(at)?;
    Ok(r.robots()
        .asked_spacing(&agent.name(), &as_strs(&roles), &profile, Some(minute)))
}

/// A rate as Python sees it: `manners.robots.RequestRate`, its window as `datetime.time`s.
fn request_rate(py: Python<'_>, r: manners_core::fields::Rate) -> PyResult<Bound<'_, PyAny>> {
    static CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static TIME: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let (start, end) = match r.window {
        Some((start, end)) => {
            let time = TIME.import(py, "datetime", "time")?;
            (
                Some(time.call1((start / 60, start % 60))?),
                Some(time.call1((end / 60, end % 60))?),
            )
        }
        None => (None, None),
    };
    CLASS
        .import(py, "manners.robots", "RequestRate")?
        .call1((r.requests, r.seconds, start, end))
}

/// The minute of the day, in UTC, of a datetime (an aware one converted; a naive one, or a
/// time of day, taken as UTC).
fn minute_of_day(at: &Bound<'_, PyAny>) -> PyResult<u16> {
    static TIMEZONE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let aware = at.hasattr("astimezone")? && !at.getattr("tzinfo")?.is_none();
    let at = if aware {
        let utc = TIMEZONE
            .import(at.py(), "datetime", "timezone")?
            .getattr("utc")?;
        at.call_method1("astimezone", (utc,))?
    } else {
        at.clone()
    };
    let (hour, minute) = (at.getattr("hour"), at.getattr("minute"));
    match (
        hour.and_then(|h| h.extract::<u16>()),
        minute.and_then(|m| m.extract::<u16>()),
    ) {
        (Ok(h), Ok(m)) if h < 24 && m < 60 => Ok(h * 60 + m),
        _ => Err(PyTypeError::new_err(format!(
            "at must be a datetime or a time of day, not {}",
            at.get_type().name()?
        ))),
    }
}

/// The first `n` lines of a file as the parser reads them, joined by LF.
#[pyfunction]
fn head_lines(py: Python<'_>, data: &Bound<'_, PyBytes>, n: usize) -> Py<PyBytes> {
    PyBytes::new(py, &manners_core::table::head_lines(data.as_bytes(), n)).unbind()
}

/// Why the statement of a Content-Usage or Content-Signal value (after its path, if any) is
/// no RFC 9651 Dictionary, which leaves every category unknown: (byte offset in the
/// statement, reason); None when it is one.
#[pyfunction]
fn usage_malformed(value: &Bound<'_, PyString>) -> PyResult<Option<(usize, &'static str)>> {
    let value = str_bytes(value)?;
    let (_, said) = manners_core::usage::split_rule(&value);
    Ok(manners_core::usage::dictionary(said)
        .err()
        .map(|e| (e.at, e.why)))
}

/// A statement of preference alone, in the working group's vocabulary
/// (draft-ietf-aipref-vocab-08): the value of an HTTP `Content-Usage` header field
/// (draft-ietf-aipref-attach, "HTTP Content-Usage Header Field"), which has no path, so a
/// leading '/' is no path here.  Every category, in the vocabulary's order, with "yes", "no"
/// or "unstated"; and why the value is no RFC 9651 Dictionary, (byte offset, reason), when
/// it is not (then every category is unstated), else None.  Never raises on content.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn parse_usage_statement<'py>(
    value: &Bound<'py, PyString>,
) -> PyResult<(Bound<'py, PyTuple>, Option<(usize, &'static str)>)> {
    let py = value.py();
    let bytes = str_bytes(value)?;
    let vocabulary = &manners_core::usage::AIPREF;
    let (said, malformed) = manners_core::usage::statement(&bytes, vocabulary);
    let pairs = vocabulary.categories.iter().zip(said).map(|(c, p)| {
        (
            PyString::intern(py, c.label),
            PyString::intern(py, p.name()),
        )
    });
    Ok((PyTuple::new(py, pairs)?, malformed.map(|e| (e.at, e.why))))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyProfile>()?;
    m.add_class::<PyRobots>()?;
    m.add_class::<PyGemtextScan>()?;
    m.add_class::<PyMenuScan>()?;
    m.add("MAX_LINE_BYTES", manners_core::table::MAX_LINE_BYTES)?;
    // the spellings of the fields outside Google's parser, matched whole: for diagnostics
    let spellings: Vec<&str> = manners_core::line::OTHER_KEYS
        .iter()
        .map(|(k, _)| std::str::from_utf8(k).unwrap_or_default())
        .collect();
    m.add("FIELD_SPELLINGS", PyFrozenSet::new(m.py(), spellings)?)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(product_token, m)?)?;
    m.add_function(wrap_pyfunction!(agent_token, m)?)?;
    m.add_function(wrap_pyfunction!(url_path, m)?)?;
    m.add_function(wrap_pyfunction!(normalise, m)?)?;
    m.add_function(wrap_pyfunction!(google_escape, m)?)?;
    m.add_function(wrap_pyfunction!(google_path, m)?)?;
    m.add_function(wrap_pyfunction!(gopher_selectors, m)?)?;
    m.add_function(wrap_pyfunction!(head_lines, m)?)?;
    m.add_function(wrap_pyfunction!(rate, m)?)?;
    m.add_function(wrap_pyfunction!(usage_malformed, m)?)?;
    m.add_function(wrap_pyfunction!(parse_usage_statement, m)?)?;
    watch_logs::register(m)?;
    m.add_function(wrap_pyfunction!(asked_spacing, m)?)?;
    watch_fold::register(m)?;
    watch_scan::register(m)?;
    Ok(())
}

// -- small-net links (manners-core::smallnet), driven by manners/crawl/links.py ------------------

/// A batch of kept links as (urls, item types, mirror flags, indices within the batch whose
/// type Python decodes from the URL).
type LinkLists = (Vec<String>, Vec<Option<String>>, Vec<bool>, Vec<usize>);

/// Links [start, stop) of a finished scan, taken out of it.
fn link_lists(parts: &mut [smallnet::Link], start: usize, stop: usize) -> LinkLists {
    let stop = stop.min(parts.len());
    let batch = parts.get_mut(start.min(stop)..stop).unwrap_or_default();
    let mut urls = Vec::with_capacity(batch.len());
    let mut types = Vec::with_capacity(batch.len());
    let mut mirrors = Vec::with_capacity(batch.len());
    let mut decode = Vec::new();
    for (i, (url, item_type, mirror)) in batch.iter_mut().enumerate() {
        if item_type.as_deref() == Some("") {
            decode.push(i);
        }
        urls.push(std::mem::take(url));
        types.push(item_type.take());
        mirrors.push(*mirror);
    }
    (urls, types, mirrors, decode)
}

/// A gemtext page's scan: `step` until (0,); see links.py for the events.
#[pyclass(module = "manners._core", name = "GemtextScan")]
struct PyGemtextScan {
    scan: Option<smallnet::Gemtext>,
    parts: Vec<smallnet::Link>,
}

impl PyGemtextScan {
    fn get(&mut self) -> PyResult<&mut smallnet::Gemtext> {
        self.scan
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the scan is finished"))
    }
}

#[pymethods]
impl PyGemtextScan {
    #[new]
    #[pyo3(signature = (text, absolute, relative, gopher, refuses, max_links))]
    fn new(
        text: &Bound<'_, PyBytes>,
        absolute: Option<String>,
        relative: Option<String>,
        gopher: bool,
        refuses: bool,
        max_links: i64,
    ) -> Self {
        let base = smallnet::Prefixes {
            absolute,
            relative,
            gopher,
            refuses,
        };
        let max = usize::try_from(max_links.max(0)).unwrap_or(usize::MAX);
        Self {
            scan: Some(smallnet::Gemtext::new(text.as_bytes().to_vec(), base, max)),
            parts: Vec::new(),
        }
    }

    /// Read on for about `budget` bytes: (0,) done, (1,) pause, (2, raw head), (3, dots),
    /// (4, target bytes), (5, url, target bytes).
    fn step<'py>(&mut self, py: Python<'py>, budget: usize) -> PyResult<Bound<'py, PyTuple>> {
        use smallnet::GemEvent as E;
        let scan = self.get()?;
        let event = py.detach(|| scan.step(budget));
        let int = |n: usize| n.into_pyobject(py).map(|n| n.into_any());
        let items: Vec<Bound<'py, PyAny>> = match event {
            E::Done => vec![int(0)?],
            E::Pause => vec![int(1)?],
            E::Head(raw) => vec![int(2)?, PyString::new(py, &raw).into_any()],
            E::Dots(dots) => vec![int(3)?, PyString::new(py, &dots).into_any()],
            E::Slow(target) => vec![int(4)?, PyBytes::new(py, &target).into_any()],
            E::Long { url, target } => vec![
                int(5)?,
                PyString::new(py, &url).into_any(),
                PyBytes::new(py, &target).into_any(),
            ],
        };
        PyTuple::new(py, items)
    }

    fn set_head(&mut self, raw: String, head: Option<String>, gopher: bool) -> PyResult<()> {
        self.get()?.set_head(raw, head.map(|h| (h, gopher)));
        Ok(())
    }

    fn set_dots(&mut self, dots: String, prefix: Option<String>) -> PyResult<()> {
        self.get()?.set_dots(dots, prefix);
        Ok(())
    }

    fn add(&mut self, url: String, item_type: Option<String>) -> PyResult<()> {
        self.get()?.links.add(url, item_type.as_deref(), false);
        Ok(())
    }

    #[getter]
    fn full(&mut self) -> PyResult<bool> {
        Ok(self.get()?.links.full())
    }

    #[getter]
    fn more(&mut self) -> PyResult<usize> {
        Ok(self.get()?.links.more)
    }

    /// The title's bytes (UTF-8 with surrogates passed), or None.
    fn title<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        Ok(self.get()?.title().map(|t| PyBytes::new(py, t)))
    }

    /// End the scan: the number of links kept, to take with `links`.
    fn finish(&mut self, py: Python<'_>) -> PyResult<usize> {
        let scan = self
            .scan
            .take()
            .ok_or_else(|| PyValueError::new_err("the scan is finished"))?;
        self.parts = py.detach(|| scan.links.into_parts());
        Ok(self.parts.len())
    }

    /// Links [start, stop) of a finished scan (each taken once): urls, item types, mirror
    /// flags, indices (in the batch) of the types to decode from their URL.
    fn links(&mut self, start: usize, stop: usize) -> LinkLists {
        link_lists(&mut self.parts, start, stop)
    }
}

/// A Gopher menu's scan: `step` until (0,); see links.py for the events.
#[pyclass(module = "manners._core", name = "MenuScan")]
struct PyMenuScan {
    scan: Option<smallnet::Menu>,
    parts: Vec<smallnet::Link>,
}

impl PyMenuScan {
    fn get(&mut self) -> PyResult<&mut smallnet::Menu> {
        self.scan
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the scan is finished"))
    }
}

#[pymethods]
impl PyMenuScan {
    #[new]
    fn new(body: &Bound<'_, PyBytes>, max_links: i64) -> Self {
        let max = usize::try_from(max_links.max(0)).unwrap_or(usize::MAX);
        Self {
            scan: Some(smallnet::Menu::new(body.as_bytes().to_vec(), max)),
            parts: Vec::new(),
        }
    }

    /// Read on for about `budget` bytes: (0,) done, (1,) pause, (2, host-port field),
    /// (3, URL: target bytes, mirror), (4, place, item type, selector bytes),
    /// (5, url, problem: 0 broken, 1 long selector, 2 long URL, its size),
    /// (6, URL: target, mirror).
    fn step<'py>(&mut self, py: Python<'py>, budget: usize) -> PyResult<Bound<'py, PyTuple>> {
        use smallnet::{MenuEvent as E, Problem};
        let scan = self.get()?;
        let event = py.detach(|| scan.step(budget));
        let int = |n: usize| n.into_pyobject(py).map(|n| n.into_any());
        let items: Vec<Bound<'py, PyAny>> = match event {
            E::Done => vec![int(0)?],
            E::Pause => vec![int(1)?],
            E::Place(field) => vec![int(2)?, PyBytes::new(py, &field).into_any()],
            E::External { target, mirror } => vec![
                int(3)?,
                PyBytes::new(py, &target).into_any(),
                PyBool::new(py, mirror).to_owned().into_any(),
            ],
            E::Resolve { target, mirror } => vec![
                int(6)?,
                PyString::new(py, &target).into_any(),
                PyBool::new(py, mirror).to_owned().into_any(),
            ],
            E::LongSelector {
                place,
                item_type,
                selector,
            } => vec![
                int(4)?,
                PyString::new(py, &place).into_any(),
                PyString::new(py, &item_type).into_any(),
                PyBytes::new(py, &selector).into_any(),
            ],
            E::Skip { url, problem } => {
                let (kind, size) = match problem {
                    Problem::Broken => (0, 0),
                    Problem::LongSelector(n) => (1, n),
                    Problem::LongUrl(n) => (2, n),
                };
                vec![
                    int(5)?,
                    PyString::new(py, &url).into_any(),
                    int(kind)?,
                    int(size)?,
                ]
            }
        };
        PyTuple::new(py, items)
    }

    fn set_place(&mut self, field: Vec<u8>, place: String) -> PyResult<()> {
        self.get()?.set_place(field, place);
        Ok(())
    }

    /// A resolved URL: target's link (None: skipped), for the scan's memo.
    fn remember(
        &mut self,
        target: String,
        url: Option<String>,
        item_type: Option<String>,
    ) -> PyResult<()> {
        let link = url.map(|url| (url, item_type));
        let link = link.as_ref().map(|(url, t)| (url.clone(), t.as_deref()));
        self.get()?.remember(target, link);
        Ok(())
    }

    fn add(&mut self, url: String, item_type: Option<String>, mirror: bool) -> PyResult<()> {
        self.get()?.links.add(url, item_type.as_deref(), mirror);
        Ok(())
    }

    fn count_more(&mut self) -> PyResult<()> {
        self.get()?.links.more += 1;
        Ok(())
    }

    #[getter]
    fn full(&mut self) -> PyResult<bool> {
        Ok(self.get()?.links.full())
    }

    #[getter]
    fn more(&mut self) -> PyResult<usize> {
        Ok(self.get()?.links.more)
    }

    fn title(&mut self) -> PyResult<Option<String>> {
        Ok(self.get()?.title().map(str::to_owned))
    }

    /// End the scan: the number of links kept, to take with `links`.
    fn finish(&mut self, py: Python<'_>) -> PyResult<usize> {
        let scan = self
            .scan
            .take()
            .ok_or_else(|| PyValueError::new_err("the scan is finished"))?;
        self.parts = py.detach(|| scan.links.into_parts());
        Ok(self.parts.len())
    }

    /// Links [start, stop) of a finished scan (each taken once): urls, item types, mirror
    /// flags, indices (in the batch) of the types to decode from their URL.
    fn links(&mut self, start: usize, stop: usize) -> LinkLists {
        link_lists(&mut self.parts, start, stop)
    }
}
