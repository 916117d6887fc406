//! `manners watch`'s log lines read by the engine (manners-core::watch::logs), for
//! `manners/watch/logs.py`: one line in, a request's fields out.

use manners_core::watch::logs::{parse, Format};
use manners_core::watch::Parsed;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// `line` read as the log format named `format`: a tuple of a request's fields in the order of
/// `manners.watch.logs.Hit` (when, client, scheme, host, target, status, agent, size), "noise"
/// for a line of the server's that records no request, None for a line the format does not read.
#[pyfunction]
pub fn parse_log_line<'py>(
    py: Python<'py>,
    format: &str,
    line: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let format = Format::from_name(format)
        .ok_or_else(|| PyValueError::new_err(format!("no log format {format:?}")))?;
    Ok(match parse(format, line) {
        Parsed::Hit(hit) => PyTuple::new(
            py,
            [
                hit.when.into_pyobject(py)?.into_any(),
                hit.client.as_deref().into_pyobject(py)?.into_any(),
                hit.scheme.into_pyobject(py)?.into_any(),
                hit.host.as_deref().into_pyobject(py)?.into_any(),
                hit.target.as_ref().into_pyobject(py)?.into_any(),
                hit.status.into_pyobject(py)?.into_any(),
                hit.agent.as_deref().into_pyobject(py)?.into_any(),
                hit.size.into_pyobject(py)?.into_any(),
            ],
        )?
        .into_any(),
        Parsed::Noise => "noise".into_pyobject(py)?.into_any(),
        Parsed::Unread => py.None().into_bound(py),
    })
}

/// Adds this file's functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_log_line, m)?)
}
