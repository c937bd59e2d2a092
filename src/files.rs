//! Opening files safely, for every command: inputs (traces, baselines,
//! gate.toml, metrics files) and outputs (traces, reports, baselines, lock
//! files).
//!
//! Inputs are read only from regular files and only up to a size limit
//! (`crate::limits`): a FIFO used to block gate for ever, `/dev/zero` to
//! eat 10 GB. The open itself does not block (`O_NONBLOCK`), and the type is
//! checked on the opened descriptor, so swapping the path for a FIFO between
//! a check and the open changes nothing.
//!
//! Outputs never replace what is not a regular file (a device node, a FIFO,
//! a directory), never write through a symbolic link planted at a temporary
//! name (temporaries are created with `O_EXCL | O_NOFOLLOW`), never replace
//! one of the command's own inputs (`check --replay t.jsonl --json t.jsonl`),
//! and appear whole or not at all (temporary file, then rename).

use crate::limits::bytes_text;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a non-regular file is, in words ("a FIFO", "a directory").
fn kind_of(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

fn not_regular(m: &Metadata) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("is {}, not a regular file", kind_of(m)),
    )
}

fn too_large(len: u64, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "is {}, over the {} limit (docs/limits.md)",
            bytes_text(len),
            bytes_text(limit)
        ),
    )
}

/// Open `path` for reading: a regular file of at most `limit` bytes.
/// The error (not-found kept as `NotFound`) is for the caller to put in
/// context: "cannot read trace 'x': is a FIFO, not a regular file".
pub(crate) fn open_input(path: &Path, limit: u64) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    if meta.len() > limit {
        return Err(too_large(meta.len(), limit));
    }
    Ok(file)
}

/// `open_input`, refusing as well a file of the kernel's pseudo file
/// systems (/proc, /sys): they stat as regular files of size 0 but hold
/// the machine's state (`/proc/self/environ` is gate's environment, with
/// its CI secrets), so a file the benchmark controls (`--metrics-file`, a
/// link it planted) must never be read from there into a trace.
pub(crate) fn open_real_input(path: &Path, limit: u64) -> io::Result<File> {
    let file = open_input(path, limit)?;
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    use std::os::fd::AsRawFd;
    // SAFETY: fstatfs writes into the zeroed struct we own.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) } == 0 {
        const PROC_SUPER_MAGIC: i64 = 0x9fa0;
        const SYSFS_MAGIC: i64 = 0x6265_6572;
        #[allow(clippy::unnecessary_cast)]
        let kind = fs.f_type as i64;
        if kind == PROC_SUPER_MAGIC || kind == SYSFS_MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a file of the kernel's /proc or /sys (through a link?), not a file the benchmark wrote",
            ));
        }
    }
    Ok(file)
}

/// A reader over an input that fails, rather than stopping quietly, when
/// the file grew past `limit` after it was opened.
pub(crate) struct Capped<R> {
    inner: R,
    left: u64,
    limit: u64,
    /// The error's text past the limit, when the caller has a better one.
    past_limit: Option<String>,
}

impl<R: Read> Capped<R> {
    pub fn new(inner: R, limit: u64) -> Capped<R> {
        Capped {
            inner,
            left: limit,
            limit,
            past_limit: None,
        }
    }

    /// Past the limit, fail with `message` (kind `FileTooLarge`).
    pub(crate) fn with_message(mut self, message: String) -> Capped<R> {
        self.past_limit = Some(message);
        self
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // One byte more tells "exactly at the limit" from "past it".
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(match &self.past_limit {
                    Some(m) => io::Error::new(io::ErrorKind::FileTooLarge, m.clone()),
                    None => too_large(self.limit + 1, self.limit),
                }),
            };
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// The bytes of an input file (see `open_input`).
pub(crate) fn read_input(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_input(path, limit)?;
    let mut out = Vec::new();
    Capped::new(file, limit).read_to_end(&mut out)?;
    Ok(out)
}

/// The text of an input file (see `open_input`); invalid UTF-8 is an error
/// naming the line.
pub(crate) fn read_input_string(path: &Path, limit: u64) -> io::Result<String> {
    utf8_text(read_input(path, limit)?)
}

/// `bytes` as text, or an error naming the line of the first bad byte.
pub(crate) fn utf8_text(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("line {line}: not UTF-8 text (invalid byte at offset {at})"),
        )
    })
}

