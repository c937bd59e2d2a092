//! A file of `/proc` or `/sys/fs/cgroup` kept open between samples: the
//! host sampler (`host`), the tree's cgroup (`cgroup`) and an attached
//! target's liveness check (`target`) read it again at every tick.

use std::fs;

/// A `/proc` file kept open between samples: read again from offset 0
/// (`pread`) it is one system call, where `fs::read_to_string` makes five
/// (open, statx, read, read, close). The handle belongs to the process it
/// was opened for: once that process is gone the read fails (`ESRCH`), even
/// if its PID has been reused, and the caller opens the new one.
pub struct ProcFile(fs::File);

impl ProcFile {
    pub fn open(path: &str) -> Option<ProcFile> {
        fs::File::open(path).ok().map(ProcFile)
    }

    /// The file's start as text in a fixed buffer (cut at its length):
    /// for short files read at every tick, without allocating.
    pub fn read_into<'b>(&self, buf: &'b mut [u8]) -> Option<&'b str> {
        use std::os::unix::fs::FileExt;
        let n = self.0.read_at(buf, 0).ok()?;
        std::str::from_utf8(&buf[..n]).ok()
    }

    /// The whole file as text in `buf` (grown until the file fits).
    pub fn read<'b>(&self, buf: &'b mut Vec<u8>) -> Option<&'b str> {
        use std::os::unix::fs::FileExt;
        if buf.len() < 4096 {
            buf.resize(4096, 0);
        }
        loop {
            let n = self.0.read_at(buf, 0).ok()?;
            if n < buf.len() {
                return std::str::from_utf8(&buf[..n]).ok();
            }
            // Filled the buffer: the file may be longer; read it again whole.
            let more = buf.len() * 2;
            buf.resize(more, 0);
        }
    }
}
