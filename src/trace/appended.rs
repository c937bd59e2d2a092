//! An unnamed scratch file written by appending whole records and read
//! through a shared mapping: where a long trace's output lines
//! (`lines`) and times (`times`) go, so that what stays in memory does
//! not grow with the trace's length (issue 44.2). Records are gathered
//! `PENDING_BYTES` at a time and written with `pwrite`; the mapping of
//! what is written is made at the first read after a write, and its
//! pages are dropped from the process every `RESIDENT_BYTES` read (as
//! `columns` does: the page cache or the disk keeps them). A write that
//! fails keeps its records in memory, whole: the same records either way.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Records gathered before one write.
const PENDING_BYTES: usize = 64 << 10;
/// Bytes read between two drops of the mapping's pages.
const RESIDENT_BYTES: usize = 1 << 20;

/// Bytes appended to a scratch file, in order.
pub(super) struct Appended {
    file: File,
    /// Bytes written to `file`.
    written: usize,
    /// Whole records not written yet.
    pending: Vec<u8>,
    /// `file[..written]`, mapped at the first read after a write.
    map: OnceLock<Written>,
    /// Bytes read through `map` since its pages were last dropped.
    touched: AtomicUsize,
}

/// The bytes written, as read back.
enum Written {
    Map(memmap2::Mmap),
    /// Nothing written, or a file that could not be mapped (read whole).
    Heap(Vec<u8>),
}

impl Appended {
    /// A new scratch file in `TMPDIR` (None when none can be made).
    pub(super) fn new() -> Option<Appended> {
        crate::scratch::note_scratch(PENDING_BYTES as u64);
        Some(Appended {
            file: tempfile::tempfile().ok()?,
            written: 0,
            pending: Vec::new(),
            map: OnceLock::new(),
            touched: AtomicUsize::new(0),
        })
    }

    /// Append a record's bytes (the parts of one record in turn: a write
    /// happens only between records, at `end_record`).
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// The record pushed is whole: write the pending ones once enough.
    pub(super) fn end_record(&mut self) {
        if self.pending.len() < PENDING_BYTES {
            return;
        }
        if (self.file)
            .write_all_at(&self.pending, self.written as u64)
            .is_ok()
        {
            self.written += self.pending.len();
            self.pending.clear();
            self.map = OnceLock::new();
        }
    }

    /// Bytes appended.
    pub(super) fn len(&self) -> usize {
        self.written + self.pending.len()
    }

    /// Every byte appended: the written part and the pending part (each
    /// ends at a record's end).
    pub(super) fn parts(&self) -> [&[u8]; 2] {
        [self.written(), &self.pending[..]]
    }

    /// Bytes `at..at + N`, which lie in one part (records do not straddle
    /// the two, and callers read within a record).
    pub(super) fn read<const N: usize>(&self, at: usize) -> [u8; N] {
        self.note(N);
        let (part, at) = if at < self.written {
            (self.written(), at)
        } else {
            (&self.pending[..], at - self.written)
        };
        part[at..at + N].try_into().expect("N bytes")
    }

    fn written(&self) -> &[u8] {
        let map = self.map.get_or_init(|| {
            if self.written == 0 {
                return Written::Heap(Vec::new());
            }
            // SAFETY: a shared read-only mapping of a file that has no
            // name; only `&mut self` writes it, past `written`, and a
            // write makes a new mapping.
            let map = unsafe {
                memmap2::MmapOptions::new()
                    .len(self.written)
                    .map(&self.file)
            };
            map.map(Written::Map).unwrap_or_else(|_| {
                let mut bytes = vec![0; self.written];
                (self.file)
                    .read_exact_at(&mut bytes, 0)
                    .expect("a scratch file reads back");
                Written::Heap(bytes)
            })
        });
        match map {
            Written::Map(m) => m,
            Written::Heap(v) => v,
        }
    }

    /// Count `bytes` as read; past `RESIDENT_BYTES`, drop the mapping's
    /// pages from the process (the bytes about to be read count after it).
    pub(super) fn note(&self, bytes: usize) {
        let total = self.touched.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if total < RESIDENT_BYTES {
            return;
        }
        self.touched.store(bytes, Ordering::Relaxed);
        if let Some(Written::Map(m)) = self.map.get() {
            // SAFETY: for a shared file mapping MADV_DONTNEED only unmaps
            // pages; their contents stay in the file and a later access
            // maps them again. Slices handed out stay valid.
            unsafe {
                let _ = m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed);
            }
        }
    }
}