// ------------------------------------------------------------------ outputs

/// Whether an I/O error is the machine's fault (disk full, quota, I/O
/// error), not the user's: retrying on another runner may help (exit 3).
pub(crate) fn is_infra_io(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EIO)
    ) || e.kind() == io::ErrorKind::StorageFull
}

/// `message` as the error for writing an output that failed with `e`:
/// infrastructure (exit 3) for a full disk, usage (exit 2) otherwise.
pub(crate) fn output_error(message: String, e: &io::Error) -> crate::error::GateError {
    if is_infra_io(e) {
        crate::error::GateError::infra(message)
    } else {
        crate::error::GateError::usage(message)
    }
}

/// Identity of an existing file (device, inode), following symlinks.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// `path` made absolute with every link resolved, also when the file does
/// not exist yet (its folder is resolved): `./h.sqlite`, `sub/../h.sqlite`
/// and a link to the folder all give one answer.
fn canonical(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::canonicalize(parent).ok().map(|d| d.join(name))
}

/// Whether `a` and `b` name the same file: the same device and inode when
/// both exist (hard links), else the same canonical path (a file that does
/// not exist yet, under any spelling).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (identity(a), identity(b)) {
        (Some(x), Some(y)) => x == y,
        _ => canonical(a).is_some_and(|ca| canonical(b) == Some(ca)),
    }
}

/// The files one command reads (traces, the baseline, gate.toml, the
/// history database, ...), each with what it is, collected in one place
/// per command: none of the command's outputs may replace one.
#[derive(Debug, Clone, Default)]
pub struct Inputs(Vec<(String, PathBuf)>);

impl Inputs {
    /// Note `path` as an input; `what` names it in messages ("the baseline").
    pub fn add(&mut self, what: impl Into<String>, path: impl Into<PathBuf>) {
        self.0.push((what.into(), path.into()));
    }

    /// Several inputs of one kind (the files of the history database).
    pub(crate) fn add_all(&mut self, what: &str, paths: impl IntoIterator<Item = PathBuf>) {
        for p in paths {
            self.add(what, p);
        }
    }

    /// Another command's inputs (a suite's workloads).
    pub fn extend(&mut self, other: Inputs) {
        self.0.extend(other.0);
    }

    /// The input `path` is, if any: its name and path.
    pub fn find(&self, path: &Path) -> Option<(&str, &Path)> {
        self.0
            .iter()
            .find(|(_, input)| same_file(path, input))
            .map(|(what, input)| (what.as_str(), input.as_path()))
    }

    /// `check_output` against these inputs.
    pub(crate) fn check_output(&self, path: &Path, what: &str) -> io::Result<()> {
        check_output_named(path, what, self)
    }

    /// `write_output` against these inputs.
    pub fn write_output(&self, path: &Path, what: &str, bytes: &[u8]) -> io::Result<()> {
        write_output_named(path, what, bytes, self)
    }
}

/// May `path` be written as the output `what` ("--json", "trace")?
/// Refused: an existing path that is not a regular file (a symlink to one
/// is fine: it is replaced, not followed), and a path that is one of
/// `inputs` (the same file under any name).
pub(crate) fn check_output(path: &Path, what: &str, inputs: &[&Path]) -> io::Result<()> {
    check_output_named(path, what, &unnamed(inputs))
}

fn unnamed(inputs: &[&Path]) -> Inputs {
    let mut named = Inputs::default();
    for p in inputs {
        named.add("the input", *p);
    }
    named
}

fn check_output_named(path: &Path, what: &str, inputs: &Inputs) -> io::Result<()> {
    let refuse = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to write {what} '{}': {why}", path.display()),
        )
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            if let Ok(target) = std::fs::metadata(path) {
                if !target.is_file() {
                    return Err(refuse(format!(
                        "it is a symbolic link to {}; choose another path",
                        kind_of(&target)
                    )));
                }
            }
        }
        Ok(m) if !m.is_file() => {
            return Err(refuse(format!(
                "it is {}, which gate only ever replaces with a regular file; choose another path",
                kind_of(&m)
            )))
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(refuse(e.to_string())),
    }
    if let Some((input_what, input)) = inputs.find(path) {
        return Err(refuse(format!(
            "it is the input '{}' ({input_what}); write the output somewhere else",
            input.display()
        )));
    }
    Ok(())
}

