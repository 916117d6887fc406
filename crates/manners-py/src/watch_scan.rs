//! A log file read by the engine chunk by chunk into `manners watch`'s fold
//! (manners-core::watch::scan): `manners/watch/sources.py` gives the bytes, no line crosses
//! into Python.

use manners_core::watch::logs::Format;
use manners_core::watch::scan::{Scan, Window};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::watch_fold::PyWatchFold;

/// One file being read in the log format named `format`.
#[pyclass(module = "manners._core", name = "LogScan")]
pub struct PyLogScan {
    scan: Scan,
}

#[pymethods]
impl PyLogScan {
    #[new]
    fn new(format: &str) -> PyResult<Self> {
        let format = Format::from_name(format)
            .ok_or_else(|| PyValueError::new_err(format!("no log format {format:?}")))?;
        Ok(PyLogScan {
            scan: Scan::new(format),
        })
    }

    /// Reads the lines `data` ends (at the end of the file, `end`, its last one too) into
    /// `fold`, each request from `since` to `until` as line N of `file`; keeps unparseable lines
    /// while fewer than `room` are kept.  Returns the bytes consumed: the rest begins a line not
    /// yet ended, to be given again at the start of the next chunk.
    #[pyo3(signature = (fold, data, end, file, since, until, room))]
    #[allow(clippy::too_many_arguments)]
    fn feed(
        &mut self,
        py: Python<'_>,
        fold: &Bound<'_, PyWatchFold>,
        data: &Bound<'_, PyBytes>,
        end: bool,
        file: &str,
        since: Option<f64>,
        until: Option<f64>,
        room: usize,
    ) -> usize {
        let mut fold = fold.borrow_mut();
        let id = fold.file_id(py, file);
        let window = Window { since, until };
        self.scan
            .feed(data.as_bytes(), end, window, room, |hit, line| {
                fold.fold_hit(hit, id, line)
            })
    }

    /// (lines, requests, noise, unparsed, overlong, untimed) so far.
    #[getter]
    fn counts(&self) -> (u64, u64, u64, u64, u64, u64) {
        let c = &self.scan.counts;
        (c.lines, c.hits, c.noise, c.unparsed, c.overlong, c.untimed)
    }

    /// The unparseable lines kept: (number, its first characters; None for an overlong line).
    #[getter]
    fn shown(&self) -> Vec<(u64, Option<String>)> {
        self.scan.shown.clone()
    }
}

/// Adds this file's class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLogScan>()
}
