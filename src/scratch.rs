//! Where the scratch files of long or pooled traces' columns go (`TMPDIR`),
//! and the one warning when that is memory: on a tmpfs (the default
//! `/tmp` of many containers) a scratch file's pages are RAM that the
//! process's RSS does not show (a 3 x 24 h capture keeps ~2.9 GB there).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// `statfs` `f_type` of a tmpfs (linux/magic.h).
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Whether `dir` lies on a tmpfs (false when it cannot be told).
pub fn is_tmpfs(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a zeroed statfs is a valid out-parameter; `c` is a
    // NUL-terminated path that outlives the call.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    #[allow(clippy::unnecessary_cast)] // f_type's width differs by target
    let kind = st.f_type as i64;
    rc == 0 && kind == TMPFS_MAGIC
}

/// The warning's one line (escaped: `TMPDIR` is the user's string).
pub(crate) fn tmpfs_warning(dir: &Path, bytes: u64) -> String {
    format!(
        "gate: warning: TMPDIR '{}' is a tmpfs: the ~{} MB of trace columns gate keeps in a scratch file there take memory that gate's RSS does not show; set TMPDIR to a directory on a disk",
        crate::escape::terminal(&dir.display().to_string()),
        bytes.div_ceil(1_000_000)
    )
}

/// Called before a scratch file of `bytes` is written: the warning, once
/// per process, when `TMPDIR` is a tmpfs.
pub(crate) fn note_scratch(bytes: u64) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if WARNED.load(Ordering::Relaxed) {
        return;
    }
    let dir = std::env::temp_dir();
    if is_tmpfs(&dir) && !WARNED.swap(true, Ordering::Relaxed) {
        crate::gate_eprintln!("{}", tmpfs_warning(&dir, bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmpfs_is_told_from_a_disk() {
        // /proc/self/mountinfo says what each mount is: its answer for
        // /dev/shm (a tmpfs on most Linux systems) must be ours.
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let shm = mounts.lines().find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let dash = f.iter().position(|x| *x == "-")?;
            (f[4] == "/dev/shm").then(|| f[dash + 1] == "tmpfs")
        });
        if let Some(is) = shm {
            assert_eq!(is_tmpfs(Path::new("/dev/shm")), is);
        }
        assert!(!is_tmpfs(Path::new("/no/such/dir")));
    }

    #[test]
    fn the_warning_is_one_escaped_line_naming_the_size() {
        let w = tmpfs_warning(Path::new("/tmp/a\x1b[31m\nb"), 954_000_001);
        assert!(!w.contains('\n') && !w.contains('\x1b'), "{w:?}");
        assert!(w.contains("~955 MB") && w.contains("tmpfs"), "{w}");
    }
}