/// Create `path` for writing, exclusively and without following a symbolic
/// link at it (`O_CREAT | O_EXCL | O_NOFOLLOW`), mode 0644 before umask.
/// For temporaries and `.partial` traces: if anything exists there already,
/// this fails (`AlreadyExists`) rather than writing through it.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
}

/// A lock file: created if missing, opened if present, but never through a
/// symbolic link, never a FIFO or device (the open does not block).
pub(crate) fn open_lock_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
        .map_err(|e| no_symlink_message(e, path))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    Ok(file)
}

/// Append to `path` (a CI-provided file such as `$GITHUB_OUTPUT`), creating
/// it if missing; a FIFO or device there is refused instead of blocking.
pub(crate) fn open_append(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    Ok(file)
}

/// Open the output `what` (`watch --alerts`) for appending, a line at a
/// time, creating it if missing. The streaming twin of `write_output`
/// (whose whole-file rename cannot append): refused are a path that is not
/// a regular file (a FIFO without a reader would block for ever: the open
/// does not block, `O_NONBLOCK`, and the type is checked on the opened
/// descriptor), a symbolic link (`O_NOFOLLOW`: never written through), and
/// one of the command's `inputs` under any name (checked on the
/// descriptor too, so a rename in between changes nothing).
pub(crate) fn open_append_output(path: &Path, what: &str, inputs: &[&Path]) -> io::Result<File> {
    let refuse = |why: String| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to write {what} '{}': {why}", path.display()),
        )
    };
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.file_type().is_symlink() {
            return Err(refuse(
                "it is a symbolic link, which gate does not append through; give the real path"
                    .into(),
            ));
        }
    }
    check_output(path, what, inputs)?;
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse(
                "it is a symbolic link, which gate does not append through; give the real path"
                    .into(),
            ),
            Some(libc::ENXIO) => {
                refuse("it is a FIFO with no reader; choose a regular file".into())
            }
            _ => e,
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse(format!(
            "it is {}, not a regular file; choose another path",
            kind_of(&meta)
        )));
    }
    for input in inputs {
        if identity(input) == Some((meta.dev(), meta.ino())) {
            return Err(refuse(format!(
                "it is the input '{}'; write the output somewhere else",
                input.display()
            )));
        }
    }
    Ok(file)
}

/// ELOOP from `O_NOFOLLOW` says "too many levels of symbolic links"; say
/// what it means here.
fn no_symlink_message(e: io::Error, path: &Path) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "'{}' is a symbolic link; gate does not write through links there (remove it)",
                path.display()
            ),
        )
    } else {
        e
    }
}

/// A temporary name next to `path`: `.NAME.gate-tmp-PID-N`, in the same
/// directory so the final rename stays on one file system.
fn temp_path_for(path: &Path, attempt: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    path.with_file_name(format!(
        ".{name}.gate-tmp-{}-{nanos:x}{attempt}",
        std::process::id()
    ))
}

/// Write `bytes` to `path` whole or not at all: checked with
/// `check_output`, written to an exclusive temporary in the same
/// directory, flushed, then renamed over `path`.
pub fn write_output(path: &Path, what: &str, bytes: &[u8], inputs: &[&Path]) -> io::Result<()> {
    write_output_named(path, what, bytes, &unnamed(inputs))
}

