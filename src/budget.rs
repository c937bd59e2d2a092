//! One memory budget shared by every thread of the process: the columns
//! of the traces being loaded and the working copies of the statistics'
//! extra workers reserve their bytes here first, and a reservation that
//! does not fit waits until others free their room. More threads then run
//! sooner, never hold more at once: peak memory follows what is kept, not
//! `GATE_THREADS` (a 4 x 4 h capture peaked at 212 / 368 / 668 / 697 MB with
//! 1 / 2 / 4 / 8 threads when each load took its own room).
//!
//! No wait can deadlock: a request larger than the budget is cut to the
//! budget, one that finds the budget empty is always granted, a thread
//! waits only while it holds nothing of its own (the loads), and the
//! workers started inside a reservation ask without waiting
//! (`try_reserve`: fewer workers, never a stall).

use std::sync::{Condvar, Mutex};

/// Bytes the reservations may hold at once (128 MiB): four 1-hour
/// 8-GPU traces' columns at 100 ms, or the working copies of a 24-hour
/// trace's statistics on five threads. The rest of a process's peak (the
/// program, one statistic's working copy per load, the parse buffers, a
/// spilled trace's resident pages) comes on top: under 300 MB in all
/// (BENCHMARKS.md, "One memory budget for all threads").
pub const BUDGET_BYTES: usize = 128 << 20;

static USED: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// Room held in the budget until dropped.
#[derive(Debug)]
pub(crate) struct Grant {
    bytes: usize,
}

impl Grant {
    /// Bytes held.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
        *used -= self.bytes;
        drop(used);
        FREED.notify_all();
    }
}

/// Whether `bytes` more fit beside `used` (an empty budget takes anything).
fn fits(used: usize, bytes: usize) -> bool {
    used == 0 || used + bytes <= BUDGET_BYTES
}

/// Hold `bytes` (at most the whole budget), waiting until they fit. Only
/// for a thread that holds no other grant.
pub(crate) fn reserve(bytes: usize) -> Grant {
    let bytes = bytes.min(BUDGET_BYTES);
    let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
    while !fits(*used, bytes) {
        used = FREED.wait(used).unwrap_or_else(|e| e.into_inner());
    }
    *used += bytes;
    Grant { bytes }
}

/// Hold `bytes` now if they fit beside what is held, else None.
pub(crate) fn try_reserve(bytes: usize) -> Option<Grant> {
    let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
    if bytes > BUDGET_BYTES || *used + bytes > BUDGET_BYTES {
        return None;
    }
    *used += bytes;
    Some(Grant { bytes })
}

/// How many grants of `bytes` fit in the budget at once (at least one).
pub(crate) fn fitting(bytes: usize) -> usize {
    (BUDGET_BYTES / bytes.max(1)).max(1)
}

/// Hand the memory freed by a finished load back to the system: glibc
/// keeps what a thread freed in that thread's arena, so the peak would
/// grow with the threads that ever loaded (`malloc_trim`; elsewhere a
/// no-op).
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's
    // arenas to the kernel; it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Bytes held by every grant now.
pub fn held() -> usize {
    *USED.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn reservations_wait_for_room_and_never_pass_the_budget() {
        // Threads of this test process share the budget with other tests:
        // what is checked is this test's own grants, which never pass it.
        let mine = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let quarter = BUDGET_BYTES / 4;
        std::thread::scope(|s| {
            for i in 0..16 {
                let (mine, most) = (&mine, &most);
                s.spawn(move || {
                    // Sizes of one eighth to a half of the budget.
                    let want = quarter / 2 * (1 + i % 4);
                    let g = reserve(want);
                    assert_eq!(g.bytes(), want);
                    let now = mine.fetch_add(want, Ordering::SeqCst) + want;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    mine.fetch_sub(want, Ordering::SeqCst);
                });
            }
        });
        let most = most.load(Ordering::SeqCst);
        assert!(most <= BUDGET_BYTES, "{most} bytes held at once");
        assert!(most > quarter, "the threads never overlapped: {most}");
    }

    #[test]
    fn an_oversized_request_is_cut_to_the_budget_and_try_never_waits() {
        let g = reserve(usize::MAX);
        assert_eq!(g.bytes(), BUDGET_BYTES);
        assert!(try_reserve(1).is_none());
        assert!(try_reserve(BUDGET_BYTES + 1).is_none());
        drop(g);
        let g = try_reserve(1 << 20).expect("room once the grant is dropped");
        assert_eq!(g.bytes(), 1 << 20);
    }
}
