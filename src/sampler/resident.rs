//! gate's own resident set while it samples. Start-up (flag parsing, the
//! configuration, the plan) runs code that the sampling loop never runs
//! again, and the kernel maps up to 64 KiB of the binary around each page
//! it touches: after start-up about 8 MiB of gate's 16 MB binary is
//! resident, while the loop needs about 3 MiB of it (measured with
//! `record --no-gpu` on the development machine, see BENCHMARKS.md). A
//! recording may last hours, so before the GPU source opens the recorder
//! drops its mappings of the binary's read-only pages; the pages it runs
//! again come back from the page cache (clean file pages: nothing is lost,
//! nothing is read from disk while they are cached).

/// Unmap the resident pages of gate's own executable that hold no private
/// data (code and read-only data; the relocated pages the loader wrote,
/// which are private copies, are kept). Returns the KiB dropped; 0 where
/// `/proc` cannot say which pages those are (then nothing is dropped).
pub fn drop_startup_pages() -> u64 {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let Some(exe) = own_executable() else {
        return 0;
    };
    let mut dropped_kib = 0;
    for m in clean_mappings_of(&smaps, &exe) {
        // SAFETY: the range is one whole mapping of our own executable that
        // is not writable and holds no anonymous (written) page, so its
        // contents are the file's: MADV_DONTNEED only removes the page table
        // entries and the next access maps the same bytes again.
        let r = unsafe { libc::madvise(m.start as *mut libc::c_void, m.len, libc::MADV_DONTNEED) };
        if r == 0 {
            dropped_kib += m.rss_kib;
        }
    }
    dropped_kib
}

/// The path of `/proc/self/exe` as the kernel writes it in `smaps` (both
/// come from the same mapped file; its device number does not serve: on
/// overlay file systems `stat` and `smaps` give different ones).
fn own_executable() -> Option<String> {
    let path = std::fs::read_link("/proc/self/exe").ok()?;
    path.to_str().map(str::to_string)
}

/// One mapping that may be dropped.
#[derive(Debug, PartialEq)]
struct Mapping {
    start: usize,
    len: usize,
    rss_kib: u64,
}

/// The mappings of the file at path `exe` in `smaps` text that are not
/// writable and have no anonymous page.
fn clean_mappings_of(smaps: &str, exe: &str) -> Vec<Mapping> {
    let mut found = Vec::new();
    let mut current: Option<(Mapping, bool)> = None; // (mapping, still clean)
    let finish = |c: Option<(Mapping, bool)>, found: &mut Vec<Mapping>| {
        if let Some((m, true)) = c {
            found.push(m);
        }
    };
    for line in smaps.lines() {
        if let Some(head) = mapping_head(line, exe) {
            finish(current.take(), &mut found);
            current = head.filter(|h| !h.writable).map(|h| {
                (
                    Mapping {
                        start: h.start,
                        len: h.end - h.start,
                        rss_kib: 0,
                    },
                    true,
                )
            });
        } else if let Some((m, clean)) = current.as_mut() {
            if let Some(kib) = field_kib(line, "Rss:") {
                m.rss_kib = kib;
            } else if field_kib(line, "Anonymous:").is_some_and(|kib| kib > 0) {
                *clean = false;
            }
        }
    }
    finish(current.take(), &mut found);
    found
}

struct Head {
    start: usize,
    end: usize,
    writable: bool,
}

/// A mapping's first line (`start-end perms offset device inode path`):
/// `Some(None)` for a mapping of another file (or none), `None` for a
/// field line.
#[allow(clippy::option_option)]
fn mapping_head(line: &str, exe: &str) -> Option<Option<Head>> {
    let mut words = line.split_ascii_whitespace();
    let range = words.next()?;
    let (start, end) = range.split_once('-')?;
    let (Ok(start), Ok(end)) = (
        usize::from_str_radix(start, 16),
        usize::from_str_radix(end, 16),
    ) else {
        return None;
    };
    let perms = words.next()?;
    // The path is the rest of the line, after padding.
    let ours = line
        .strip_suffix(exe)
        .is_some_and(|before| before.ends_with(' '));
    Some(ours.then_some(Head {
        start,
        end,
        writable: perms.contains('w'),
    }))
}

fn field_kib(line: &str, name: &str) -> Option<u64> {
    line.strip_prefix(name)?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d000000000-55d000100000 r--p 00000000 fe:01 42 /opt/gate
Rss:                 512 kB
Anonymous:             0 kB
55d000100000-55d000900000 r-xp 00100000 fe:01 42 /opt/gate
Rss:                6104 kB
Anonymous:             0 kB
55d000900000-55d000980000 r--p 00900000 fe:01 42 /opt/gate
Rss:                 476 kB
Anonymous:           476 kB
55d000980000-55d000990000 rw-p 00980000 fe:01 42 /opt/gate
Rss:                  20 kB
Anonymous:            20 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:01 77 /usr/lib/libc.so.6
Rss:                1092 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r-xp 00000000 fe:01 78 /usr/opt/gate
Rss:                1092 kB
Anonymous:             0 kB
";

    #[test]
    fn only_the_executables_unwritten_pages_are_chosen() {
        let found = clean_mappings_of(SMAPS, "/opt/gate");
        assert_eq!(
            found,
            vec![
                Mapping {
                    start: 0x55d000000000,
                    len: 0x100000,
                    rss_kib: 512
                },
                Mapping {
                    start: 0x55d000100000,
                    len: 0x800000,
                    rss_kib: 6104
                },
            ],
            "the relocated read-only pages, the writable data and other files are kept"
        );
    }

    #[test]
    fn dropping_keeps_the_program_running_and_lowers_its_file_pages() {
        // The test binary is an executable like gate: its code dropped, it
        // keeps running (the pages come back) and computes the same.
        let before: u64 = clean_mappings_of(
            &std::fs::read_to_string("/proc/self/smaps").unwrap(),
            &own_executable().unwrap(),
        )
        .iter()
        .map(|m| m.rss_kib)
        .sum();
        assert!(before > 0, "the test binary has resident code");
        let dropped = drop_startup_pages();
        assert!(dropped > 0, "something was dropped");
        let sum: u64 = (1..=1000u64).sum();
        assert_eq!(sum, 500_500);
        assert_eq!(format!("{:?}", vec![1, 2]), "[1, 2]");
    }
}