fn write_output_named(path: &Path, what: &str, bytes: &[u8], inputs: &Inputs) -> io::Result<()> {
    check_output_named(path, what, inputs)?;
    let mut attempt = 0;
    let (tmp, mut file) = loop {
        let tmp = temp_path_for(path, attempt);
        match create_new(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_data())
        .and_then(|()| {
            // Checked again right before the rename: a device node put at
            // `path` meanwhile must not be replaced either.
            check_output_named(path, what, inputs)?;
            std::fs::rename(&tmp, path)
        });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The bytes of `values` as this process holds them, for scratch files
/// written and read by the same process (native byte order).
pub(crate) fn f32_bytes(values: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding; u8 has alignment 1; the length covers
    // exactly the slice's memory, borrowed for the slice's lifetime.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn inputs_must_be_regular_and_small_enough() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let err = read_input(&fifo, 100).unwrap_err();
        assert!(err.to_string().contains("is a FIFO"), "{err}");
        let err = read_input(dir.path(), 100).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        let err = read_input(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; 2048]).unwrap();
        let err = read_input(&big, 1024).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(
            err.to_string().contains("2 KiB, over the 1 KiB limit"),
            "{err}"
        );
        assert_eq!(read_input(&big, 2048).unwrap().len(), 2048);
        let missing = read_input(&dir.path().join("nope"), 10).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_file_growing_past_the_limit_is_an_error_not_a_silent_cut() {
        let mut r = Capped::new(io::Cursor::new(vec![1u8; 10]), 4);
        let mut out = Vec::new();
        assert!(r.read_to_end(&mut out).is_err());
        let mut r = Capped::new(io::Cursor::new(vec![1u8; 4]), 4);
        let mut out = Vec::new();
        assert_eq!(r.read_to_end(&mut out).unwrap(), 4);
    }

    #[test]
    fn utf8_errors_name_the_line() {
        let err = utf8_text(b"a\nb\n\xff\n".to_vec()).unwrap_err();
        assert!(err.to_string().starts_with("line 3: not UTF-8"), "{err}");
    }

    #[test]
    fn outputs_refuse_non_regular_files_and_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let err = write_output(&fifo, "--json", b"x", &[]).unwrap_err();
        assert!(err.to_string().contains("is a FIFO"), "{err}");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        let err = write_output(dir.path(), "--json", b"x", &[]).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");

        let input = dir.path().join("t.jsonl");
        std::fs::write(&input, "keep").unwrap();
        let alias = dir.path().join("alias.jsonl");
        symlink(&input, &alias).unwrap();
        for out in [&input, &alias] {
            let err = write_output(out, "--json", b"x", &[&input]).unwrap_err();
            assert!(err.to_string().contains("is the input"), "{err}");
        }
        // Not existing yet, spelled another way: still the input.
        let fresh = dir.path().join("h.sqlite");
        let other = dir.path().join("sub/../h.sqlite");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let mut inputs = Inputs::default();
        inputs.add("the history database", &fresh);
        for out in [&fresh, &other] {
            let err = inputs.write_output(out, "--json", b"x").unwrap_err();
            assert!(err.to_string().contains("(the history database)"), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "keep");

        // A symlink at the output is replaced, its target left alone.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let out = dir.path().join("out.json");
        symlink(&victim, &out).unwrap();
        write_output(&out, "--json", b"new", &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        // No temporaries left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains("gate-tmp")), "{names:?}");
    }

    #[test]
    fn appended_outputs_refuse_fifos_links_and_inputs_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        // No reader: returns at once with a refusal, never blocks.
        let err = open_append_output(&fifo, "--alerts", &[]).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        let input = dir.path().join("t.jsonl");
        std::fs::write(&input, "keep\n").unwrap();
        let alias = dir.path().join("hard.jsonl");
        std::fs::hard_link(&input, &alias).unwrap();
        for out in [&input, &alias] {
            let err = open_append_output(out, "--alerts", &[&input]).unwrap_err();
            assert!(err.to_string().contains("is the input"), "{err}");
        }
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep\n").unwrap();
        let link = dir.path().join("alerts.jsonl");
        symlink(&victim, &link).unwrap();
        let err = open_append_output(&link, "--alerts", &[]).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "keep\n");
        // A regular file is appended to, not replaced.
        let ok = dir.path().join("ok.jsonl");
        std::fs::write(&ok, "a\n").unwrap();
        let mut f = open_append_output(&ok, "--alerts", &[&input]).unwrap();
        f.write_all(b"b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&ok).unwrap(), "a\nb\n");
    }

    #[test]
    fn exclusive_create_and_lock_files_never_follow_links() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let planted = dir.path().join("o.jsonl.partial");
        symlink(&victim, &planted).unwrap();
        assert_eq!(
            create_new(&planted).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        let dangling = dir.path().join("x.lock");
        symlink(dir.path().join("created-by-follow"), &dangling).unwrap();
        let err = open_lock_file(&dangling).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(!dir.path().join("created-by-follow").exists());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }
}
