//! The sample values of a loaded trace in columns: one contiguous f32
//! series (NaN = missing) per GPU and metric, and per host metric.
//!
//! Every statistic reads its metric as one slice; gathering a column out
//! of sample rows (the earlier `[sample][gpu][column]` layout) was 61 % of
//! a 24-hour check. f32 keeps an 8-GPU hour at 100 ms at ~40 MB.
//!
//! A long trace's columns do not fit a small memory budget (8 GPUs x 24 h
//! at 100 ms: 954 MB), and every statistic is exact, so every value must be
//! kept somewhere. Columns past `spill_bytes()` (64 MiB unless
//! `GATE_SPILL_MB` says otherwise) move to an unnamed scratch file in
//! `$TMPDIR`, mapped shared into memory. Callers still read plain slices
//! of the same values in the same order, so the statistics are the same,
//! bit for bit.
//!
//! - Reads: every `RESIDENT_BYTES` of values read, the mapping's pages are
//!   dropped from the process (`MADV_DONTNEED`). Shared file pages lose
//!   nothing: a later read finds them in the page cache or on disk.
//! - Writes: rows are gathered `WRITE_ROWS` at a time and written a series
//!   at a time with `pwrite`, whole pages. A write through the mapping made
//!   the kernel read each new page before changing it (7 % of a 24-hour
//!   check), and a full disk is then an error, not a SIGBUS.
//!
//! The process holds a bounded share of the columns; the kernel's page
//! cache holds the rest like any file's and can evict it (on a tmpfs
//! `$TMPDIR` that is memory all the same: point TMPDIR at a disk for long
//! traces). The kernel removes the file when gate exits, however it exits.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Environment variable: columns larger than this many MiB go to a
/// scratch file (`0`: every trace's, which the tests use).
pub const SPILL_ENV: &str = "GATE_SPILL_MB";
/// Default of `GATE_SPILL_MB`: half the memory budget
/// (`budget::BUDGET_BYTES`): a 1-hour trace of 8 GPUs (~40 MB of columns)
/// stays in memory, a 6-hour one (~240 MB) goes to disk, so no trace's
/// columns outgrow the room its load holds.
pub const DEFAULT_SPILL_MB: usize = 64;
/// Largest `GATE_SPILL_MB` accepted (1 TiB).
pub const MAX_SPILL_MB: usize = 1 << 20;
/// Bytes of a scratch file's values read between two drops of its pages
/// from the process: what a spilled trace keeps resident.
pub const RESIDENT_BYTES: usize = 32 << 20;
/// `RESIDENT_BYTES` of parked columns (`Columns::park`): a capture reads
/// every pooled run's column in turn, so what each keeps adds up.
pub(crate) const PARKED_RESIDENT_BYTES: usize = 1 << 20;

/// `GATE_SPILL_MB` parsed: None when unset, an error line when it is not
/// a number from 0 to `MAX_SPILL_MB`.
pub fn spill_mb_from_env() -> Result<Option<usize>, String> {
    let Some(raw) = std::env::var_os(SPILL_ENV) else {
        return Ok(None);
    };
    let text = raw.to_string_lossy();
    match text.trim().parse::<usize>() {
        Ok(n) if n <= MAX_SPILL_MB => Ok(Some(n)),
        _ => Err(format!(
            "{SPILL_ENV}='{}' is not a size in MiB; set it to a number from 0 to {MAX_SPILL_MB}, or unset it for {DEFAULT_SPILL_MB}",
            crate::escape::terminal(&text)
        )),
    }
}

/// Columns larger than this many bytes are kept in a scratch file.
/// (`main` refuses a bad `GATE_SPILL_MB` before any work starts; here it
/// counts as unset.)
pub fn spill_bytes() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        spill_mb_from_env()
            .ok()
            .flatten()
            .unwrap_or(DEFAULT_SPILL_MB)
            << 20
    })
}

/// One series per GPU slot and column and per host column, each of the
/// same length.
pub struct Columns {
    ncols: usize,
    /// `gpu[slot * ncols + col]`: the series holding GPU slot `slot`'s
    /// column `col`.
    gpu: Vec<usize>,
    /// `host[col]`: the series holding host column `col`.
    host: Vec<usize>,
    store: Store,
}

enum Store {
    Heap(Vec<Vec<f32>>),
    Mapped(Mapped),
}

impl Default for Columns {
    fn default() -> Columns {
        Columns::new(0, 0, 0)
    }
}

/// A clone holds its columns in memory (tests and synthetic edits clone
/// small traces).
impl Clone for Columns {
    fn clone(&self) -> Columns {
        let series = match &self.store {
            Store::Heap(v) => v.clone(),
            Store::Mapped(m) => (0..m.nseries).map(|s| m.series(s).to_vec()).collect(),
        };
        Columns {
            ncols: self.ncols,
            gpu: self.gpu.clone(),
            host: self.host.clone(),
            store: Store::Heap(series),
        }
    }
}

impl std::fmt::Debug for Columns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Columns")
            .field("gpu_series", &self.gpu.len())
            .field("host_series", &self.host.len())
            .field("samples", &self.len())
            .field("spilled", &self.is_spilled())
            .finish()
    }
}

impl Columns {
    /// Empty columns for `ngpu` GPUs of `ncols` columns and `nhost` host columns.
    pub fn new(ngpu: usize, ncols: usize, nhost: usize) -> Columns {
        let ngpu_series = ngpu * ncols;
        Columns {
            ncols,
            gpu: (0..ngpu_series).collect(),
            host: (ngpu_series..ngpu_series + nhost).collect(),
            store: Store::Heap(vec![Vec::new(); ngpu_series + nhost]),
        }
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        match &self.store {
            // A series still held (`keep_gpus` frees those of GPUs left out).
            Store::Heap(v) => (self.gpu.iter().chain(&self.host).next()).map_or(0, |&s| v[s].len()),
            Store::Mapped(m) => m.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the values live in a scratch file.
    pub(crate) fn is_spilled(&self) -> bool {
        matches!(self.store, Store::Mapped(_))
    }

    fn nseries(&self) -> usize {
        match &self.store {
            Store::Heap(v) => v.len(),
            Store::Mapped(m) => m.nseries,
        }
    }

    /// Room for `n` more samples in every series; columns that would
    /// outgrow `spill_at` bytes go to a scratch file now. Grown a sample
    /// at a time, the ~300 series of an 8-GPU trace were copied and
    /// re-copied in the heap, which left a 24-hour load at 1.4x its
    /// columns' size.
    pub(crate) fn reserve(&mut self, n: usize, spill_at: usize) -> std::io::Result<()> {
        let want = self.len().saturating_add(n);
        if let Store::Heap(series) = &mut self.store {
            if want.saturating_mul(series.len()).saturating_mul(4) > spill_at {
                // Room for an eighth more than the estimate: it is taken
                // from the first sample line, and later lines can be shorter.
                return self.spill(want.saturating_add(want / 8).saturating_add(1024));
            }
            for s in series.iter_mut() {
                s.reserve(n);
            }
        }
        Ok(())
    }

    /// Append one sample: `gpu` is `[gpu][column]` flattened, `host` the
    /// host vector, both in the header's order. Columns held in memory
    /// move to a scratch file once they pass `spill_at` bytes (a source of
    /// unknown size: stdin, a compressed trace).
    pub(crate) fn push_row(
        &mut self,
        gpu: &[f32],
        host: &[f32],
        spill_at: usize,
    ) -> std::io::Result<()> {
        debug_assert_eq!(gpu.len(), self.gpu.len());
        debug_assert_eq!(host.len(), self.host.len());
        match &mut self.store {
            Store::Heap(series) => {
                for (&s, &v) in self.gpu.iter().zip(gpu).chain(self.host.iter().zip(host)) {
                    series[s].push(v);
                }
                let len = self.len();
                if len.saturating_mul(self.nseries()).saturating_mul(4) > spill_at {
                    self.spill(len.saturating_mul(2))?;
                }
            }
            Store::Mapped(m) => {
                if m.len + m.pending_rows == m.cap {
                    m.grow()?;
                }
                let (gpu_ids, host_ids) = (&self.gpu, &self.host);
                m.push(gpu_ids.iter().zip(gpu).chain(host_ids.iter().zip(host)))?;
            }
        }
        Ok(())
    }

    /// Append the rows of `block` and empty it (`RowBlock`).
    pub(crate) fn push_block(
        &mut self,
        block: &mut RowBlock,
        spill_at: usize,
    ) -> std::io::Result<()> {
        let pushed = self.push_rows(&block.values, spill_at);
        block.values.clear();
        block.rows = 0;
        pushed
    }

    /// Append rows given row-major: each row its GPU values
    /// (`[gpu][column]`) then its host values, in the header's order.
    /// A tile of `BLOCK_ROWS` rows at a time goes into every series, so a
    /// row is not scattered over ~300 series, each write on another page
    /// (the cost per sample grew with the trace: 19-25 % of a 24-hour
    /// check). Columns held in memory move to a scratch file once they
    /// pass `spill_at` bytes.
    pub(crate) fn push_rows(&mut self, values: &[f32], spill_at: usize) -> std::io::Result<()> {
        let width = self.gpu.len() + self.host.len();
        if width == 0 {
            return Ok(());
        }
        debug_assert_eq!(values.len() % width, 0);
        for tile in values.chunks(BLOCK_ROWS * width) {
            self.push_tile(tile, width, spill_at)?;
        }
        Ok(())
    }

    /// `push_rows` of at most `BLOCK_ROWS` rows.
    fn push_tile(&mut self, tile: &[f32], width: usize, spill_at: usize) -> std::io::Result<()> {
        let (gpu_ids, host_ids) = (&self.gpu, &self.host);
        match &mut self.store {
            Store::Heap(series) => {
                for (k, &s) in gpu_ids.iter().chain(host_ids).enumerate() {
                    series[s].extend(tile[k..].iter().step_by(width));
                }
                let len = self.len();
                if len.saturating_mul(self.nseries()).saturating_mul(4) > spill_at {
                    self.spill(len.saturating_mul(2))?;
                }
                Ok(())
            }
            Store::Mapped(m) => m.push_tile(gpu_ids, host_ids, tile, width),
        }
    }

    /// Write the rows still gathered in memory to the scratch file: the
    /// loader calls it after the last row, before anything reads.
    pub fn finish(&mut self) -> std::io::Result<()> {
        match &mut self.store {
            Store::Heap(_) => Ok(()),
            Store::Mapped(m) => m.flush(),
        }
    }

    /// Keep the values for later reads without holding them: columns in
    /// memory move to a scratch file, and a scratch file's pages, write
    /// buffers and resident share (`PARKED_RESIDENT_BYTES`) are dropped.
    /// A capture parks each run it pools once it is summarised, then reads
    /// the runs' own columns back a column at a time (no copy of them).
    pub(crate) fn park(&mut self) -> std::io::Result<()> {
        let len = self.len();
        self.spill(len)?;
        if let Store::Mapped(m) = &mut self.store {
            m.flush()?;
            m.pending = Vec::new();
            m.file = None;
            m.resident_bytes = PARKED_RESIDENT_BYTES;
            m.touched.store(0, Ordering::Relaxed);
            m.release();
        }
        Ok(())
    }

    /// Move the values to a scratch file with room for `cap` samples.
    fn spill(&mut self, cap: usize) -> std::io::Result<()> {
        let len = self.len();
        let Store::Heap(series) = &mut self.store else {
            return Ok(());
        };
        if series.is_empty() {
            return Ok(());
        }
        let mut mapped = Mapped::new(series.len(), cap.max(len).max(1))?;
        for (s, values) in series.iter().enumerate() {
            mapped.write(s, 0, values)?;
        }
        mapped.len = len;
        self.store = Store::Mapped(mapped);
        Ok(())
    }

    fn series(&self, s: usize) -> &[f32] {
        match &self.store {
            Store::Heap(v) => &v[s],
            Store::Mapped(m) => m.series(s),
        }
    }

    /// `series(s)`, of which only `values` values will be read: only
    /// those count against a scratch file's resident bytes.
    fn series_reading(&self, s: usize, values: usize) -> &[f32] {
        match &self.store {
            Store::Heap(v) => &v[s],
            Store::Mapped(m) => m.series_reading(s, values),
        }
    }

    fn series_mut(&mut self, s: usize) -> &mut [f32] {
        match &mut self.store {
            Store::Heap(v) => &mut v[s],
            Store::Mapped(m) => m.series_mut(s),
        }
    }

    /// The series of GPU slot `slot`, column `col`.
    pub fn gpu(&self, slot: usize, col: usize) -> &[f32] {
        self.series(self.gpu[slot * self.ncols + col])
    }

    /// The series of GPU slot `slot`, column `col`, of which the caller
    /// reads `values` values (a block of a long series): only those count
    /// against a scratch file's resident bytes, not the whole series.
    pub(crate) fn gpu_reading(&self, slot: usize, col: usize, values: usize) -> &[f32] {
        self.series_reading(self.gpu[slot * self.ncols + col], values)
    }

    /// `gpu_reading` of host column `col`.
    pub(crate) fn host_reading(&self, col: usize, values: usize) -> &[f32] {
        self.series_reading(self.host[col], values)
    }

    /// GPU slot `slot`'s column `col` at sample `i` (one value: counted as
    /// such against a scratch file's resident bytes).
    pub(crate) fn gpu_at(&self, slot: usize, col: usize, i: usize) -> f32 {
        self.value(self.gpu[slot * self.ncols + col], i)
    }

    /// Mutable series of GPU slot `slot`, column `col` (validity rules,
    /// tests, synthetic edits).
    pub(crate) fn gpu_mut(&mut self, slot: usize, col: usize) -> &mut [f32] {
        let s = self.gpu[slot * self.ncols + col];
        self.series_mut(s)
    }

    /// The series of host column `col`.
    pub fn host(&self, col: usize) -> &[f32] {
        self.series(self.host[col])
    }

    /// Host column `col` at sample `i`.
    pub(crate) fn host_at(&self, col: usize, i: usize) -> f32 {
        self.value(self.host[col], i)
    }

    /// Mutable series of host column `col` (tests, synthetic edits).
    pub fn host_mut(&mut self, col: usize) -> &mut [f32] {
        let s = self.host[col];
        self.series_mut(s)
    }

    fn value(&self, s: usize, i: usize) -> f32 {
        match &self.store {
            Store::Heap(v) => v[s][i],
            Store::Mapped(m) => m.value(s, i),
        }
    }

    /// Keep only the GPU slots `keep` (ascending), in that order.
    pub(super) fn keep_gpus(&mut self, keep: &[usize]) {
        let ncols = self.ncols;
        let kept: Vec<usize> = keep
            .iter()
            .flat_map(|&s| (0..ncols).map(move |c| s * ncols + c))
            .map(|i| self.gpu[i])
            .collect();
        // Series of the GPUs left out are freed (in memory) or left
        // unread (in a scratch file).
        if let Store::Heap(series) = &mut self.store {
            for &s in &self.gpu {
                if !kept.contains(&s) {
                    series[s] = Vec::new();
                }
            }
        }
        self.gpu = kept;
    }
}

/// Rows appended to the columns at a time (`push_rows`): 256 rows of an
/// 8-GPU trace are ~280 KiB, read from the cache while every series takes
/// its 256 values.
pub(crate) const BLOCK_ROWS: usize = 256;

/// Sample rows gathered before they go into the columns, row-major (each
/// row its GPU values, then its host values).
#[derive(Debug, Default)]
pub struct RowBlock {
    values: Vec<f32>,
    rows: usize,
}

impl RowBlock {
    /// Add one row.
    pub fn push(&mut self, gpu: &[f32], host: &[f32]) {
        self.values.extend_from_slice(gpu);
        self.values.extend_from_slice(host);
        self.rows += 1;
    }

    /// `BLOCK_ROWS` rows or more are waiting.
    pub(crate) fn is_full(&self) -> bool {
        self.rows >= BLOCK_ROWS
    }
}

/// Rows gathered before they are written, a series at a time: 4096
/// values are 16 KiB, whole pages.
const WRITE_ROWS: usize = 4096;
/// A series' room is a multiple of this many values (4 KiB), so that
/// every series, and every write of `WRITE_ROWS`, starts on a page.
const PAGE_VALUES: usize = 1024;

/// Series in a shared mapping of an unnamed scratch file: series `s` is
/// `cap` values from value `s * cap`, of which the first `len` are
/// written; `pending_rows` more wait in `pending`.
struct Mapped {
    /// Written with `pwrite`, read through the mapping (no name: nothing
    /// else opens it). Parked columns close it (the mapping stays): a
    /// capture of thousands of nodes holds no descriptor per node.
    file: Option<File>,
    /// The shared mapping of the whole file (memmap2; unmapped on drop).
    /// Page-aligned, so its bytes are `f32`s.
    map: memmap2::MmapMut,
    nseries: usize,
    cap: usize,
    len: usize,
    /// `pending[s * WRITE_ROWS + r]`: row `len + r` of series `s`.
    pending: Vec<f32>,
    pending_rows: usize,
    /// Bytes read since the pages were last dropped.
    touched: AtomicUsize,
    /// `RESIDENT_BYTES` (smaller in tests).
    resident_bytes: usize,
}

fn os_error(what: &str, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Mapped {
    fn new(nseries: usize, cap: usize) -> std::io::Result<Mapped> {
        let cap = cap.div_ceil(PAGE_VALUES).saturating_mul(PAGE_VALUES);
        let map_bytes = nseries
            .checked_mul(cap)
            .and_then(|v| v.checked_mul(4))
            .ok_or_else(|| std::io::Error::other("columns too large to address"))?;
        // Values written: the samples so far, or the estimate of them.
        crate::scratch::note_scratch(map_bytes as u64);
        let file =
            tempfile::tempfile().map_err(|e| os_error("cannot create the scratch file", e))?;
        // Sparse: room never written costs no disk. Values are written
        // with `pwrite` (a full disk is an error there) and the mapping
        // only reads them, or edits values already written.
        file.set_len(map_bytes as u64)
            .map_err(|e| os_error("cannot size the scratch file", e))?;
        // SAFETY: a shared mapping of a file that has no name: nothing
        // else opens or truncates it while the mapping lives. Values change
        // only through `&mut self`, and dropping pages (`release`) never
        // changes a value.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .len(map_bytes.max(1))
                .map_mut(&file)
        }
        .map_err(|e| os_error("cannot map the scratch file", e))?;
        Ok(Mapped {
            file: Some(file),
            map,
            nseries,
            cap,
            len: 0,
            pending: Vec::new(),
            pending_rows: 0,
            touched: AtomicUsize::new(0),
            resident_bytes: RESIDENT_BYTES,
        })
    }

    /// Count `bytes` as read (or edited in place); past `resident_bytes`,
    /// drop every page of the mapping from the process. The bytes about
    /// to be read count after the drop: counted as nothing, a whole
    /// series read next (10 MB at 72 h) came on top of the next
    /// `resident_bytes`, a peak growing with the trace's length.
    fn note(&self, bytes: usize) {
        let total = self.touched.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if total >= self.resident_bytes {
            self.touched.store(bytes, Ordering::Relaxed);
            self.release();
        }
    }

    /// Drop every page of the mapping from the process.
    fn release(&self) {
        // SAFETY: the range is this mapping; for a shared file mapping
        // MADV_DONTNEED only unmaps pages, their contents stay in the file,
        // and a later access maps them again. Slices handed out stay
        // valid: the mapping itself is untouched.
        unsafe {
            let _ = self
                .map
                .unchecked_advise(memmap2::UncheckedAdvice::DontNeed);
        }
    }

    /// Every row gathered is written (`Columns::finish`) before a read.
    fn assert_written(&self) {
        assert_eq!(
            self.pending_rows, 0,
            "columns read before the loader finished them"
        );
    }

    /// The first value of the mapping (page-aligned, so an `f32`).
    fn base(&self) -> *const f32 {
        self.map.as_ptr().cast()
    }

    fn series(&self, s: usize) -> &[f32] {
        assert!(s < self.nseries);
        self.assert_written();
        self.note(self.len * 4);
        // SAFETY: `s * cap + len <= nseries * cap`, inside the mapping;
        // shared borrows of `self` exclude writes.
        unsafe { std::slice::from_raw_parts(self.base().add(s * self.cap), self.len) }
    }

    /// `series`, counting `values` values as read (at most the series).
    fn series_reading(&self, s: usize, values: usize) -> &[f32] {
        assert!(s < self.nseries);
        self.assert_written();
        self.note(values.min(self.len) * 4);
        // SAFETY: as `series`.
        unsafe { std::slice::from_raw_parts(self.base().add(s * self.cap), self.len) }
    }

    fn series_mut(&mut self, s: usize) -> &mut [f32] {
        assert!(s < self.nseries);
        self.assert_written();
        self.note(self.len * 4);
        // SAFETY: as `series`, and `&mut self` makes the borrow unique.
        let base = self.map.as_mut_ptr().cast::<f32>();
        unsafe { std::slice::from_raw_parts_mut(base.add(s * self.cap), self.len) }
    }

    fn value(&self, s: usize, i: usize) -> f32 {
        assert!(s < self.nseries && i < self.len, "value out of range");
        self.assert_written();
        self.note(4);
        // SAFETY: in range, checked above.
        unsafe { *self.base().add(s * self.cap + i) }
    }

    /// Append one value to each series: `(series, value)` pairs covering
    /// every series once. The caller made room (`len + pending_rows < cap`).
    fn push<'a>(&mut self, row: impl Iterator<Item = (&'a usize, &'a f32)>) -> std::io::Result<()> {
        assert!(self.len + self.pending_rows < self.cap);
        if self.pending.is_empty() {
            self.pending = vec![0.0; self.nseries * WRITE_ROWS];
        }
        for (&s, &v) in row {
            self.pending[s * WRITE_ROWS + self.pending_rows] = v;
        }
        self.pending_rows += 1;
        if self.pending_rows == WRITE_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Append the rows of `tile` (row-major, `width` values a row: the
    /// series `gpu_ids` then `host_ids`), a series at a time into the
    /// gathered rows.
    fn push_tile(
        &mut self,
        gpu_ids: &[usize],
        host_ids: &[usize],
        tile: &[f32],
        width: usize,
    ) -> std::io::Result<()> {
        let rows = tile.len() / width;
        let mut done = 0;
        while done < rows {
            if self.len + self.pending_rows == self.cap {
                self.grow()?;
            }
            let take = (rows - done)
                .min(WRITE_ROWS - self.pending_rows)
                .min(self.cap - self.len - self.pending_rows);
            if self.pending.is_empty() {
                self.pending = vec![0.0; self.nseries * WRITE_ROWS];
            }
            let at = self.pending_rows;
            for (k, &s) in gpu_ids.iter().chain(host_ids).enumerate() {
                let dst = &mut self.pending[s * WRITE_ROWS + at..s * WRITE_ROWS + at + take];
                let src = tile[done * width + k..].iter().step_by(width);
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = v;
                }
            }
            self.pending_rows += take;
            done += take;
            if self.pending_rows == WRITE_ROWS {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Write the gathered rows, a series at a time.
    fn flush(&mut self) -> std::io::Result<()> {
        let rows = self.pending_rows;
        if rows == 0 {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        for s in 0..self.nseries {
            self.write(s, self.len, &pending[s * WRITE_ROWS..s * WRITE_ROWS + rows])?;
        }
        self.pending = pending;
        self.len += rows;
        self.pending_rows = 0;
        Ok(())
    }

    /// Write `values` into series `s` from row `at` (`at + values.len() <= cap`).
    fn write(&self, s: usize, at: usize, values: &[f32]) -> std::io::Result<()> {
        assert!(s < self.nseries && at + values.len() <= self.cap);
        let offset = ((s * self.cap + at) * 4) as u64;
        let file = self
            .file
            .as_ref()
            .ok_or_else(|| std::io::Error::other("parked columns are not written"))?;
        file.write_all_at(crate::files::f32_bytes(values), offset)
            .map_err(|e| os_error("cannot write the scratch file", e))
    }

    /// Half as much room again, in a new file (the estimate of the samples
    /// to come was short).
    fn grow(&mut self) -> std::io::Result<()> {
        self.flush()?;
        let cap = self
            .cap
            .saturating_add(self.cap / 2)
            .saturating_add(PAGE_VALUES);
        let mut bigger = Mapped::new(self.nseries, cap)?;
        for s in 0..self.nseries {
            bigger.write(s, 0, self.series(s))?;
        }
        bigger.len = self.len;
        bigger.resident_bytes = self.resident_bytes;
        *self = bigger;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of `ngpu` x `ncols` GPU values and `nhost` host values:
    /// distinct, with a NaN now and then.
    fn rows(n: usize, ngpu: usize, ncols: usize, nhost: usize) -> Vec<(Vec<f32>, Vec<f32>)> {
        (0..n)
            .map(|i| {
                let v = |k: usize| {
                    if (i + k).is_multiple_of(97) {
                        f32::NAN
                    } else {
                        (i * 1000 + k) as f32 * 0.37
                    }
                };
                (
                    (0..ngpu * ncols).map(v).collect(),
                    (0..nhost).map(|k| v(10_000 + k)).collect(),
                )
            })
            .collect()
    }

    fn bits(c: &Columns, ngpu: usize, ncols: usize, nhost: usize) -> Vec<Vec<u32>> {
        let b = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        (0..ngpu)
            .flat_map(|g| (0..ncols).map(move |k| (g, k)))
            .map(|(g, k)| b(c.gpu(g, k)))
            .chain((0..nhost).map(|k| b(c.host(k))))
            .collect()
    }

    #[test]
    fn spilled_columns_hold_what_memory_holds() {
        let (ngpu, ncols, nhost) = (3, 4, 2);
        let data = rows(5000, ngpu, ncols, nhost);
        let mut heap = Columns::new(ngpu, ncols, nhost);
        // Spilled from the start, with a short estimate: it grows 3 times.
        let mut early = Columns::new(ngpu, ncols, nhost);
        early.reserve(100, 0).unwrap();
        // Spilled when the rows pass the limit (a source of unknown size).
        let mut late = Columns::new(ngpu, ncols, nhost);
        for (g, h) in &data {
            heap.push_row(g, h, usize::MAX).unwrap();
            early.push_row(g, h, 0).unwrap();
            late.push_row(g, h, 40_000).unwrap();
        }
        for c in [&mut heap, &mut early, &mut late] {
            c.finish().unwrap();
        }
        assert!(!heap.is_spilled() && early.is_spilled() && late.is_spilled());
        let want = bits(&heap, ngpu, ncols, nhost);
        assert_eq!(want[0].len(), 5000);
        assert_eq!(bits(&early, ngpu, ncols, nhost), want);
        assert_eq!(bits(&late, ngpu, ncols, nhost), want);
        assert_eq!(
            early.gpu_at(2, 3, 4321).to_bits(),
            heap.gpu_at(2, 3, 4321).to_bits()
        );
        assert_eq!(
            early.host_at(1, 17).to_bits(),
            heap.host_at(1, 17).to_bits()
        );
        // A clone is in memory, with the same values.
        let copy = early.clone();
        assert!(!copy.is_spilled());
        assert_eq!(bits(&copy, ngpu, ncols, nhost), want);
    }

    #[test]
    fn edits_and_kept_gpus_survive_dropped_pages() {
        let (ngpu, ncols, nhost) = (3, 2, 1);
        let data = rows(3000, ngpu, ncols, nhost);
        let mut heap = Columns::new(ngpu, ncols, nhost);
        let mut spilled = Columns::new(ngpu, ncols, nhost);
        for (g, h) in &data {
            heap.push_row(g, h, usize::MAX).unwrap();
            spilled.push_row(g, h, 0).unwrap();
        }
        for c in [&mut heap, &mut spilled] {
            c.finish().unwrap();
            c.gpu_mut(1, 1)[2999] = -1.5;
            c.host_mut(0)[0] = 7.0;
            c.keep_gpus(&[1, 2]);
            assert_eq!(c.len(), 3000);
        }
        let Store::Mapped(m) = &spilled.store else {
            panic!("not spilled")
        };
        m.release();
        assert_eq!(
            bits(&spilled, 2, ncols, nhost),
            bits(&heap, 2, ncols, nhost)
        );
        assert_eq!(spilled.host(0)[0], 7.0);
        assert_eq!(spilled.gpu(1, 0)[5], data[5].0[2 * ncols]);
    }

    #[test]
    fn parked_columns_hold_what_memory_holds() {
        let (ngpu, ncols, nhost) = (3, 2, 2);
        let data = rows(6000, ngpu, ncols, nhost);
        let mut heap = Columns::new(ngpu, ncols, nhost);
        let mut spilled = Columns::new(ngpu, ncols, nhost);
        for (g, h) in &data {
            heap.push_row(g, h, usize::MAX).unwrap();
            spilled.push_row(g, h, 0).unwrap();
        }
        for c in [&mut heap, &mut spilled] {
            c.finish().unwrap();
        }
        let mut parked = heap.clone();
        // GPU 0 left out: its series is freed, the length comes from the others.
        parked.keep_gpus(&[1, 2]);
        heap.keep_gpus(&[1, 2]);
        parked.park().unwrap();
        spilled.keep_gpus(&[1, 2]);
        spilled.park().unwrap();
        for c in [&parked, &spilled] {
            let Store::Mapped(m) = &c.store else {
                panic!("not parked in a scratch file")
            };
            assert!(m.pending.is_empty() && m.file.is_none());
            assert_eq!(m.resident_bytes, PARKED_RESIDENT_BYTES);
            assert_eq!(c.len(), 6000);
            assert_eq!(bits(c, 2, ncols, nhost), bits(&heap, 2, ncols, nhost));
        }
    }

    #[test]
    #[should_panic(expected = "columns read before the loader finished them")]
    fn a_read_before_finish_is_refused() {
        let mut c = Columns::new(1, 1, 0);
        c.push_row(&[1.0], &[], 0).unwrap();
        c.push_row(&[2.0], &[], 0).unwrap();
        let _ = c.gpu(0, 0);
    }

    /// Resident bytes of the mapping at `base`, from /proc/self/smaps.
    fn resident_kib(base: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines();
        while let Some(line) = lines.next() {
            let start = line.split('-').next().unwrap_or("");
            if usize::from_str_radix(start, 16).ok() == Some(base) {
                for l in lines.by_ref() {
                    if let Some(kb) = l.strip_prefix("Rss:") {
                        return kb.trim().trim_end_matches("kB").trim().parse().unwrap();
                    }
                }
            }
        }
        panic!("mapping {base:x} not in /proc/self/smaps")
    }

    #[test]
    fn a_spilled_store_keeps_its_budget_resident() {
        let (nseries, n) = (16, 256 * 1024); // 16 MiB of values
        let mut m = Mapped::new(nseries, n).unwrap();
        m.resident_bytes = 1 << 20;
        let ids: Vec<usize> = (0..nseries).collect();
        let row: Vec<f32> = (0..nseries).map(|s| s as f32).collect();
        for _ in 0..n {
            m.push(ids.iter().zip(&row)).unwrap();
        }
        m.flush().unwrap();
        // Written with pwrite: nothing of it is mapped in yet.
        let mut most = resident_kib(m.base() as usize);
        assert!(most < 1024, "{most} KiB resident after writing");
        let mut sum = 0.0f64;
        for s in 0..nseries {
            sum += m.series(s).iter().map(|&v| v as f64).sum::<f64>();
            most = most.max(resident_kib(m.base() as usize));
        }
        assert_eq!(sum, n as f64 * (0..nseries).sum::<usize>() as f64);
        // The budget (1 MiB), plus what one series read adds before the
        // next drop: far below 16 MiB.
        assert!(most <= 3 * 1024, "{most} KiB resident of 16 MiB");
    }
}
